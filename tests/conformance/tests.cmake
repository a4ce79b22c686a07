# Conformance (issue 4 item 8): the official E2B JS SDK (npm e2b, pinned in package-lock.json)
# against `abxlua serve`; needs root, bubblewrap, node and npm (exit 77 = skipped).
add_test(NAME conformance COMMAND bash ${CMAKE_SOURCE_DIR}/tests/conformance/run.sh $<TARGET_FILE:abxlua>)
set_tests_properties(conformance PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
