# Isolation of the local platform, from inside sandboxes (issue 5, item 8).
add_test(NAME isolation COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/isolation/test_isolation.py $<TARGET_FILE:abxlua>)
set_tests_properties(isolation PROPERTIES TIMEOUT 300)
