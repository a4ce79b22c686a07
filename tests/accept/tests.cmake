# `abxlua accept skill-tools` (issue 15 part 7). Its refusals: exit 4 naming the input, before any
# work (~1 s, no sandbox).
add_test(NAME accept_skill_tools:refusals
  COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/accept/test_skill_tools.py $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
# SIGINT and SIGTERM mid-way, before the npm step (~3 s): exit 2, the report says interrupted, no
# sandbox, process or mount left. RUN_SERIAL: it looks at the processes and mounts of the machine.
add_test(NAME accept_skill_tools:interrupt
  COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/accept/test_skill_interrupt.py $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(accept_skill_tools:refusals accept_skill_tools:interrupt PROPERTIES
  TIMEOUT 120 SKIP_RETURN_CODE 77)
set_tests_properties(accept_skill_tools:interrupt PROPERTIES RUN_SERIAL TRUE)
# A whole run (~40-60 s), then one interrupted in its npm install: they need the npm registry
# (two MCP server releases installed on the host), so the test is labelled slow and runs in
# `make test-slow`, not `make test`.
add_test(NAME accept_skill_tools:full
  COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/accept/test_skill_full.py $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(accept_skill_tools:full PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77
  LABELS slow)
