# Platform tests: `abxlua serve` over real HTTP (needs root and bubblewrap). Exit 77 = skipped.
add_test(NAME platform COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_platform.py $<TARGET_FILE:abxlua>)
set_tests_properties(platform PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77)
