#!/usr/bin/env bash
# nonroot.sh (issue 13 part 8): the local provider run by a user without root or CAP_SYS_ADMIN
# ends in one usage error that says so and quotes serve's cause (exit 4, no Lua traceback). (The
# serve logs' retention: serve_log_keep.sh.) Usage: nonroot.sh ABXLUA. Needs setpriv (util-linux) and root to drop to nobody; else 77.
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

if [ "$failures" -gt 0 ]; then echo "nonroot.sh: $failures check(s) failed"; exit 1; fi
echo "nonroot.sh: all checks held"
