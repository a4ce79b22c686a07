#!/usr/bin/env bash
# nonroot.sh (issue 13 part 8): the local provider run by a user without root or CAP_SYS_ADMIN
# ends in one usage error that says so and quotes serve's cause (exit 4, no Lua traceback); and
# the serve logs of the state dir are pruned to the newest KEEP (abx.run.provider.KEEP_SERVE_LOGS,
# 20). Usage: nonroot.sh ABXLUA. Needs setpriv (util-linux) and root to drop to nobody; else 77.
set -u
abxlua=$1
case $abxlua in /*) ;; *) abxlua=$PWD/$abxlua ;; esac
[ "$(id -u)" = 0 ] && command -v setpriv >/dev/null || { echo "needs root and setpriv"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAILED CHECK $*"; failures=$((failures + 1)); }
# a project nobody can read, with the binary beside it (the build dir may not be readable to it)
mkdir -p "$tmp/p/scenarios" "$tmp/home"
cp "$abxlua" "$tmp/abxlua"
cat >"$tmp/p/scenarios/one.lua" <<'LUA'
local t = require("abx.test")
t.test("lists", function(ctx) t.eq(type(ctx.conn:list_page({ limit = 1 })), "table") end)
LUA
chmod -R a+rwX "$tmp"
chmod 755 "$tmp"
out=$(cd "$tmp/p" && setpriv --reuid=65534 --regid=65534 --clear-groups env -u CI HOME="$tmp/home" \
  XDG_STATE_HOME="$tmp/home/state" "$tmp/abxlua" run scenarios/one.lua 2>&1)
rc=$?
[ "$rc" = 4 ] || fail "non-root run exited $rc, expected 4: $out"
grep -Eq '^abxlua: error: the local provider needs root \(or CAP_SYS_ADMIN\) .*: .*Operation not permitted; run as root' <<<"$out" ||
  fail "no one-line error naming root and quoting the cause: $out"
grep -q 'stack traceback' <<<"$out" && fail "a Lua traceback was printed: $out"
grep -q 'internal error' <<<"$out" && fail "reported as an internal error: $out"

# pruning: 25 old serve logs, one run as root: the newest 20 stay (the run's own is removed when
# it is clean), the oldest 5 go
state=$tmp/rootstate
mkdir -p "$state/abxlua"
chmod 700 "$state/abxlua"
for i in $(seq -w 1 25); do
  touch -d "2026-01-01 00:00:$i" "$state/abxlua/serve-old$i.log"
done
(cd "$tmp/p" && env -u CI XDG_STATE_HOME="$state" "$abxlua" run scenarios/one.lua >"$tmp/root.out" 2>&1) ||
  fail "the root run failed: $(cat "$tmp/root.out")"
left=$(ls "$state/abxlua" | grep -c '^serve-.*\.log$')
[ "$left" = 20 ] || fail "expected 20 serve logs after pruning, found $left: $(ls "$state/abxlua")"
for i in 01 02 03 04 05; do [ -e "$state/abxlua/serve-old$i.log" ] && fail "the oldest log serve-old$i.log was kept"; done
[ -e "$state/abxlua/serve-old25.log" ] || fail "the newest old log was pruned"
if [ "$failures" -gt 0 ]; then echo "nonroot.sh: $failures check(s) failed"; exit 1; fi
echo "nonroot.sh: all checks held"
