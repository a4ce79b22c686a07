#!/usr/bin/env bash
# The engine runs 500 tests with -j 64 and accounts for every outcome (issue 5, load).
# Prints the wall time and peak RSS. Usage: engine_load.sh ABXLUA
set -u
abxlua=$1
cd "$(dirname "$0")/../.." || exit 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s.%N)
NO_COLOR=1 /usr/bin/time -f "maxrss_kb=%M" "$abxlua" run tests/load/engine_500.lua -j 64 >"$out" 2>&1
rc=$?
end=$(date +%s.%N)
last=$(grep -E '^[0-9]+ passed, ' "$out" | tail -n 1)
# result lines carry the duration; the short test summary's "FAILED file::name - ..." lines do not
lines=$(grep -cE '^(PASSED|FAILED|SKIPPED) +tests/load/engine_500\.lua::test [0-9]{3} \([0-9.]+s\)' "$out")
unique=$(grep -oE '::test [0-9]{3} \(' "$out" | sort -u | wc -l)
rss=$(sed -nE 's/^maxrss_kb=([0-9]+)/\1/p' "$out")
printf 'engine load: 500 tests -j 64 in %.2fs, peak RSS %d KiB; %s\n' \
  "$(awk -v a="$start" -v b="$end" 'BEGIN{print b-a}')" "${rss:-0}" "$last"
fail() { echo "engine_load: FAIL: $*"; tail -n 20 "$out"; exit 1; }
[ "$rc" -eq 1 ] || fail "exit $rc, expected 1 (50 tests fail on purpose)"
[[ "$last" =~ ^430\ passed,\ 50\ failed,\ 20\ skipped,\ 0\ xfailed ]] || fail "summary: $last"
[ "$lines" -eq 500 ] || fail "$lines result lines, expected 500"
[ "$unique" -eq 500 ] || fail "$unique distinct tests reported, expected 500"
echo "engine_load: ok"
