# Platform tests: `abxlua serve` over real HTTP (needs root and bubblewrap). Exit 77 = skipped.
add_test(NAME platform COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_platform.py $<TARGET_FILE:abxlua>)
set_tests_properties(platform PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77)
# issue 14: 300 streams at once on at most 64 serve threads, backpressure, client-gone detection.
# Labelled load (`make test-load`, alone on the machine, RUN_SERIAL), not in `make test`: it bounds
# serve's RSS and the time 300 commands take to start, which measure whatever else runs beside it
# (issue 22: on a busy runner 55 of its 300 streams got no head in 120 s, a false red).
add_test(NAME platform_ingress_concurrency COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_ingress_concurrency.py $<TARGET_FILE:abxlua>)
set_tests_properties(platform_ingress_concurrency PROPERTIES TIMEOUT 600 LABELS load RUN_SERIAL TRUE
                     SKIP_RETURN_CODE 77)
add_test(NAME platform_network COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_network.py $<TARGET_FILE:abxlua>)
set_tests_properties(platform_network PROPERTIES TIMEOUT 240 SKIP_RETURN_CODE 77)
add_test(NAME platform_lifecycle COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_lifecycle.py $<TARGET_FILE:abxlua>)
set_tests_properties(platform_lifecycle PROPERTIES TIMEOUT 240 SKIP_RETURN_CODE 77)
add_test(NAME platform_crash COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_crash_recovery.py $<TARGET_FILE:abxlua>)
# RUN_SERIAL: any serve that starts while this test has killed serve A recovers A's state first
# (as it should), which took the leftovers this test checks (seen: 3 of 6 runs beside other tests)
set_tests_properties(platform_crash PROPERTIES TIMEOUT 240 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
add_test(NAME platform_v2 COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_v2.py $<TARGET_FILE:abxlua>)
set_tests_properties(platform_v2 PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77)
add_test(NAME platform_lifecycle_v2 COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_lifecycle_v2.py $<TARGET_FILE:abxlua>)
set_tests_properties(platform_lifecycle_v2 PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
add_test(NAME platform_limits COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_limits.py $<TARGET_FILE:abxlua>)
set_tests_properties(platform_limits PROPERTIES TIMEOUT 240 SKIP_RETURN_CODE 77)
# serve --tls: E2B's default addressing over HTTPS (certificates, names, the official SDK with only
# key, domain and CA, the engine's local-tls provider); npm ci of tests/platform/tls_sdk once
add_test(NAME platform_tls COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_tls.py $<TARGET_FILE:abxlua>)
set_tests_properties(platform_tls PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
if(ABX_SANITIZE) # it runs scenarios/ over TLS: the quarantine of tests/scenarios/tests.cmake
  set_tests_properties(platform_tls PROPERTIES ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1:quarantine_size_mb=16")
endif()
add_test(NAME platform_sudo COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_sudo.py $<TARGET_FILE:abxlua>)
set_tests_properties(platform_sudo PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
# code-interpreter-v1: start_cmd/ready_cmd and the code-interpreter server on real Jupyter kernels
add_test(NAME platform_code_interpreter COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_code_interpreter_local.py $<TARGET_FILE:abxlua>)
set_tests_properties(platform_code_interpreter PROPERTIES TIMEOUT 240 SKIP_RETURN_CODE 77)
# The code-interpreter server run on the host, no sandbox (issue 25): it always answers (kernels
# that cannot start, bad input), a context's cwd; then each kernel of another language, skipped
# (77) naming it when not installed (R: scripts/deps.sh; javascript, typescript: make ci-kernels).
add_test(NAME platform_code_interpreter_server
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_code_interpreter_server.py)
set_tests_properties(platform_code_interpreter_server PROPERTIES TIMEOUT 240 SKIP_RETURN_CODE 77)
foreach(lang r javascript typescript)
  add_test(NAME platform_code_interpreter_kernel:${lang}
           COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_code_interpreter_server.py ${lang})
  set_tests_properties(platform_code_interpreter_kernel:${lang} PROPERTIES TIMEOUT 300
                       SKIP_RETURN_CODE 77)
endforeach()
# E2B's code-interpreter suite runner (tests/peer_suites/code_interpreter.sh, `make ci-suite`, not
# run here): only its refusal without a clone and its report's classes, on a report made up.
add_test(NAME peer_suites:code-interpreter-report
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/peer_suites/check_ci_suite.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(peer_suites:code-interpreter-report PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77)
# The build sandboxes' egress proxy (platform/net/build_proxy.h): a harness linking the platform
# library links namespaces the test makes as sandboxes are linked and allows them on the proxy;
# the test adds an "outside" server on a TEST-NET address, serve for a running sandbox's 403, and
# a real fetch from deb.debian.org and the npm registry (skipped with its reason when unreachable).
add_executable(build_proxy_harness ${CMAKE_SOURCE_DIR}/tests/platform/build_proxy_harness.c)
target_compile_options(build_proxy_harness PRIVATE -Wall -Wextra -Werror)
target_include_directories(build_proxy_harness PRIVATE "${CMAKE_SOURCE_DIR}/platform")
target_link_libraries(build_proxy_harness PRIVATE abx_platform)
add_test(NAME platform_build_proxy COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_build_proxy.py
         $<TARGET_FILE:abxlua> $<TARGET_FILE:build_proxy_harness>)
set_tests_properties(platform_build_proxy PROPERTIES TIMEOUT 240 SKIP_RETURN_CODE 77)
# fromImage (platform/template/image_debian.h): the reference rules and refusals, fast; one real mmdebstrap
# build of debian:bookworm-slim is labelled slow and left out of `make test` (`make test-slow`).
add_executable(image_debian_harness ${CMAKE_SOURCE_DIR}/tests/platform/image_debian_harness.c)
target_compile_options(image_debian_harness PRIVATE -Wall -Wextra -Werror)
target_include_directories(image_debian_harness PRIVATE "${CMAKE_SOURCE_DIR}/platform")
target_link_libraries(image_debian_harness PRIVATE abx_platform)
add_test(NAME platform_image_refs COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_image_debian.py
         refs $<TARGET_FILE:abxlua> $<TARGET_FILE:image_debian_harness>)
set_tests_properties(platform_image_refs PROPERTIES TIMEOUT 60)
add_test(NAME platform_image_build COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_image_debian.py
         build $<TARGET_FILE:abxlua> $<TARGET_FILE:image_debian_harness>)
set_tests_properties(platform_image_build PROPERTIES TIMEOUT 1500 SKIP_RETURN_CODE 77 LABELS slow RUN_SERIAL TRUE)
add_test(NAME platform_template_build COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_template_build.py $<TARGET_FILE:abxlua>)
set_tests_properties(platform_template_build PROPERTIES TIMEOUT 240 SKIP_RETURN_CODE 77)
# PATCH /v2/templates/{id} and /templates/{id} {public} (`e2b template publish`): ~2 s
add_test(NAME platform_template_update COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_template_update.py $<TARGET_FILE:abxlua>)
set_tests_properties(platform_template_update PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
# fromImage through the build API (platform/template/image_root.c): the refusal of a non-Debian image is
# fast; a real debian:bookworm-slim build with apt through the proxy, then a sandbox of it, is slow.
add_test(NAME platform_from_image COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_from_image.py
         refuse $<TARGET_FILE:abxlua>)
set_tests_properties(platform_from_image PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
add_test(NAME platform_from_image_build COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_from_image.py
         build $<TARGET_FILE:abxlua>)
set_tests_properties(platform_from_image_build PROPERTIES TIMEOUT 1500 SKIP_RETURN_CODE 77 LABELS slow RUN_SERIAL TRUE)
# serve --flavor: each E2B-compatible platform's routes, status codes, TTL rules and credential
# refusal, with a create -> envd command -> kill round trip per flavour (platform/util/flavor.h)
add_test(NAME platform_flavors COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_flavors.py $<TARGET_FILE:abxlua>)
set_tests_properties(platform_flavors PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77)
# --flavor opensandbox: OpenSandbox's lifecycle API and ingress (platform/opensandbox/opensandbox.h); ~75 s, most
# of it waiting for two 60 s sandboxes (the spec's shortest timeout) to expire
add_test(NAME platform_flavor_opensandbox COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_flavor_opensandbox.py $<TARGET_FILE:abxlua>)
set_tests_properties(platform_flavor_opensandbox PROPERTIES TIMEOUT 240 SKIP_RETURN_CODE 77)
# --flavor opensandbox: execd's /code routes (envd execd_code.c -> code_interpreter/execd_code.py); ~20 s
add_test(NAME platform_execd_code COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_execd_code.py $<TARGET_FILE:abxlua>)
set_tests_properties(platform_execd_code PROPERTIES TIMEOUT 240 SKIP_RETURN_CODE 77)
# issue 15 part 5: the sandbox logs routes (v1 and v2) from the per-sandbox lifecycle log
add_test(NAME platform_sandbox_logs COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_sandbox_logs.py $<TARGET_FILE:abxlua>)
set_tests_properties(platform_sandbox_logs PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
# managed API keys (platform/api/apikeys.h): /api-keys under the access token, keys on the sandbox
# routes until deleted, the 0600 key file across a restart and its refusals; ~1 s
add_test(NAME platform_api_keys COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_api_keys.py $<TARGET_FILE:abxlua>)
set_tests_properties(platform_api_keys PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
# serve --git-root (platform/net/git_server.h, issue 15 part 7): a bare repository listed and cloned
# from inside a sandbox, push / upload-archive / paths outside the root refused; ~1 s
add_test(NAME platform_git_server COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_git_server.py $<TARGET_FILE:abxlua>)
set_tests_properties(platform_git_server PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
# protocol upgrades through the ingress (platform/ingress/ingress_upgrade.c), plain and `serve --tls`: a
# 101 relayed both ways to a python3 server in the sandbox, a non-101 an ordinary answer, the
# traffic token required (~10 s)
add_test(NAME platform_ingress_upgrade COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_ingress_upgrade.py $<TARGET_FILE:abxlua>)
set_tests_properties(platform_ingress_upgrade PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
# Serve's log (issue 22 item 4, platform/util/log.h): a time on every line; failed and slow
# requests with method, path, status, ms and sandbox; sandbox starts and stops with their reason;
# a template's readiness wait; no API key or token. ~20 s (a 5.2 s delayed request, a build).
add_test(NAME platform_serve_log COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_serve_log_lines.py $<TARGET_FILE:abxlua>)
set_tests_properties(platform_serve_log PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
# issue 26: the warm pool (serve --pool): never listed, a claim applies the create, refills, misses
# what it cannot serve, dies with serve; the default pool waits for its template's first create
add_test(NAME platform_warm_pool COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_warm_pool.py $<TARGET_FILE:abxlua>)
set_tests_properties(platform_warm_pool PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
# serve --mutant (issue 27, platform/util/mutant.h): each api and ingress mutant fires on a serve
# with it and not on a truthful one; usage errors, --mutant list, the first log line, and the envd
# mutants in envd's environment (ABX_ENVD_MUTANTS). About 10 s.
add_test(NAME platform_mutants COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/platform/test_mutants.py $<TARGET_FILE:abxlua>)
set_tests_properties(platform_mutants PROPERTIES TIMEOUT 240 SKIP_RETURN_CODE 77)
