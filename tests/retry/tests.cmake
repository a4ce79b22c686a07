# Retries and duplicate-free creates against a misbehaving fake control plane.
add_test(NAME retry COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/retry/test_retry.py $<TARGET_FILE:abxlua>)
set_tests_properties(retry PROPERTIES TIMEOUT 180)
