# `cmake --install` and `cpack -G DEB` (issue 13 part 7). Included by CMakeLists.txt.
#
#   PREFIX/bin/abxlua                           the binary (lib/abx/*.lua and argparse inside)
#   PREFIX/bin/abxlua-envd                      envd and sudo alone: what local sandboxes run
#   PREFIX/share/abxlua/config/abxlua.yaml      the shipped config, as an example to copy
#   PREFIX/share/abxlua/config/known_issues.yaml  (abxlua reads config/abxlua.yaml found from the
#                                               cwd, never these: `cp -r PREFIX/share/abxlua/config .`)
#   PREFIX/share/abxlua/env.example             .env.example (the variables per provider)
#   PREFIX/share/abxlua/types/                  the LuaLS meta files, when types/ exists
#   PREFIX/share/doc/abxlua/                    README.md, THIRD-PARTY.md (embedded code, licences)
#   PREFIX/share/doc/abxlua/docs/               the docs/ pages README.md links to (docs/*.md, docs/**/*.md)
include(GNUInstallDirs)
install(TARGETS abxlua abxlua-envd RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
install(FILES "${CMAKE_SOURCE_DIR}/config/abxlua.yaml" "${CMAKE_SOURCE_DIR}/config/known_issues.yaml"
        DESTINATION "${CMAKE_INSTALL_DATADIR}/abxlua/config")
install(FILES "${CMAKE_SOURCE_DIR}/.env.example" DESTINATION "${CMAKE_INSTALL_DATADIR}/abxlua"
        RENAME env.example)
# types/ (the LuaLS meta files of issue 13 part 6) may not exist in this checkout: OPTIONAL makes
# its absence at install time no error, and its presence needs no re-configure.
install(DIRECTORY "${CMAKE_SOURCE_DIR}/types/" DESTINATION "${CMAKE_INSTALL_DATADIR}/abxlua/types"
        OPTIONAL)
install(FILES "${CMAKE_SOURCE_DIR}/README.md" "${CMAKE_SOURCE_DIR}/docs/THIRD-PARTY.md"
        DESTINATION "${CMAKE_INSTALL_DOCDIR}")
install(DIRECTORY "${CMAKE_SOURCE_DIR}/docs/" DESTINATION "${CMAKE_INSTALL_DOCDIR}/docs"
        FILES_MATCHING PATTERN "*.md")

# --- the .deb: `cpack -G DEB` in the build directory ----------------------------------------
# Depends: the shared libraries the binary links, computed by dpkg-shlibdeps (dpkg-dev) from the
# binary itself, plus the programs the local platform execs at run time: bwrap (platform/sandbox/sandbox.c,
# serve.c), ip and nft (platform/net/network.c find_exe). cp, chroot, ldd and dpkg (rootfs.c,
# image_debian.c) and bash (envd_client.c) are Essential in Debian and need no entry.
# Recommends: ca-certificates (HTTPS to the cloud providers: libcurl verifies against it), what
# E2B's base template offers in a sandbox, whose /usr is the host's
# (platform/template/rootfs.h: sudo, git, curl, python3, python-is-python3), and libnss-myhostname for the
# *.localhost names of `serve --tls`. Suggests: mmdebstrap (fromImage: debian templates,
# image_debian.h) and the code-interpreter-v1 server's Python packages (platform/code_interpreter).
# tests/install/deb.sh checks Depends against the binary and installs the package in a scratch root.
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "abxlua")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_CONTACT "abxlua maintainers <abxlua@localhost>" CACHE STRING
    "Maintainer: of the .deb")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "end-to-end test engine for E2B-compatible sandbox platforms")
set(CPACK_PACKAGE_DESCRIPTION
    "abxlua runs Lua scenarios against E2B-compatible sandbox platforms (E2B, Alibaba Cloud FC,\nACS, CubeSandbox, OpenSandbox) and ships an embedded local platform (abxlua serve) whose\nsandboxes are bubblewrap namespaces.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "devel")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "bubblewrap, iproute2, nftables")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS
    "ca-certificates, sudo, git, curl, python3, python-is-python3, libnss-myhostname")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS
    "mmdebstrap, python3-jupyter-client, python3-ipykernel, python3-matplotlib, xvfb, jwm, xterm, x11vnc, websockify, x11-utils, x11-xserver-utils")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
# the binary keeps its symbols (RelWithDebInfo): tracebacks of a crash in CI stay readable
set(CPACK_STRIP_FILES OFF)
include(CPack)
