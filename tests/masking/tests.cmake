# Secret masking in every sink, with secrets planted in the environment, .env, server answers and
# error messages (issue 3 item 6).
add_test(NAME masking COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/masking/test_masking.py $<TARGET_FILE:abxlua>)
set_tests_properties(masking PROPERTIES TIMEOUT 180)
