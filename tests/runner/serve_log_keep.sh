#!/usr/bin/env bash
# serve_log_keep.sh (issue 22 item 4): the serve log a run names stays. Serve logs in the state dir
# are removed by age (abx.run.provider.SERVE_LOG_MAX_AGE_DAYS, 7), never by count: a failed run
# keeps and names its log; a later clean run beside 25 fresh logs of other runs removes its own
# log and the one 8 days old, and keeps every fresh one, the failed run's and one 2 days old.
# Usage: serve_log_keep.sh ABXLUA. Needs root and bubblewrap (the local platform); else 77.
set -u
abxlua=$1
case $abxlua in /*) ;; *) abxlua=$PWD/$abxlua ;; esac
[ "$(id -u)" = 0 ] && [ -x /usr/bin/bwrap ] || { echo "needs root and /usr/bin/bwrap"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAILED CHECK $*"; failures=$((failures + 1)); }
mkdir -p "$tmp/p/scenarios" "$tmp/state/abxlua"
chmod 700 "$tmp/state/abxlua"
cat >"$tmp/p/scenarios/one.lua" <<'LUA'
local t = require("abx.test")
t.test("lists", function(ctx)
  t.eq(type(ctx.conn:list_page({ limit = 1 })), "table")
  if os.getenv("E2E_FAIL") then t.fail("planted failure") end
end)
LUA
logs=$tmp/state/abxlua
for i in $(seq -w 1 25); do : >"$logs/serve-other$i.log"; done # other runs' logs, just written
: >"$logs/serve-week.log"
touch -d "8 days ago" "$logs/serve-week.log"
: >"$logs/serve-twodays.log"
touch -d "2 days ago" "$logs/serve-twodays.log"
run() { # run RUN_ID [E2E_FAIL]: one run against the local platform, output in $tmp/RUN_ID.out
  (cd "$tmp/p" && env -u CI -u E2E_FAIL ${2:+E2E_FAIL=1} NO_COLOR=1 XDG_STATE_HOME="$tmp/state" \
    E2E_RUN_ID="$1" "$abxlua" run scenarios/one.lua >"$tmp/$1.out" 2>&1)
}

run keepfailed 1
rc=$?
[ "$rc" = 1 ] || fail "the failing run exited $rc, expected 1: $(tail -20 "$tmp/keepfailed.out")"
[ -s "$logs/serve-keepfailed.log" ] || fail "the failed run's log is not kept"
grep -q "^local platform log: $logs/serve-keepfailed.log$" "$tmp/keepfailed.out" ||
  fail "the failed run does not name its log: $(tail -20 "$tmp/keepfailed.out")"

run keepclean
rc=$?
[ "$rc" = 0 ] || fail "the clean run exited $rc, expected 0: $(tail -20 "$tmp/keepclean.out")"
[ -e "$logs/serve-keepclean.log" ] && fail "the clean run's own log was kept"
[ -e "$logs/serve-keepfailed.log" ] || fail "the failed run's log was removed by the next run"
gone=""
for i in $(seq -w 1 25); do [ -e "$logs/serve-other$i.log" ] || gone="$gone serve-other$i.log"; done
[ -z "$gone" ] || fail "fresh logs of other runs were removed:$gone"
[ -e "$logs/serve-twodays.log" ] || fail "the log 2 days old was removed"
[ -e "$logs/serve-week.log" ] && fail "the log 8 days old was kept"
if [ "$failures" -gt 0 ]; then echo "serve_log_keep.sh: $failures check(s) failed"; exit 1; fi
echo "serve_log_keep.sh: all checks held"
