# The code-interpreter client (sbx:run_code, code contexts; lib/abx/client/code.lua over core.ndjson)
# against a fake control plane and code interpreter: both routings, broken streams, timeouts,
# backpressure, and the 16 MiB line bound with bounded RSS.
add_test(NAME code_interpreter
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/code_interpreter/test_code_interpreter.py
                 $<TARGET_FILE:abxlua>)
set_tests_properties(code_interpreter PROPERTIES TIMEOUT 300)
if(ABX_SANITIZE)
  # As for tests/hostile: a small quarantine so freed 16 MiB line buffers are not counted as ours;
  # ASan's shadow memory and allocator raise the peak (75 MiB measured), hence 120 MiB, not 64.
  set_tests_properties(code_interpreter PROPERTIES ENVIRONMENT
                       "ASAN_OPTIONS=detect_leaks=1:quarantine_size_mb=16;ABX_CODE_RSS_LIMIT_MB=120")
endif()
# The code-interpreter-v1 template's result formats on the host (no sandbox; seconds): chart data
# of each chart type E2B extracts from matplotlib, DataFrame data, list/dict json, PIL save shown
# (platform/code_interpreter/abx_charts.py, abx_formats.py); on Debian's python3 (deps.sh)
add_test(NAME code_interpreter_charts
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/code_interpreter/test_charts.py)
set_tests_properties(code_interpreter_charts PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
