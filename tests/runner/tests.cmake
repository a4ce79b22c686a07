# Runner cases: scenario files with known outcomes, run by tests/runner/run_case.sh from the source
# root (where config/abxlua.yaml is found). Each case's header states its expected outcome.
set(ABX_RUNNER_DIR ${CMAKE_SOURCE_DIR}/tests/runner)

function(abx_runner_case name last_line_regex exit_code)
  add_test(NAME runner:${name}
    COMMAND bash ${ABX_RUNNER_DIR}/run_case.sh $<TARGET_FILE:abxlua> ${ABX_RUNNER_DIR}/${name}.lua
            "${last_line_regex}" ${exit_code}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(runner:${name} PROPERTIES TIMEOUT 120)
endfunction()

abx_runner_case(outcomes_basic "^1 passed, 2 failed, 2 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(assertions "^4 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
abx_runner_case(syntax_error "^1 passed, 0 failed, 0 skipped, 0 xfailed, 1 errors in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(top_level_error "^1 passed, 0 failed, 0 skipped, 0 xfailed, 1 errors in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(unknown_marker "^0 passed, 0 failed, 0 skipped, 0 xfailed, 1 errors in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(unknown_global "^1 passed, 2 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(timeout "^1 passed, 2 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(teardown "^3 passed, 1 failed, 0 skipped, 0 xfailed, 1 errors in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(finalizer_error "^1 passed, 0 failed, 0 skipped, 0 xfailed, 1 errors in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(fixtures "^3 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
abx_runner_case(sweep "^1 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
abx_runner_case(eventually "^4 passed, 1 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(parallel "^5 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
abx_runner_case(exitfirst "^1 passed, 1 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(select_k "^2 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
abx_runner_case(select_k_expr "^3 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
abx_runner_case(select_m "^2 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
abx_runner_case(select_m_or "^3 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
abx_runner_case(select_profile "^1 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)

# The command line: --version, help, list, usage errors (exit 4), nothing collected (exit 5).
add_test(NAME runner:cli COMMAND bash ${ABX_RUNNER_DIR}/cli.sh $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(runner:cli PROPERTIES TIMEOUT 120)

# After a run, none of its processes (platform, bwrap, envd) is left on the host.
add_test(NAME runner:cleanup COMMAND bash ${ABX_RUNNER_DIR}/cleanup.sh $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(runner:cleanup PROPERTIES TIMEOUT 120)


# Known issues: strict expected failures (tests/runner/ki/ holds the config and the catalog)
abx_runner_case(ki_xfail "^0 passed, 1 failed, 0 skipped, 2 xfailed in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(ki_xpass "^0 passed, 1 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(ki_scoped "^1 passed, 1 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(ki_unknown "^0 passed, 0 failed, 0 skipped, 0 xfailed, 1 errors in [0-9]+\\.[0-9]{2}s$" 1)
# (issue 13) the marker alone is a collection error; a script's own Assertion or Lua error is a
# real failure unless `raises` names it
abx_runner_case(ki_marker "^0 passed, 0 failed, 0 skipped, 0 xfailed, 1 errors in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(ki_script_error "^0 passed, 2 failed, 0 skipped, 3 xfailed in [0-9]+\\.[0-9]{2}s$" 1)

# The catalog's languages are a config setting; a missing text stops only what uses the entry
add_test(NAME runner:ki-languages
         COMMAND bash ${ABX_RUNNER_DIR}/ki_lang.sh $<TARGET_FILE:abxlua>)
set_tests_properties(runner:ki-languages PROPERTIES TIMEOUT 180)

# The generated KNOWN-ISSUES files match config/known_issues.yaml
add_test(NAME known_issues_docs COMMAND $<TARGET_FILE:abxlua> known-issues --check
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})

# Capabilities: `requires` names checked at collection; a capability the provider lacks skips
abx_runner_case(cap_unknown "^0 passed, 0 failed, 0 skipped, 0 xfailed, 1 errors in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(cap_skip "^1 passed, 0 failed, 2 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
# (issue 23) local has code_interpreter: such a test runs there
abx_runner_case(cap_code_interpreter "^1 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)

# Providers, credentials (.env files, the environment wins, masked), doctor
add_test(NAME runner:credentials COMMAND bash ${ABX_RUNNER_DIR}/credentials.sh $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(runner:credentials PROPERTIES TIMEOUT 180)
abx_runner_case(fixture_templates "^2 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
abx_runner_case(zlib "^4 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
abx_runner_case(slots "^8 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)

# Engine core (issue 9): deadlines cannot be swallowed; the ready queue is FIFO
abx_runner_case(deadline_guard "^1 passed, 4 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(scheduler "^2 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)

# Fail closed (issue 9 item 5): options, result tables and objects reject unknown names; the
# generated docs/API.md matches the declarations it is made from.
abx_runner_case(options "^5 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
add_test(NAME api_docs COMMAND $<TARGET_FILE:abxlua> api --check WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
# docs/providers.md's table is generated from config/abxlua.yaml: stale = failure
add_test(NAME providers_docs COMMAND $<TARGET_FILE:abxlua> providers --check
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
# Routing in one place (abx.route), no doubled port; sbx:connect() keeps the created lifetime.
abx_runner_case(route "^3 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
abx_runner_case(connect_ttl "^2 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
# Slots follow the sandbox: kills and 404s free them, claims, no deadlock (issue 9, item 3)
abx_runner_case(slots_follow "^5 passed, 1 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(max_sandboxes_flag "^1 passed, 1 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(tracker_unit "^5 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
abx_runner_case(no_exit "^1 passed, 2 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(tracked_resources "^3 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)

# t.secret: a value from the environment, masked in the output (tests/runner/secret.lua)
abx_runner_case(secret "^3 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
set_tests_properties(runner:secret PROPERTIES ENVIRONMENT "ABX_RUNNER_SECRET=s3cr3t-from-env")
# Non-root (issue 13 part 8): the local provider without root or CAP_SYS_ADMIN is one usage error
# quoting serve's cause (exit 4).
add_test(NAME runner:nonroot COMMAND bash ${ABX_RUNNER_DIR}/nonroot.sh $<TARGET_FILE:abxlua>)
set_tests_properties(runner:nonroot PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
# The serve log a run names stays (issue 22 item 4): serve logs go by age (7 days), never by
# count, so a fresh log of another run is never pruned. Needs root and bubblewrap.
add_test(NAME runner:serve_log_keep COMMAND bash ${ABX_RUNNER_DIR}/serve_log_keep.sh $<TARGET_FILE:abxlua>)
set_tests_properties(runner:serve_log_keep PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77)

# Selection as in pytest (issue 13, part 2) and the shards of part 7: node ids, -k phrases and
# file names, --lf/--ff, --maxfail, --durations, --reruns, empty and duration-based shards
# (tests/runner/selection.py, fixtures in tests/runner/sel/)
foreach(mode nodeid keyword lastfailed maxfail durations reruns shard slowfirst)
  add_test(NAME runner:select_${mode}
    COMMAND python3 ${ABX_RUNNER_DIR}/selection.py $<TARGET_FILE:abxlua> ${mode}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(runner:select_${mode} PROPERTIES TIMEOUT 300)
endforeach()

# Readable failures (issue 13): line diffs of long and multi-line values, the failing call's line
# in the test's own file, file order under -j, per-test captured output (capture.py)
abx_runner_case(failure_diff "^0 passed, 5 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(failure_where "^0 passed, 4 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(failure_where_v "^0 passed, 1 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(failure_where_vv "^0 passed, 1 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(failure_order "^0 passed, 3 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(diff_unit "^4 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
abx_runner_case(sink_unit "^3 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
abx_runner_case(stream_unit "^2 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
abx_runner_case(pipe_httpd_unit "^5 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
abx_runner_case(json_unit "^5 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
abx_runner_case(annotations_unit "^3 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
add_test(NAME runner:capture COMMAND python3 ${ABX_RUNNER_DIR}/capture.py $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(runner:capture PROPERTIES TIMEOUT 180)

# A growing suite (issue 13 part 5): helper modules under lib/ or named _*.lua are not scenarios;
# scenarios/?.lua and scenarios/lib/?.lua on package.path from any directory; the config found by
# walking up (tests/runner/suite/ is a small project); user fixtures with scopes; before/after_each.
add_test(NAME runner:suite COMMAND bash ${ABX_RUNNER_DIR}/suite.sh $<TARGET_FILE:abxlua>)
set_tests_properties(runner:suite PROPERTIES TIMEOUT 180)
abx_runner_case(user_fixtures "^6 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
abx_runner_case(fixture_builtin "^0 passed, 0 failed, 0 skipped, 0 xfailed, 1 errors in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(fixture_scope "^0 passed, 0 failed, 0 skipped, 0 xfailed, 1 errors in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(hooks "^4 passed, 3 failed, 0 skipped, 0 xfailed, 2 errors in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(fixture_exitfirst "^0 passed, 1 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(fixture_misuse "^2 passed, 6 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(fixture_deadlock "^1 passed, 1 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 1)

# A hung test is visible and its limit explained (issue 22, item 3): a Timeout names the limit,
# its source (the test's timeout, --timeout, defaults.test_timeout, the built-in default) and how
# to change it; teardowns name defaults.teardown_timeout; off a terminal a test still running is
# named every ABX_PROGRESS_EVERY seconds (60 unless set), on one the status line names the tests
# in flight with their seconds (progress.py, fixture tests/runner/hang/slow.lua)
abx_runner_case(hang_limit "^2 passed, 3 failed, 0 skipped, 0 xfailed, 2 errors in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(hang_flag "^0 passed, 2 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 1)
abx_runner_case(limits_unit "^4 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
abx_runner_case(console_progress_unit "^4 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
foreach(mode ci tty)
  add_test(NAME runner:progress_${mode}
    COMMAND python3 ${ABX_RUNNER_DIR}/progress.py $<TARGET_FILE:abxlua> ${mode}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(runner:progress_${mode} PROPERTIES TIMEOUT 120)
endforeach()

# Issue 23 item 6: a newcomer's slips (a method called with '.', an SDK name, another framework's
# assertion name, a misspelled option or fixture) fail closed with a pointer, at the scenario line
abx_runner_case(slips "^5 passed, 2 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 1)

# Issue 23 item 5: --keep-failed keeps a failed test's sandbox (tagged abx-kept=1, bounded TTL,
# reachable with the printed command) on a local platform that outlives the run; cleanup --kept
# removes it. Its platform lives in a private state dir.
add_test(NAME runner:keep_failed COMMAND bash ${ABX_RUNNER_DIR}/keep_failed.sh $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(runner:keep_failed PROPERTIES TIMEOUT 300)
abx_runner_case(keep_unit "^3 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)

# `abxlua bench` (issue 26): its statistics, thresholds and --compare without a platform, then the
# command end to end against the local platform (modes, operations, --json, exit 0/1/4/99).
abx_runner_case(bench_unit "^5 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
add_test(NAME runner:bench_cli COMMAND bash ${ABX_RUNNER_DIR}/bench_cli.sh $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(runner:bench_cli PROPERTIES TIMEOUT 600)

# `abxlua mutate` and `abxlua run --mutant` (issue 27 part 2) against the local platform's mutants
add_test(NAME runner:mutate_cli COMMAND bash ${ABX_RUNNER_DIR}/mutate_cli.sh $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(runner:mutate_cli PROPERTIES TIMEOUT 600)

# t.measure and tests' k6-style thresholds (issue 26 part 2): statistics, options, and a run that
# fails through thresholds alone exits 99
abx_runner_case(measure_unit "^5 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 0)
abx_runner_case(thresholds "^2 passed, 2 failed, 0 skipped, 0 xfailed in [0-9]+\\.[0-9]{2}s$" 99)
