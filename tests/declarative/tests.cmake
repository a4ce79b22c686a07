# YAML scenarios (abx.run.declarative): schema errors name file:line and key, failing expectations
# really fail at their step's line, known issues are strict, YAML is collected beside Lua
# (tests/declarative/test_declarative.py, one ctest per mode; each well under a minute).
foreach(mode schema outcomes known_issues collect)
  add_test(NAME declarative:${mode}
    COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/declarative/test_declarative.py $<TARGET_FILE:abxlua> ${mode}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(declarative:${mode} PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77)
endforeach()
