# Load: the engine runs 500 tests with -j 64, every outcome accounted for (prints time and RSS).
add_test(NAME load_engine COMMAND bash ${CMAKE_SOURCE_DIR}/tests/load/engine_load.sh $<TARGET_FILE:abxlua>)
set_tests_properties(load_engine PROPERTIES TIMEOUT 300)
# Load: `abxlua serve` holds 200 live sandboxes and 2,000 concurrent commands, every output checked,
# nothing left afterwards (prints latencies, throughput, peak RSS/threads/fds). Exit 77 = skipped.
add_test(NAME load_platform COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/load/platform_load.py $<TARGET_FILE:abxlua>)
set_tests_properties(load_platform PROPERTIES TIMEOUT 1200 LABELS load SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
