# Load: the engine runs 500 tests with -j 64, every outcome accounted for (prints time and RSS).
add_test(NAME load_engine COMMAND bash ${CMAKE_SOURCE_DIR}/tests/load/engine_load.sh $<TARGET_FILE:abxlua>)
set_tests_properties(load_engine PROPERTIES TIMEOUT 300)
