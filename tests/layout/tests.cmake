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
# (issue 23) docs/cli.md names every command and every long option the binary's help prints.
add_test(NAME layout:cli_flags
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/layout/cli_flags.py $<TARGET_FILE:abxlua>
                 ${CMAKE_SOURCE_DIR}/docs/cli.md)
add_test(NAME layout:cli_flags-selftest
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/layout/cli_flags.py --self-test)
# about 40 `--help` runs: minutes on a busy machine
set_tests_properties(layout:cli_flags layout:cli_flags-selftest PROPERTIES TIMEOUT 600 LABELS layout)
# Paths (issue 23, item 7): every repository path a comment cites exists (docs/protocol/ pages with
# the cited section), and no tracked file holds a path of one machine; rules in paths.py.
add_test(NAME layout:paths
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/layout/paths.py ${CMAKE_SOURCE_DIR})
add_test(NAME layout:paths-selftest
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/layout/paths.py --self-test)
set_tests_properties(layout:paths layout:paths-selftest PROPERTIES TIMEOUT 120 LABELS layout)
# Wings (issue 24): platform/ is one folder per subsystem; a wing reaches another through its door
# header along an allowed arrow, no circle between wings, and no Connect envelope or base64 framed
# outside proto/. Rules in wings.py; the self-test plants each fault.
add_test(NAME layout:wings COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/layout/wings.py ${CMAKE_SOURCE_DIR})
add_test(NAME layout:wings-selftest COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/layout/wings.py --self-test)
set_tests_properties(layout:wings layout:wings-selftest PROPERTIES TIMEOUT 60 LABELS layout)
# Functions (issue 24, item 7): no function over 100 lines in platform/, engine/, bindings/, lib/
# outside tests/layout/functions_allowlist.txt, and that list only shrinks; rules in functions.py.
add_test(NAME layout:functions
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/layout/functions.py ${CMAKE_SOURCE_DIR})
add_test(NAME layout:functions-selftest
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/layout/functions.py --self-test)
set_tests_properties(layout:functions layout:functions-selftest PROPERTIES TIMEOUT 120 LABELS layout)
