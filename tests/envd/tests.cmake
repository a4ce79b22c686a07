# tests/envd: envd (`abxlua envd`) over HTTP inside bubblewrap; needs root, bwrap, python3.
add_test(NAME envd COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/envd/test_envd.py $<TARGET_FILE:abxlua>)
set_tests_properties(envd PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
# tests/envd/test_execd.py: the execd API envd serves with --execd-port (OpenSandbox flavour);
# envd run inside bubblewrap the same way; needs root, bwrap, python3.
add_test(NAME envd_execd COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/envd/test_execd.py $<TARGET_FILE:abxlua>)
set_tests_properties(envd_execd PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
