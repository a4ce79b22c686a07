#!/usr/bin/env bash
# peer_suites:table (ctest, a few seconds): tests/peer_suites/run.sh against fake suite scripts
# (PEER_SUITES_DIR), checking its table, its failure list and its exit status as the protocol in
# its header says: PEER- lines collected per suite, a missing script, a skipped suite (77), a bad
# class, a count that disagrees with the PEER-FAIL lines, a script without PEER-SUITE and a
# failing exit are each a `setup` failure; exit 0 only when every failure is needs-internet,
# needs-public-ca, missing-kernel or e2b-only-template. Then the code-interpreter suite's report
# script (ci_report.mjs) on a small vitest report: its PEER- lines agree with its counts.
#   selftest.sh SOURCE_DIR
set -u
root=${1:?usage: selftest.sh SOURCE_DIR}
run="$root/tests/peer_suites/run.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/abxlua-peer-selftest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() { # expect DESCRIPTION FIXED-STRING (in $out)
  if grep -qF -- "$2" <<<"$out"; then echo "ok: $1"; else echo "FAIL: $1: no '$2' in:"; sed 's/^/  | /' <<<"$out"; fail=1; fi
}
expect_not() {
  if grep -qF -- "$2" <<<"$out"; then echo "FAIL: $1: '$2' in:"; sed 's/^/  | /' <<<"$out"; fail=1; else echo "ok: $1"; fi
}
suite() { printf '%s\n' "#!/usr/bin/env bash" "$2" >"$tmp/$1/$3"; }

# ---- only accepted classes: exit 0 ----------------------------------------------------------
mkdir -p "$tmp/good"
suite good 'echo "# progress"; echo noise
echo "PEER-FAIL e2b-js-sdk needs-internet tests/a.test.ts > curls 1.1.1.1: fetch failed"
echo "PEER-FAIL e2b-js-sdk e2b-only-template tests/b.test.ts > httpbin: template not found"
echo "PEER-SUITE e2b-js-sdk passed=344 failed=2 skipped=6"' e2b_js_sdk.sh
suite good '[ -x "$1" ] || exit 3
echo "PEER-FAIL code-interpreter missing-kernel r > runs R: no kernel r"
echo "PEER-SUITE code-interpreter passed=36 failed=1 skipped=0"' code_interpreter.sh
suite good 'echo "PEER-FAIL e2b-cli needs-public-ca create > with a key alone: fetch failed"
echo "PEER-SUITE e2b-cli passed=115 failed=1 skipped=0"' e2b_cli.sh
out=$(PEER_SUITES_DIR="$tmp/good" bash "$run" /bin/true e2b-js-sdk code-interpreter e2b-cli 2>&1)
rc=$?
[ $rc = 0 ] && echo "ok: accepted classes only: exit 0" || { echo "FAIL: accepted classes only: exit $rc"; echo "$out"; fail=1; }
expect "row of e2b-js-sdk" "| e2b-js-sdk       |    344 |      2 |       6 | 1 e2b-only-template, 1 needs-internet"
expect "row of code-interpreter" "| code-interpreter |     36 |      1 |       0 | 1 missing-kernel"
expect "row of e2b-cli" "| e2b-cli          |    115 |      1 |       0 | 1 needs-public-ca"
expect "failure listed" "  PEER-FAIL e2b-js-sdk needs-internet tests/a.test.ts > curls 1.1.1.1: fetch failed"
expect "progress passed through" "  # progress"
expect_not "other output not passed through" "noise"
expect_not "only the suites asked for" "opensandbox-sdk"

