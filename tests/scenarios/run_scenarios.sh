#!/usr/bin/env bash
# Runs the whole scenario suite against the embedded local platform with -j 4, then checks the
# acceptance promises: exit 0, a summary with 0 failed and at least MIN_PASSED passed, and no
# sandbox process (bwrap or `abxlua envd`) left on the host afterwards.
# Usage: run_scenarios.sh ABXLUA [MIN_PASSED]
set -u
abxlua=$1
min_passed=${2:-40}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$abxlua" run scenarios/ -j 4 >"$out" 2>&1
rc=$?
cat "$out"
last=$(tail -n 1 "$out")
fail() { echo "run_scenarios: FAIL: $*"; exit 1; }
[ "$rc" -eq 0 ] || fail "abxlua run exited $rc"
passed=$(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed.*/\1/p' <<<"$last")
failed=$(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed.*/\2/p' <<<"$last")
[ -n "$passed" ] || fail "last line is not a summary: $last"
[ "$failed" -eq 0 ] || fail "$failed tests failed"
[ "$passed" -ge "$min_passed" ] || fail "only $passed passed, expected at least $min_passed"
grep -q '^cleanup: ' "$out" || fail "no cleanup line"
# Processes that belong to a sandbox: bubblewrap, or envd inside one. Give exits a moment.
for _ in 1 2 3 4 5 6 7 8 9 10; do
  left=$(for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' <"$f" 2>/dev/null; echo; done |
    grep -E '^(bwrap |/opt/abx/abxlua envd)' || true)
  [ -z "$left" ] && break
  sleep 0.5
done
[ -z "$left" ] || fail "sandbox processes survived the run: $left"
echo "run_scenarios: ok ($passed passed, no sandbox process left)"
