# Formatting (issue 9, item 8; issue 24, item 8): every C file of the repository is as
# .clang-format formats it (tests/format/check.sh). Skipped (not failed) when clang-format 14 is missing.
add_test(NAME format:check COMMAND ${CMAKE_SOURCE_DIR}/tests/format/check.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(format:check PROPERTIES TIMEOUT 120 LABELS format SKIP_RETURN_CODE 77)
