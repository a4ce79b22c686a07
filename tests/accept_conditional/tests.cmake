# `abxlua accept conditional` (issue 15 part 6): a full local run (report, every check passed, no
# id or credential) and the refusals; a remote run against a platform the test watches (no id it
# saw is in the report; a failing check names ids by kind only); SIGINT/SIGTERM mid-way leave no
# sandbox, process or mount. Each is a whole runner run on the local platform (~7-11 s).
add_test(NAME accept_conditional:local
  COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/accept_conditional/test_conditional.py $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
add_test(NAME accept_conditional:remote_ids
  COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/accept_conditional/test_remote_ids.py $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
# RUN_SERIAL: it looks at the processes and mounts of the machine
add_test(NAME accept_conditional:interrupt
  COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/accept_conditional/test_interrupt.py $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(accept_conditional:local accept_conditional:remote_ids
  accept_conditional:interrupt PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
set_tests_properties(accept_conditional:interrupt PROPERTIES RUN_SERIAL TRUE)
# `abxlua sandbox snapshot` by hand against a platform the test runs (ABX_LOCAL_URL), and
# `abxlua providers --json` (~1 s).
add_test(NAME accept_conditional:snapshot_cli
  COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/accept_conditional/test_snapshot_cli.py $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(accept_conditional:snapshot_cli PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
