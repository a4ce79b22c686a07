# Template folders and the E2B build API client (issue 11): recipe validation (every error class,
# exact messages), the files hash and build body against the official SDK 2.51.0, and the CLI
# against a fake build API that records the requests.
set(ABX_TEMPLATES_DIR ${CMAKE_SOURCE_DIR}/tests/templates)

# abxlua's build request (steps, COPY filesHash) equals the e2b SDK's Template.toJSON
add_test(NAME templates:sdk_hash COMMAND bash ${ABX_TEMPLATES_DIR}/sdk_compare.sh $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(templates:sdk_hash PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)

# `abxlua template build|deploy|list|delete|logs` and template folders in `abxlua run`, against
# a fake build API in front of a real serve: the SDK's exact request sequence, cached rebuilds,
# deploy tags, failures with their log tail, the table, at most max_sandboxes alive
add_test(NAME templates:build_cli COMMAND python3 ${ABX_TEMPLATES_DIR}/test_build_cli.py $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(templates:build_cli PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)

# Recipe validation: every error class with its exact message, each step kind's mapping, the
# content tag (a runner case; config tests/templates/unit.yaml, no sandbox)
add_test(NAME templates:recipe_errors
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/runner/run_case.sh $<TARGET_FILE:abxlua>
          ${ABX_TEMPLATES_DIR}/recipe_errors.lua "^11 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(templates:recipe_errors PROPERTIES TIMEOUT 120)

# The same against the real local platform (serve's build API, --build-cache kept between runs):
# build, a CACHED rebuild by a new serve, deploy, logs, and a run of tests/templates/local/
# hello-local (skipped when serve has no build API)
add_test(NAME templates:local_build COMMAND python3 ${ABX_TEMPLATES_DIR}/test_local_build.py $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(templates:local_build PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)

# A from_image recipe (tests/templates/local/debian-hello) through `abxlua template build` and
# `abxlua run` on the local platform: a real mmdebstrap root (about a minute cold), so slow
add_test(NAME templates:local_from_image COMMAND python3 ${ABX_TEMPLATES_DIR}/test_local_from_image.py $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(templates:local_from_image PROPERTIES TIMEOUT 1500 SKIP_RETURN_CODE 77 LABELS slow RUN_SERIAL TRUE)

# A template's readiness (issue 22): a create that waits longer than request_timeout for its
# ready_cmd succeeds within the template's ready_timeout; a never-ready one fails after its
# ready_timeout (3 s) naming template, command, wait, probes, last probe and start log
add_test(NAME templates:ready_timeout COMMAND python3 ${ABX_TEMPLATES_DIR}/test_ready_timeout.py $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(templates:ready_timeout PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77)

# A template author's loop on the local provider (issue 25 item 4): `abxlua template deploy`,
# `list`, `sandbox create --template`, `sandbox exec`, `template delete` on a running `abxlua
# sandbox serve`; a deploy with no platform running kept in the template store for the next
# serve; a stored build the cache cannot replay listed as error (tests/templates/local/author-loop)
add_test(NAME templates:author_loop COMMAND python3 ${ABX_TEMPLATES_DIR}/test_author_loop.py $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(templates:author_loop PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
