# Provider semantics (issue 12 part 1): routing URLs (host, headers, ACS path), TTL bounds and
# RFC 3339 expiry, ${region} substitution, pagination, config validation messages, and
# provider.open handing them to the E2B client. Pure Lua plus a closed loopback port; the run
# starts the default local provider as every runner case does.
add_test(NAME providers:semantics
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/runner/run_case.sh $<TARGET_FILE:abxlua>
          ${CMAKE_SOURCE_DIR}/tests/providers/semantics.lua "^10 passed, 0 failed" 0
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(providers:semantics PROPERTIES TIMEOUT 120
  ENVIRONMENT "ABX_TEST_REGION=eu-test-1;ABX_REGION=;ABX_TEST_KEY=test-key-0123456789")
# The same on the wire, against a recording server on loopback: the provider's auth header, ${region}
# and its missing-region error, libcurl's proxy variables (http_proxy honoured, HTTP_PROXY ignored,
# no_proxy), and what `abxlua doctor --provider NAME` shows (key and proxy password masked).
add_test(NAME providers:wire
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/providers/test_wire.py $<TARGET_FILE:abxlua>)
set_tests_properties(providers:wire PROPERTIES TIMEOUT 180)
# Local flavours (issue 12 part 5): `--flavor NAME` maps the local provider onto the semantics and
# capabilities of the remote entry naming it, and refuses what it cannot mean (abx.run.flavor).
add_test(NAME providers:flavors
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/runner/run_case.sh $<TARGET_FILE:abxlua>
          ${CMAKE_SOURCE_DIR}/tests/providers/flavors.lua "^4 passed, 0 failed" 0
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(providers:flavors PROPERTIES TIMEOUT 120 ENVIRONMENT "ABX_FLAVOR=")
# The OpenSandbox adapter's mapping (issue 12 part 2): create body, states, SSE framing and
# command events, error bodies -> kinds, endpoint URLs, page lists, FileInfo, the upload body,
# Skipped for primitives with no equivalent, provider.open choosing the adapter. Pure Lua and a
# closed loopback port.
add_test(NAME providers:opensandbox_mapping
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/runner/run_case.sh $<TARGET_FILE:abxlua>
          ${CMAKE_SOURCE_DIR}/tests/providers/opensandbox_mapping.lua "^13 passed, 0 failed" 0
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(providers:opensandbox_mapping PROPERTIES TIMEOUT 120
  ENVIRONMENT "ABX_TEST_KEY=test-key-0123456789")
# The OpenSandbox adapter on the wire, against a scripted OpenSandbox (lifecycle API + execd behind
# the endpoint's URI route) on loopback: opensandbox_case.lua through `abxlua run --provider osb`,
# then the create body, renew-expiration, page lists and execd tokens as sent.
add_test(NAME providers:opensandbox_wire
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/providers/test_opensandbox.py $<TARGET_FILE:abxlua>)
set_tests_properties(providers:opensandbox_wire PROPERTIES TIMEOUT 180)
# .env.example has a block per remote provider of the config and names only variables abxlua reads.
add_test(NAME providers:env_example
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/runner/run_case.sh $<TARGET_FILE:abxlua>
          ${CMAKE_SOURCE_DIR}/tests/providers/env_example.lua "^1 passed, 0 failed" 0
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
