# Layout of the tree (issue 9, item 8): the engine ↔ platform boundary is enforced, not a convention.
add_test(NAME layout:boundary
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/layout/boundary.py ${CMAKE_SOURCE_DIR})
add_test(NAME layout:boundary-selftest
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/layout/boundary.py --self-test)
set_tests_properties(layout:boundary layout:boundary-selftest PROPERTIES TIMEOUT 60 LABELS layout)
# (issue 23) README.md stays a short page (at most 250 lines) and no relative link of README.md or
# docs/**/*.md dangles; the self-test plants both faults.
add_test(NAME layout:docs COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/layout/docs_links.py ${CMAKE_SOURCE_DIR})
add_test(NAME layout:docs-selftest COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/layout/docs_links.py --self-test)
set_tests_properties(layout:docs layout:docs-selftest PROPERTIES TIMEOUT 60 LABELS layout)
