# Error kinds (issue 9, item 6): one list in C (core.KINDS) used by collection, errmap and docs;
# 413 and the edge's three answers (paused, gone, closed port) as their own kinds; bodies over
# their limit fail at once; streamed files cost bounded engine memory.
add_test(NAME kinds:list
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/runner/run_case.sh $<TARGET_FILE:abxlua>
          ${CMAKE_SOURCE_DIR}/tests/kinds/kinds.lua "^8 passed, 0 failed" 0
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(kinds:list PROPERTIES TIMEOUT 60)
# Real sandboxes of the local platform: paused -> SandboxPaused, killed -> SandboxGone, nothing on
# the port -> PortNotOpen.
add_test(NAME kinds:edge
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/runner/run_case.sh $<TARGET_FILE:abxlua>
          ${CMAKE_SOURCE_DIR}/tests/kinds/edge.lua "^3 passed, 0 failed" 0
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(kinds:edge PROPERTIES TIMEOUT 180)
# Against tests/hostile's fake server: a 2 GiB Content-Length fails at once; 413 is PayloadTooLarge.
add_test(NAME kinds:bodies
  COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/kinds/test_bodies.py $<TARGET_FILE:abxlua>)
set_tests_properties(kinds:bodies PROPERTIES TIMEOUT 120)
# A 256 MiB file uploaded from and read into Lua files: engine peak RSS < 96 MiB.
add_test(NAME kinds:stream_rss
  COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/kinds/test_stream_rss.py $<TARGET_FILE:abxlua>)
set_tests_properties(kinds:stream_rss PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
# A command's 128 MiB output through on_stdout with keep_output = false: the engine's RSS grows
# < 64 MiB. Alone (its own process, RUN_SERIAL): the suite's copy of the test bounds the engine's
# accounting (handle:held_peak) instead, since RSS there measures every test beside it (issue 22).
add_test(NAME kinds:command_rss
  COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/kinds/test_command_rss.py $<TARGET_FILE:abxlua>)
set_tests_properties(kinds:command_rss PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
if(ABX_SANITIZE)
  # ASan's shadow memory and quarantine count in VmHWM; the bound stays well under the file size.
  set_tests_properties(kinds:stream_rss PROPERTIES ENVIRONMENT
                       "ASAN_OPTIONS=detect_leaks=1:quarantine_size_mb=16;ABX_STREAM_RSS_LIMIT_MB=160")
  set_tests_properties(kinds:bodies PROPERTIES ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1:quarantine_size_mb=16")
  set_tests_properties(kinds:command_rss PROPERTIES ENVIRONMENT
                       "ASAN_OPTIONS=detect_leaks=1:quarantine_size_mb=16;ABX_COMMAND_RSS_LIMIT_MB=128")
endif()
