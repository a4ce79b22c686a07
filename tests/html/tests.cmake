# The HTML report (`abxlua run --html FILE`, docs/reports/html.md): html:unit checks the escape
# function and the rendering of hostile and partial reports (tests/html/unit.lua); html:chromium
# writes the report of tests/html/fixture.lua and drives it in headless Chromium (click, filters,
# no request off file://, screenshots into the build dir); it skips (77) only without chromium.
foreach(mode unit chromium)
  add_test(NAME html:${mode}
    COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/html/check_html.py $<TARGET_FILE:abxlua> ${mode}
            ${CMAKE_BINARY_DIR}/html-report
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(html:${mode} PROPERTIES TIMEOUT 400 SKIP_RETURN_CODE 77)
endforeach()
