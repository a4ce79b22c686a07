# The scenario suite against the embedded local platform (acceptance of the foundation issue).
# RUN_SERIAL: the "no sandbox process left" check must not see other tests' sandboxes.
add_test(NAME scenarios COMMAND bash ${CMAKE_SOURCE_DIR}/tests/scenarios/run_scenarios.sh
         $<TARGET_FILE:abxlua> 40 WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(scenarios PROPERTIES RUN_SERIAL TRUE TIMEOUT 900)
# The same suite once per local flavour (issue 12 part 5: each test passes or is skipped by
# capability with its reason), with a passed/skipped table per flavour (`make test-flavors`).
add_test(NAME scenarios_flavors COMMAND bash ${CMAKE_SOURCE_DIR}/tests/scenarios/run_flavors.sh
         $<TARGET_FILE:abxlua> 40 WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(scenarios_flavors PROPERTIES RUN_SERIAL TRUE TIMEOUT 1500)
if(ABX_SANITIZE)
  # As for tests/kinds: a small quarantine, so the freed chunks of 03_commands' 128 MiB
  # keep_output = false stream are not counted as held (ASan's default 256 MiB quarantine alone
  # exceeds that test's 64 MiB RSS bound).
  set_tests_properties(scenarios scenarios_flavors PROPERTIES ENVIRONMENT
                       "ASAN_OPTIONS=detect_leaks=1:quarantine_size_mb=16")
endif()
