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
