#!/usr/bin/env bash
# keep_failed.sh (issue 23 item 5): `abxlua run --keep-failed` on the local provider keeps the
# sandbox of a failed test alive, tagged abx-kept=1 and abx-test=<node id>, with a TTL within
# defaults.keep_failed_ttl; a passing test's sandbox is gone; the printed `sandbox exec` command
# works; `abxlua cleanup --kept --yes` removes the kept one; the config keys fail closed.
# Usage: keep_failed.sh ABXLUA. Run from the source root. Exit 0 when every check held.
# The local platform the run leaves for the kept sandbox lives in a private state dir
# (XDG_STATE_HOME), so other runs on the host are not touched; it is stopped at the end.
set -u
abxlua=$(realpath "$1")
cd "$(dirname "$0")/../.." || exit 2
tmp=$(mktemp -d)
export XDG_STATE_HOME=$tmp/state NO_COLOR=1
mkdir -p "$XDG_STATE_HOME"
serve_pid=""
cleanup() {
  if [ -n "$serve_pid" ]; then
    kill -TERM "$serve_pid" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$serve_pid" 2>/dev/null || break; sleep 0.2; done
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
problems=()
check() { "$@" || problems+=("check failed: $*"); }

"$abxlua" run tests/runner/keep_failed_case.lua -j 1 -s --keep-failed >"$tmp/out" 2>"$tmp/err"
code=$?
[ "$code" = 1 ] || problems+=("run exited $code, expected 1 (one failed test)")
mapfile -t ids < <(sed -n 's/^sandbox-id: \([a-z0-9]*\)$/\1/p' "$tmp/out")
pass_id=${ids[0]:-none} fail_id=${ids[1]:-none}
serve_pid=$(sed -n 's/.*serve, pid \([0-9]*\)).*/\1/p' "$tmp/out" | head -n 1)
[ -n "$serve_pid" ] || problems+=("no 'the local platform keeps running ... pid N' line")
check grep -Eq "^kept 1 sandbox\(es\) of failed tests for 1800 s \(metadata abx-kept=1\):$" "$tmp/out"
check grep -Eq "^  $fail_id  tests/runner/keep_failed_case\.lua::fails and its sandbox is kept$" "$tmp/out"
check grep -Eq "^  remove them: abxlua cleanup --kept --yes$" "$tmp/out"

# listed, tagged, TTL within the bound; the passing test's sandbox is gone
"$abxlua" sandbox list --json >"$tmp/list" 2>"$tmp/list.err" || problems+=("sandbox list failed: $(cat "$tmp/list.err")")
python3 - "$tmp/list" "$pass_id" "$fail_id" <<'PY' || problems+=("sandbox list: see above")
import json, sys, datetime
doc = json.load(open(sys.argv[1]))
by = {s["sandbox_id"]: s for s in doc["sandboxes"]}
bad = []
if sys.argv[2] in by: bad.append("the passing test's sandbox %s is still listed" % sys.argv[2])
s = by.get(sys.argv[3])
if not s:
    bad.append("the failed test's sandbox %s is not listed" % sys.argv[3])
else:
    md = s.get("metadata") or {}
    if md.get("abx-kept") != "1": bad.append("metadata abx-kept is %r, not '1'" % md.get("abx-kept"))
    if md.get("abx-test") != "tests/runner/keep_failed_case.lua::fails and its sandbox is kept":
        bad.append("metadata abx-test is %r" % md.get("abx-test"))
    end = datetime.datetime.fromisoformat(s["end_at"].replace("Z", "+00:00"))
    left = (end - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
    if not (60 <= left <= 1800 + 5): bad.append("TTL left %.0f s, not within 60..1800" % left)
for b in bad: print("keep_failed:", b)
sys.exit(1 if bad else 0)
PY

# the printed command reaches it (run as printed, with its evidence file)
reach=$(sed -n "s/^    reach it: \(abxlua sandbox exec .*\)$/\1/p" "$tmp/out" | head -n 1)
[ -n "$reach" ] || problems+=("no 'reach it:' line")
cmd=${reach/#abxlua/\"\$abxlua\"}
eval "$cmd" >"$tmp/exec" 2>&1 || problems+=("the printed command failed: $reach: $(cat "$tmp/exec")")
eval "${cmd% -- *} -- cat /tmp/kept-evidence" >"$tmp/exec2" 2>&1
check grep -qx "left for a look" "$tmp/exec2"

# cleanup --kept removes it
"$abxlua" cleanup --kept --yes >"$tmp/clean" 2>&1 || problems+=("cleanup --kept --yes failed: $(cat "$tmp/clean")")
check grep -Eq "^  $fail_id  e2e=.*  killed" "$tmp/clean"
"$abxlua" sandbox list --json >"$tmp/list2" 2>/dev/null
grep -q "$fail_id" "$tmp/list2" && problems+=("the kept sandbox $fail_id is still listed after cleanup --kept")

# the config keys fail closed: a TTL outside 60..86400, a switch that is not a boolean
mkdir -p "$tmp/cfg/config"
printf 'defaults:\n  keep_failed_ttl: 10\n' >"$tmp/cfg/config/abxlua.yaml"
"$abxlua" cleanup --kept --config "$tmp/cfg/config/abxlua.yaml" >"$tmp/cfg1" 2>&1
[ $? = 4 ] || problems+=("keep_failed_ttl: 10 is not a usage error")
check grep -q "defaults.keep_failed_ttl must be a whole number of seconds from 60 to 86400, got 10" "$tmp/cfg1"
printf 'defaults:\n  keep_failed_sandboxes: "yes"\n' >"$tmp/cfg/config/abxlua.yaml"
"$abxlua" cleanup --kept --config "$tmp/cfg/config/abxlua.yaml" >"$tmp/cfg2" 2>&1
check grep -q "defaults.keep_failed_sandboxes must be true or false, got yes" "$tmp/cfg2"
printf 'defaults:\n  keep_failed_tll: 100\n' >"$tmp/cfg/config/abxlua.yaml"
"$abxlua" cleanup --kept --config "$tmp/cfg/config/abxlua.yaml" >"$tmp/cfg3" 2>&1
check grep -q "unknown key defaults.keep_failed_tll, did you mean 'keep_failed_ttl'?" "$tmp/cfg3"

# a flavoured run cannot keep yet (`abxlua sandbox serve` runs the default flavour): a usage error
# naming the way out, before anything starts; it was the platform's 401 to the other wire
"$abxlua" run tests/runner/keep_failed_case.lua --keep-failed --flavor opensandbox >"$tmp/fl" 2>&1
[ $? = 4 ] || problems+=("--keep-failed --flavor opensandbox is not a usage error: $(cat "$tmp/fl")")
check grep -q -- "--keep-failed cannot keep the sandboxes of a --flavor opensandbox run" "$tmp/fl"

if [ ${#problems[@]} -gt 0 ]; then
  printf 'FAILED CHECK: %s\n' "${problems[@]}"
  echo "----- run stdout -----"; cat "$tmp/out"; echo "----- run stderr -----"; cat "$tmp/err"
  echo "----- cleanup -----"; cat "$tmp/clean" 2>/dev/null
  exit 1
fi
echo "keep_failed: ok (kept $fail_id, removed by cleanup --kept)"
