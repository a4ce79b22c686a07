#!/usr/bin/env bash
# The second suite of tests/contention/run.sh: runs `ABXLUA run ARGS...` again and again from the
# current directory (run.sh gives it a copy of scenarios/ and config/, its own XDG_STATE_HOME and
# TMPDIR), at most 50 times and not after MAX_SECONDS, each run bounded by RUN_TIMEOUT seconds;
# appends "load<TAB>i<TAB>json<TAB>log<TAB>wall_s<TAB>exit" to OUT/load.tsv after each.
# Usage: load_suite.sh OUT MAX_SECONDS RUN_TIMEOUT ABXLUA ARGS...
set -u
out=$1 max=$2 run_timeout=$3
shift 3
deadline=$(($(date +%s) + max))
for i in $(seq 1 50); do
  [ "$(date +%s)" -lt "$deadline" ] || break
  [ "$i" -eq 1 ] || sleep 1 # a run that fails at once does not spin
  t0=$(date +%s.%N)
  timeout -k 60 "$run_timeout" "$1" run "${@:2}" --json "$out/load-$i.json" >"$out/load-$i.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  printf 'load\t%s\t%s\t%s\t%s\t%s\n' "$i" "$out/load-$i.json" "$out/load-$i.log" \
    "$(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }")" "$rc" >>"$out/load.tsv"
done
