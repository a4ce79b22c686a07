# The peers' suites (tests/peer_suites/run.sh) are not registered: `make peer-suites` runs them
# (npm installs, many minutes). This checks only the runner's table, failure list and exit status
# against fake suite scripts (seconds; docs/peer-suites.md).
add_test(NAME peer_suites:table
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/peer_suites/selftest.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(peer_suites:table PROPERTIES TIMEOUT 60 LABELS peer_suites)
