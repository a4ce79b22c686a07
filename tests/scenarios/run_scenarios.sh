#!/usr/bin/env bash
# Runs the whole scenario suite against the embedded local platform with -j 4, then checks the
# acceptance promises: exit 0, a summary with 0 failed and at least MIN_PASSED passed, and no
# sandbox process (bwrap or `abxlua envd`) left on the host afterwards.
# Usage: run_scenarios.sh ABXLUA [MIN_PASSED]
set -u
abxlua=$1
min_passed=${2:-40}
out=$(mktemp)
# A TMPDIR of our own: the platform's state dir (and so every bwrap command line of this run's
# sandboxes) lives below it, which tells our processes from any other test's.
run_tmp=$(mktemp -d)
trap 'rm -f "$out"; rm -rf "$run_tmp"' EXIT
TMPDIR=$run_tmp "$abxlua" run scenarios/ -j 4 >"$out" 2>&1
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
# Processes of this run: command line or environment naming our TMPDIR (the platform child and
# every bwrap of its sandboxes). envd runs under bwrap with --die-with-parent. Give exits a moment.
for _ in 1 2 3 4 5 6 7 8 9 10; do
  left=$(for d in /proc/[0-9]*; do
      [ "$d" = "/proc/$$" ] && continue
      if tr '\0' '\n' 2>/dev/null <"$d/environ" | grep -qx "TMPDIR=$run_tmp" ||
         tr '\0' ' ' 2>/dev/null <"$d/cmdline" | grep -qF "$run_tmp"; then
        echo "${d#/proc/}: $(tr '\0' ' ' <"$d/cmdline" 2>/dev/null)"
      fi
    done)
  [ -z "$left" ] && break
  sleep 0.5
done
[ -z "$left" ] || fail "sandbox processes survived the run: $left"
# No mount of the run's platform (overlay roots, volumes) and no cgroup of a platform that is gone.
mounts=$(grep -F "$run_tmp" /proc/self/mountinfo || true)
[ -z "$mounts" ] || fail "mounts of the run survived: $mounts"
# Only below this process's own cgroups (/proc/self/cgroup), where the platform makes its groups
# (platform/sandbox/cgroup.c): the hierarchy is shared with other containers of the host, whose serves'
# pids mean nothing in our pid namespace.
own_abx_dirs() {
  while IFS=: read -r _ ctl path; do
    ctl=${ctl%%,*}; ctl=${ctl#name=}
    [ -n "$ctl" ] || continue
    [ "$path" = / ] && path=
    echo "/sys/fs/cgroup/$ctl$path/abxlua"
  done </proc/self/cgroup
}
stale=$(own_abx_dirs | while read -r a; do
    [ -d "$a" ] || continue
    find "$a" -mindepth 1 -maxdepth 1 -type d -name 'serve.*'
  done | while read -r d; do pid=${d##*/serve.}; [ -d "/proc/$pid" ] || echo "$d"; done)
[ -z "$stale" ] || fail "cgroups of a stopped platform survived: $stale"
echo "run_scenarios: ok ($passed passed; no sandbox process, mount or cgroup left)"
