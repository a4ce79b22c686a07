# valgrind memcheck of a scenario run: no memory errors, no definite leaks in the engine.
add_test(NAME memcheck COMMAND bash ${CMAKE_SOURCE_DIR}/tests/valgrind/memcheck.sh $<TARGET_FILE:abxlua>)
set_tests_properties(memcheck PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77 LABELS valgrind)
