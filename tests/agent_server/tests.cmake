# agent-sandbox-server (the python-hello template's server) and its client sbx:server(): the
# scenario 06_server_sdk.lua and the template's script against base sandboxes with the server
# uploaded from the source tree (tests/agent_server/from_source.lua), on the local platform.
# Needs root and bubblewrap, as the scenario suite.
add_test(NAME agent_server
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/runner/run_case.sh $<TARGET_FILE:abxlua>
          ${CMAKE_SOURCE_DIR}/tests/agent_server/from_source.lua
          "^16 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(agent_server PROPERTIES TIMEOUT 300)
