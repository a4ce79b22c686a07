# The janitor (`abxlua cleanup`) against a running local platform.
add_test(NAME janitor COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/janitor/test_cleanup.py $<TARGET_FILE:abxlua>)
set_tests_properties(janitor PROPERTIES TIMEOUT 300)
