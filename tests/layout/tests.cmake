# Layout of the tree (issue 9, item 8): the engine ↔ platform boundary is enforced, not a convention.
add_test(NAME layout:boundary
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/layout/boundary.py ${CMAKE_SOURCE_DIR})
add_test(NAME layout:boundary-selftest
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/layout/boundary.py --self-test)
set_tests_properties(layout:boundary layout:boundary-selftest PROPERTIES TIMEOUT 60 LABELS layout)
# Paths (issue 23, item 7): every repository path a comment cites exists (docs/protocol/ pages with
# the cited section), and no tracked file holds a path of one machine; rules in paths.py.
add_test(NAME layout:paths
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/layout/paths.py ${CMAKE_SOURCE_DIR})
add_test(NAME layout:paths-selftest
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/layout/paths.py --self-test)
set_tests_properties(layout:paths layout:paths-selftest PROPERTIES TIMEOUT 120 LABELS layout)
