# Hostile answers (envelopes, JSON, headers, bodies, endless streams, silence) against a fake
# server: typed errors, bounded time and memory.
add_test(NAME hostile COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/hostile/test_hostile.py $<TARGET_FILE:abxlua>)
set_tests_properties(hostile PROPERTIES TIMEOUT 300)
if(ABX_SANITIZE)
  # ASan keeps freed blocks in a quarantine (256 MiB by default), which the RSS bound would count
  # as ours: the 8 MiB buffers freed by each case pushed the peak to about 560 MiB. A 16 MiB
  # quarantine still catches use-after-free of recent blocks and leaves the bound meaningful.
  set_tests_properties(hostile PROPERTIES ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1:quarantine_size_mb=16")
endif()
