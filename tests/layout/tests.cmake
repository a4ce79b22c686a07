# Layout of the tree (issue 9, item 8): the engine ↔ platform boundary is enforced, not a convention.
add_test(NAME layout:boundary
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/layout/boundary.py ${CMAKE_SOURCE_DIR})
add_test(NAME layout:boundary-selftest
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/layout/boundary.py --self-test)
set_tests_properties(layout:boundary layout:boundary-selftest PROPERTIES TIMEOUT 60 LABELS layout)
