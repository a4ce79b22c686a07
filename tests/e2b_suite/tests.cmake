# E2B's own SDK suite (run.sh) is not registered: `make e2b-suite` runs it with E2B_SDK_DIR set.
# This checks only that, without a checkout, it says what to set and how to get it (issue 23).
add_test(NAME e2b_suite:needs-checkout
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/e2b_suite/needs_checkout.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(e2b_suite:needs-checkout PROPERTIES TIMEOUT 60 LABELS e2b_suite)
