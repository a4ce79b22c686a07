# Reports: --junit, --json, --tap, --evidence, -r, -x, the live status line, masking in every sink,
# and --shard, checked by tests/reports/check_reports.py (one ctest per mode). JUnit is validated
# against tests/reports/junit.xsd, JSON against tests/reports/report.schema.json.
foreach(mode outputs known_issues secret hostile console shard schema_tools)
  add_test(NAME reports:${mode}
    COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/reports/check_reports.py $<TARGET_FILE:abxlua> ${mode}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(reports:${mode} PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
endforeach()
# merge-reports (shards merged into one run), --ctrf and GitHub Actions annotations, checked by
# tests/reports/check_merge.py on tests/reports/merge/ (JSON schema, junit.xsd, ctrf.schema.json).
foreach(mode merge merge_refusals ctrf annotations)
  add_test(NAME reports:${mode}
    COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/reports/check_merge.py $<TARGET_FILE:abxlua> ${mode}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(reports:${mode} PROPERTIES TIMEOUT 300)
endforeach()

# every report of a run carries its tests' thresholds and t.measure statistics (issue 26)
add_test(NAME reports:thresholds COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/reports/check_thresholds.py $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(reports:thresholds PROPERTIES TIMEOUT 300)
