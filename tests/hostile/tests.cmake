# Hostile answers (envelopes, JSON, headers, bodies, endless streams, silence) against a fake
# server: typed errors, bounded time and memory.
add_test(NAME hostile COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/hostile/test_hostile.py $<TARGET_FILE:abxlua>)
set_tests_properties(hostile PROPERTIES TIMEOUT 300)
