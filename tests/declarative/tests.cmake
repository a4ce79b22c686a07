# YAML scenarios (abx.run.declarative): schema errors name file:line and key, failing expectations
# really fail at their step's line, known issues are strict, YAML is collected beside Lua, and an
# interrupted YAML run leaves nothing (tests/declarative/test_declarative.py, one ctest per mode;
# each a few seconds).
foreach(mode schema outcomes known_issues collect interrupt)
  add_test(NAME declarative:${mode}
    COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/declarative/test_declarative.py $<TARGET_FILE:abxlua> ${mode}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(declarative:${mode} PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77)
endforeach()
# it looks at the processes of the machine (those naming its own TMPDIR), as tests/interrupt does
set_tests_properties(declarative:interrupt PROPERTIES RUN_SERIAL TRUE)
