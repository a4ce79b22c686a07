# Error kinds (issue 9, item 6): one list in C (core.KINDS) used by collection, errmap and docs;
# 413 and the edge's three answers (paused, gone, closed port) as their own kinds; bodies over
# their limit fail at once; streamed files cost bounded engine memory.
add_test(NAME kinds:list
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/runner/run_case.sh $<TARGET_FILE:abxlua>
          ${CMAKE_SOURCE_DIR}/tests/kinds/kinds.lua "^6 passed, 0 failed" 0
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(kinds:list PROPERTIES TIMEOUT 60)
# Real sandboxes of the local platform: paused -> SandboxPaused, killed -> SandboxGone, nothing on
# the port -> PortNotOpen.
add_test(NAME kinds:edge
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/runner/run_case.sh $<TARGET_FILE:abxlua>
          ${CMAKE_SOURCE_DIR}/tests/kinds/edge.lua "^3 passed, 0 failed" 0
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
