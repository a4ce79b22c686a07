# `abxlua accept desktop` (issue 15 part 8): a full local run (template base with --upload-script:
# the host's Xvfb, jwm, x11vnc and websockify), its report and its PNG decoded by the test, the
# refusals; SIGINT/SIGTERM mid-way leave no sandbox, process or mount. Each ~3-10 s.
add_test(NAME accept_desktop:local
  COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/accept_desktop/test_desktop.py $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
# the same full run on local-tls: the WebSocket over HTTPS through `serve --tls` (~10 s: TLS
# upgrades are slow in libmicrohttpd, docs/PLATFORM.md "Edge")
add_test(NAME accept_desktop:tls
  COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/accept_desktop/test_desktop.py $<TARGET_FILE:abxlua> local-tls
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
# RUN_SERIAL: it looks at the processes and mounts of the machine
add_test(NAME accept_desktop:interrupt
  COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/accept_desktop/test_interrupt.py $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
# TIMEOUT is only a hang guard: ~10 s quiet, but the TLS run's WebSocket costs libmicrohttpd CPU per
# byte, and beside the contention harness (issue 22) it passed 120 s and was killed mid-way.
set_tests_properties(accept_desktop:local accept_desktop:tls accept_desktop:interrupt PROPERTIES TIMEOUT 600
  SKIP_RETURN_CODE 77)
set_tests_properties(accept_desktop:interrupt PROPERTIES RUN_SERIAL TRUE)
