# Editor and lint (issue 13, item 6): the LuaLS meta files of types/abx/ are fresh and complete,
# ctx's declared fixtures are what a ctx answers, luacheck is clean over lib/ and scenarios/, and
# the `abxlua new` scaffolds make files that `abxlua list` collects.
set(ABX_EDITOR_DIR ${CMAKE_SOURCE_DIR}/tests/editor)

# A Lua case run like tests/runner's (tests/runner/run_case.sh: last line, exit code, header).
function(abx_editor_case name last_line_regex exit_code)
  add_test(NAME editor:${name}
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/runner/run_case.sh $<TARGET_FILE:abxlua>
            ${ABX_EDITOR_DIR}/${name}.lua "${last_line_regex}" ${exit_code}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(editor:${name} PROPERTIES TIMEOUT 120)
endfunction()

# types/abx/ matches what `abxlua types --write` generates (stale = failure, like api_docs)
add_test(NAME types_meta COMMAND $<TARGET_FILE:abxlua> types --check WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
abx_editor_case(types_coverage "^7 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
abx_editor_case(fixtures_declared "^2 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)

# luacheck (Debian's lua-check, installed by scripts/deps.sh) over lib/ and scenarios/ with the
# root's .luacheckrc: any warning fails the build
add_test(NAME lint:luacheck COMMAND luacheck --config ${CMAKE_SOURCE_DIR}/.luacheckrc --formatter plain
         --codes lib scenarios WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})

# `abxlua new scenario|template NAME`: collected by `abxlua list`, passing on the local provider,
# luacheck-clean, never overwriting, refusing bad names
add_test(NAME editor:new COMMAND bash ${ABX_EDITOR_DIR}/new.sh $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(editor:new PROPERTIES TIMEOUT 180)
abx_editor_case(test_options "^4 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
