#!/usr/bin/env bash
# valgrind memcheck of a scenario run (issue 5, item 7): the engine (not the platform child) must
# show no memory error and no definite leak. Usage: memcheck.sh ABXLUA
set -u
abxlua=$1
cd "$(dirname "$0")/../.." || exit 2
command -v valgrind >/dev/null || { echo "valgrind is not installed"; exit 77; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=9 \
  --trace-children=no "$abxlua" run scenarios/01_platform.lua scenarios/03_commands.lua -j 2 \
  >"$log" 2>&1
rc=$?
grep -E 'passed, |ERROR SUMMARY|definitely lost|in use at exit' "$log"
[ "$rc" -eq 0 ] || { echo "memcheck: FAIL (exit $rc)"; tail -n 60 "$log"; exit 1; }
grep -qE 'ERROR SUMMARY: 0 errors' "$log" || { echo "memcheck: FAIL (errors)"; exit 1; }
echo "memcheck: ok"
