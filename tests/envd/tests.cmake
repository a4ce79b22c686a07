# tests/envd: envd (`abxlua envd`) over HTTP inside bubblewrap; needs root, bwrap, python3.
add_test(NAME envd COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/envd/test_envd.py $<TARGET_FILE:abxlua>)
set_tests_properties(envd PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
