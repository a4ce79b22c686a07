#!/usr/bin/env bash
# mutate_cli.sh: `abxlua mutate` and `abxlua run --mutant` end to end against the local platform
# (issue 27 part 2):
#   - a green suite: the clean run, then one run per mutant; kill-noop is killed by the test that
#     checks a kill (named in the table), end-at-missing survives (the suite never reads endAt),
#     the score is 1 of 2, exit 1 (a survivor); --json and --html carry the rows and the score;
#   - a red clean run stops mutate (exit 1) naming the failing test, before any mutant;
#   - usage errors exit 4: an unknown mutant (naming the valid ones), a remote provider;
#   - `abxlua run --mutant kill-noop` names the mutant in its first line and fails the suite.
# Usage: mutate_cli.sh ABXLUA. Run from the source root. Exit 0, or 1 naming each failed check.
set -u
abxlua=$1
cd "$(dirname "$0")/../.." || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_STATE_HOME=$tmp/state NO_COLOR=1
fails=0
check() { # check WHAT COMMAND...: a failed check is named, the run goes on
  local what=$1; shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi
}
suite=tests/runner/mutate_suite

# 1. a green suite, one mutant killed and one survivor
"$abxlua" mutate "$suite/green" --mutants kill-noop,end-at-missing --json "$tmp/m.json" \
  --html "$tmp/m.html" >"$tmp/m.out" 2>"$tmp/m.err"
code=$?
cat "$tmp/m.out" "$tmp/m.err"
check "a survivor makes mutate exit 1 (got $code)" test "$code" = 1
check "the clean run is reported green" grep -qE '^mutate: clean run green: 1 passed, 0 skipped' "$tmp/m.err"
check "kill-noop is killed by the test that checks a kill" \
  grep -qE '^kill-noop +killed +[0-9.]+ s +tests/runner/mutate_suite/green/kill_checked\.lua::a killed sandbox is gone$' "$tmp/m.out"
check "end-at-missing survives, and its row says what the lie changes" \
  grep -qE '^end-at-missing +SURVIVED .*no test failed: the suite misses this lie' "$tmp/m.out"
check "the score line: 1 of 2 killed" grep -qE '^mutation score: 1 of 2 applicable mutants killed \(50%\), 1 survived' "$tmp/m.out"
python3 - "$tmp/m.json" "$tmp/m.html" <<'PY' || { echo "FAIL the --json and --html results"; fails=$((fails + 1)); }
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "abxlua-mutate/1", d.get("format")
assert d["score"]["killed"] == 1 and d["score"]["applicable"] == 2 and d["score"]["survived"] == 1, d["score"]
rows = {r["name"]: r for r in d["mutants"]}
assert rows["kill-noop"]["status"] == "killed" and rows["kill-noop"]["tests"], rows["kill-noop"]
assert rows["end-at-missing"]["status"] == "survived" and rows["end-at-missing"]["source"], rows["end-at-missing"]
assert d["clean"]["exit_code"] == 0 and d["clean"]["counts"]["passed"] == 1, d["clean"]
page = open(sys.argv[2]).read()
assert "Mutation score: 1 of 2 killed (50%)" in page and 'class="survived"' in page, page[:300]
print("ok   --json and --html carry the rows and the score")
PY

# 2. a red clean run stops before any mutant
"$abxlua" mutate "$suite/red" --mutants kill-noop >"$tmp/r.out" 2>"$tmp/r.err"
code=$?
check "a red clean run exits 1 (got $code)" test "$code" = 1
check "it names the failing test" grep -qF 'tests/runner/mutate_suite/red/red.lua::this test fails on a truthful platform' "$tmp/r.err"
check "no mutant ran" bash -c "! grep -q '\[1/' '$tmp/r.err'"

# 3. usage errors
"$abxlua" mutate "$suite/green" --mutants no-such-lie >"$tmp/u.out" 2>&1
code=$?
check "an unknown mutant exits 4 (got $code)" test "$code" = 4
check "it names the valid mutants" grep -qE "unknown mutant 'no-such-lie' \(valid: all, or any of .*kill-noop" "$tmp/u.out"
"$abxlua" mutate "$suite/green" --provider e2b >"$tmp/p.out" 2>&1
code=$?
check "a remote provider exits 4 (got $code)" test "$code" = 4
check "it says mutate needs a local provider" grep -qF 'mutate needs a local provider' "$tmp/p.out"

# 4. abxlua run --mutant
"$abxlua" run "$suite/green" --mutant kill-noop >"$tmp/k.out" 2>&1
code=$?
check "run --mutant kill-noop fails the suite (got $code)" test "$code" = 1
check "its first line names the mutant" bash -c "head -1 '$tmp/k.out' | grep -qF 'with mutant kill-noop'"
"$abxlua" run "$suite/green" --mutant kill-noop --provider e2b >"$tmp/e.out" 2>&1
code=$?
check "run --mutant on a remote provider exits 4 (got $code)" test "$code" = 4

echo "$fails failed"
[ "$fails" = 0 ]