# ---- every way a suite can go wrong: exit 1, each a setup failure ----------------------------
mkdir -p "$tmp/bad"
suite bad 'echo "PEER-FAIL e2b-js-sdk product-gap tests/c.test.ts > logs: bad JSON"
echo "PEER-SUITE e2b-js-sdk passed=1 failed=2 skipped=0"' e2b_js_sdk.sh
suite bad 'echo "SKIP: node not found"; exit 77' e2b_cli.sh
suite bad 'echo "PEER-FAIL opensandbox-sdk flaky some test: x"
echo "PEER-SUITE opensandbox-sdk passed=3 failed=1 skipped=1"' opensandbox_sdk.sh
out=$(PEER_SUITES_DIR="$tmp/bad" bash "$run" /bin/true 2>&1)
rc=$?
[ $rc = 1 ] && echo "ok: product-gap and setup failures: exit 1" || { echo "FAIL: bad suites: exit $rc (want 1)"; fail=1; }
expect "a product-gap is listed" "PEER-FAIL e2b-js-sdk product-gap tests/c.test.ts > logs: bad JSON"
expect "a count that disagrees" "PEER-FAIL e2b-js-sdk setup PEER-SUITE says failed=2 but there are 1 PEER-FAIL lines"
expect "a missing script" "PEER-FAIL code-interpreter setup tests/peer_suites/code_interpreter.sh is missing"
expect "a skipped suite" "| e2b-cli          |      0 |      0 |       0 | none (skipped: node not found)"
expect "an unknown class" "PEER-FAIL opensandbox-sdk setup bad PEER-FAIL line (suite must be opensandbox-sdk, class one of"

mkdir -p "$tmp/crash"
suite crash 'echo "# started"; echo "npm ci failed"; exit 1' e2b_cli.sh
suite crash 'echo "all fine, no summary"' opensandbox_sdk.sh
out=$(PEER_SUITES_DIR="$tmp/crash" bash "$run" /bin/true e2b-cli opensandbox-sdk 2>&1)
rc=$?
[ $rc = 1 ] && echo "ok: crashed suites: exit 1" || { echo "FAIL: crashed suites: exit $rc (want 1)"; fail=1; }
expect "a failing exit" "PEER-FAIL e2b-cli setup e2b_cli.sh exited 1: npm ci failed"
expect "no PEER-SUITE line" "PEER-FAIL opensandbox-sdk setup opensandbox_sdk.sh printed no line 'PEER-SUITE opensandbox-sdk"

out=$(bash "$run" /bin/true nosuch 2>&1)
rc=$?
[ $rc = 2 ] && echo "ok: unknown suite: exit 2" || { echo "FAIL: unknown suite: exit $rc (want 2)"; fail=1; }
expect "unknown suite named with the valid ones" "unknown suite 'nosuch' (suites: e2b-js-sdk code-interpreter e2b-cli e2b-cli-commands e2b-desktop opensandbox-sdk)"
# ---- the code-interpreter suite's report (ci_report.mjs) speaks run.sh's protocol ----------
# a vitest JSON report with a python product gap, an R test without its kernel and a pass: one
# PEER-FAIL line per failure with run.sh's class names, and counts that agree (a report without
# PEER-FAIL lines was a `setup` failure of the whole suite)
if command -v node >/dev/null; then
  mkdir -p "$tmp/ci/js/tests"
  cat >"$tmp/ci/report.json" <<EOF
{"testResults": [
 {"name": "$tmp/ci/js/tests/basic.test.ts", "status": "failed", "assertionResults": [
   {"title": "basic", "fullName": "basic", "status": "passed"},
   {"title": "chart", "fullName": "charts > bar", "status": "failed",
    "failureMessages": ["AssertionError: expected undefined\n  at x.ts:1"]}]},
 {"name": "$tmp/ci/js/tests/env_vars/r.test.ts", "status": "failed", "assertionResults": [
   {"title": "env r", "fullName": "env r", "status": "failed", "failureMessages": ["NotFoundError: no kernel"]}]}
]}
EOF
  out=$(node "$root/tests/peer_suites/ci_report.mjs" "$tmp/ci/report.json" "$tmp/ci/js" "python3" 2>&1)
  expect "ci_report: a product gap" "PEER-FAIL code-interpreter product-gap tests/basic.test.ts > charts > bar: AssertionError: expected undefined"
  expect "ci_report: a missing kernel" "PEER-FAIL code-interpreter missing-kernel tests/env_vars/r.test.ts > env r: NotFoundError: no kernel"
  expect "ci_report: counts" "PEER-SUITE code-interpreter passed=1 failed=2 skipped=0"
  [ "$(grep -c '^PEER-FAIL ' <<<"$out")" = 2 ] && echo "ok: ci_report: a PEER-FAIL line per failure" ||
    { echo "FAIL: ci_report: PEER-FAIL lines:"; sed 's/^/  | /' <<<"$out"; fail=1; }
else
  echo "ok: ci_report not checked (no node)"
fi
exit $fail
