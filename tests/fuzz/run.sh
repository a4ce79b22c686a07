#!/usr/bin/env bash
# Runs every libFuzzer target built in BUILD_DIR for SECONDS each, on a scratch copy of its seed
# corpus (the committed corpus never grows), then prints a table of executions and coverage taken
# from libFuzzer's final "#N DONE cov: X ft: Y" line. Exits 1 when any target crashed, leaked,
# timed out or ran out of memory; its log tail and the crashing input are kept under
# BUILD_DIR/fuzz-out/<target>/.
# Usage: tests/fuzz/run.sh BUILD_DIR SECONDS [TARGET...]   (default: every tests/fuzz/fuzz_*.c)
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:?usage: run.sh BUILD_DIR SECONDS [TARGET...]}
seconds=${2:?usage: run.sh BUILD_DIR SECONDS [TARGET...]}
shift 2
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for src in tests/fuzz/fuzz_*.c; do
    t=${src#tests/fuzz/fuzz_}
    targets+=("${t%.c}")
  done
fi
out="$build/fuzz-out"
rm -rf "$out"
mkdir -p "$out"
rows=()
failed=0
for t in "${targets[@]}"; do
  bin="$build/fuzz_$t"
  if [ ! -x "$bin" ]; then
    rows+=("$(printf '%-10s %-8s %12s %8s %8s %8s' "$t" "skipped" "-" "-" "-" "-")")
    echo "fuzz: $t: not built (its source under test is absent), skipped"
    continue
  fi
  dir="$out/$t"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp -r "tests/fuzz/corpus/$t/." "$dir/corpus/" 2>/dev/null || true
  echo "fuzz: $t for ${seconds}s (seeds: $(ls "$dir/corpus" | wc -l))"
  start=$(date +%s)
  "$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$dir/artifacts/" "$dir/corpus" >"$dir/log" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$dir/log" | tail -1)
  execs=$(sed -nE 's/^stat::number_of_executed_units:[[:space:]]*([0-9]+).*/\1/p' "$dir/log" | tail -1)
  cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$done_line")
  ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$done_line")
  corp=$(sed -nE 's/.* corp: ([0-9]+)\/.*/\1/p' <<<"$done_line")
  status=ok
  if [ $rc -ne 0 ] || [ -z "$done_line" ]; then
    status=FAILED
    failed=1
    echo "fuzz: $t FAILED (exit $rc); last lines of $dir/log:"
    tail -n 60 "$dir/log" | sed 's/^/  | /'
    ls "$dir/artifacts" | sed "s|^|fuzz: $t: input kept: $dir/artifacts/|"
  else
    echo "  $done_line"
  fi
  rows+=("$(printf '%-10s %-8s %12s %8s %8s %8s %6ss' "$t" "$status" "${execs:--}" "${cov:--}" \
    "${ft:--}" "${corp:--}" "$took")")
done
echo
echo "fuzz summary (${seconds}s per target; cov = edges, ft = features, corpus = units after the run)"
printf '%-10s %-8s %12s %8s %8s %8s %7s\n' target status executions cov ft corpus time
for r in "${rows[@]}"; do echo "$r"; done
# A CI log is often read from its end only: each failure's cause and its input (base64, one
# line) come last, so the crash can be replayed from the log alone (tests/fuzz/replay.c).
for t in "${targets[@]}"; do
  dir="$out/$t"
  grep -q FAILED <<<"$(printf '%s\n' "${rows[@]}" | grep "^$t ")" || continue
  cause=$(grep -m 3 -E 'ERROR|fuzz_[a-z_]+: |envd_jail: |ALARM|out-of-memory|deadly signal|SUMMARY' "$dir/log")
  echo "fuzz: $t failed: ${cause:-see $dir/log}"
  for a in "$dir"/artifacts/*; do
    [ -f "$a" ] && echo "fuzz: $t input $(basename "$a") ($(stat -c %s "$a") bytes), base64: $(base64 -w0 "$a")"
  done
done
exit $failed
