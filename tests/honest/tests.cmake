# An engine that stays honest when the platform lies or stumbles (issue 27 part 4), against a fake
# control plane (tests/honest/honest_api.py): a lying list is a Protocol error at once and every
# paging loop is bounded; a 405 on a v2 route names its route and the setting in every report; a
# gateway's bare 502 is retried and counted, then Unavailable; the cleanup lists by tag again.
add_test(NAME honest:api COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/honest/test_honest.py
  $<TARGET_FILE:abxlua>)
set_tests_properties(honest:api PROPERTIES TIMEOUT 300)
# A run's --config (and provider) reaches the abxlua children of its tests; 08_providers takes the
# run's config (abx.run.config.current), never one of its own.
add_test(NAME honest:config_child COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/honest/test_config_child.py
  $<TARGET_FILE:abxlua>)
set_tests_properties(honest:config_child PROPERTIES TIMEOUT 240)
# A gateway's bare 502 in front of envd (serve --faults): idempotent calls retried and counted,
# then Unavailable; a process Start never resent. Needs root and bwrap (skips otherwise).
add_test(NAME honest:gateway COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/honest/test_gateway.py
  $<TARGET_FILE:abxlua>)
set_tests_properties(honest:gateway PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
# abx.client.envd_checked's decisions after a gateway's bare answer (Move, SendSignal, CreateWatcher),
# against a fake envd client: every branch, the unknown ones included. Pure Lua.
add_test(NAME honest:envd_checked
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/runner/run_case.sh $<TARGET_FILE:abxlua>
          ${CMAKE_SOURCE_DIR}/tests/honest/envd_checked_case.lua "^4 passed, 0 failed" 0
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(honest:envd_checked PROPERTIES TIMEOUT 120)
