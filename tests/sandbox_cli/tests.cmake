# `abxlua sandbox` (issue 15 part 5): every subcommand against `abxlua sandbox serve`, usage
# errors, ABX_LOCAL_URL, cleanup of the CLI's sandboxes, and interrupts leaving nothing behind.
# RUN_SERIAL: it looks at the machine's processes and mounts. Needs root and bubblewrap.
add_test(NAME sandbox_cli COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/sandbox_cli/test_sandbox_cli.py
         $<TARGET_FILE:abxlua> WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(sandbox_cli PROPERTIES TIMEOUT 180 RUN_SERIAL TRUE)
# the pure parts (quoting, ID:PATH, KEY=VALUE, JSON, state file, process.run): no platform
add_test(NAME sandbox_cli_units
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/runner/run_case.sh $<TARGET_FILE:abxlua>
          ${CMAKE_SOURCE_DIR}/tests/sandbox_cli/units.lua
          "^6 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(sandbox_cli_units PROPERTIES TIMEOUT 60)
