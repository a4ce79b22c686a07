# Per-test HTTP traces and curl reproducers (issue 23 items 1 and 2; docs/reports/traces.md):
# `abxlua run --trace off|on|retain-on-failure` against the local platform, the JSON fields trace,
# reproducer, output, started, worker and sandboxes, the bound on kept exchanges, masking of a
# planted secret. Needs root and bubblewrap; exit 77 = skipped.
add_test(NAME trace COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/trace/test_trace.py $<TARGET_FILE:abxlua>)
set_tests_properties(trace PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
