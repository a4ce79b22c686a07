# Fault injection: `abxlua serve --faults` against the engine, one serve per fault kind
# (needs root and bubblewrap; exit 77 = skipped).
add_test(NAME faults COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/faults/test_faults.py $<TARGET_FILE:abxlua>)
set_tests_properties(faults PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77)
