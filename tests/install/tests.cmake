# Install and ship (issue 13 part 7). The fast checks run in `make test`; the ones that build a
# package root from Debian's mirror are labelled slow (`make test-slow`).
# The binary reads no Lua file at run time: argparse is embedded (CMakeLists.txt, THIRD-PARTY.md).
add_test(NAME install:argparse_embedded
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/install/argparse_embedded.sh $<TARGET_FILE:abxlua>)
set_tests_properties(install:argparse_embedded PROPERTIES TIMEOUT 60 LABELS install)
# cmake --install to a temporary prefix; the installed binary runs --version and a one-test
# scenario from an empty directory with the source and build trees hidden.
add_test(NAME install:prefix
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/install/prefix.sh ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
set_tests_properties(install:prefix PROPERTIES TIMEOUT 120 LABELS install)
# cpack -G DEB; Depends checked against the binary's libraries and the programs serve execs; the
# .deb installed by dpkg into a scratch root of only its dependencies, where --version and the
# smoke scenario run (about 15 s: cpack compresses the binary).
add_test(NAME install:deb
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/install/deb.sh ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
set_tests_properties(install:deb PROPERTIES TIMEOUT 180 LABELS install)
# The Dockerfile of the CI image, without a Docker engine: the lint (pinned base, no ADD of URLs,
# apt lists cleaned, root kept on purpose...) and its own self-test, in make test.
add_test(NAME install:dockerfile_lint
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/install/dockerfile.py lint ${CMAKE_SOURCE_DIR}/Dockerfile)
add_test(NAME install:dockerfile_lint-selftest
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/install/dockerfile.py self-test)
set_tests_properties(install:dockerfile_lint install:dockerfile_lint-selftest PROPERTIES TIMEOUT 60
                     LABELS install)
# The Dockerfile's steps run by tests/install/dockerfile.py in bwrap overlay roots, then the image
# checked as `docker run --privileged --tmpfs /tmp` starts it (--version, the default CMD, the smoke
# scenario from an empty /work). _debian: the base is a fresh mmdebstrap minbase root of Debian's
# mirror (every package really installed; about 70 s); _host: this host's root as the base (apt
# mostly checks the names; about 35 s, a full compile). Both slow: `make test-slow`.
add_test(NAME install:dockerfile_build_debian
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/install/dockerfile.py build ${CMAKE_SOURCE_DIR}/Dockerfile
                 ${CMAKE_SOURCE_DIR} --base mmdebstrap --smoke ${CMAKE_SOURCE_DIR}/tests/install/smoke.lua)
add_test(NAME install:dockerfile_build_host
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/install/dockerfile.py build ${CMAKE_SOURCE_DIR}/Dockerfile
                 ${CMAKE_SOURCE_DIR} --base host --smoke ${CMAKE_SOURCE_DIR}/tests/install/smoke.lua)
set_tests_properties(install:dockerfile_build_debian install:dockerfile_build_host PROPERTIES
                     TIMEOUT 900 LABELS "install;slow" RUN_SERIAL TRUE)
# docs/install.md's "Running in CI" jobs (GitHub Actions, GitLab CI) parsed and checked against the CLI, and
# each job's script run from an empty directory with the local provider (tests/install/ci_recipes.py).
add_test(NAME install:ci_recipes
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/install/ci_recipes.py $<TARGET_FILE:abxlua> ${CMAKE_SOURCE_DIR})
set_tests_properties(install:ci_recipes PROPERTIES TIMEOUT 120 LABELS install)
