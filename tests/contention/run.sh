#!/usr/bin/env bash
# The contention harness (issue 22, `make test-contention`; not part of `make test`): runs the
# `make run` selection N times while the machine is as busy as a shared CI runner, then the cached
# template run (`abxlua run scenarios/templates/`) once, and prints a table of the runs (passed,
# failed, skipped, wall seconds), the slowest tests and the names of failed tests
# (tests/contention/report.py, from each run's --json report).
#
# The load: 2 x nproc CPU-bound loops AND a second, independent run of the same selection in a loop
# beside it, from a copy of config/ and the selection's paths (its own .abxlua_cache), with its own
# XDG_STATE_HOME (its own platform logs and template build cache: core.state_dir(),
# bindings/core_files.c; CONTENTION_LOAD_STATE, default build/contention/load-state, kept between
# harness runs so that its builds are cached too) and its own TMPDIR (its platform's sandboxes). CPU loops alone did not
# reproduce the false reds of issue 22; concurrent sandbox-heavy work does. --quiet runs without
# any load: the baseline whose wall times go beside the loaded ones.
#
# Usage: tests/contention/run.sh [--runs N] [--skip-templates] [--quiet] [--out DIR] ABXLUA
#   --runs N          runs of the main selection (default CONTENTION_RUNS, else 5)
#   --skip-templates  no template run (also CONTENTION_SKIP_TEMPLATES=1)
#   --quiet           no load (also CONTENTION_QUIET=1)
#   --out DIR         where the logs and reports go (default build/contention/<UTC time>)
# The selection is the Makefile's RUN_ARGS (`make -s run-args`), or ABX_RUN_ARGS when set.
# Bounds: each run is ended after CONTENTION_RUN_TIMEOUT seconds (default 1800); the load stops
# with this script (trap on EXIT, INT, TERM: TERM to the second suite so that it cleans up its
# sandboxes, KILL after 90 s) and on its own after CONTENTION_LOAD_MAX seconds (default 4 h), the
# second suite after at most 50 runs.
# Exit: 1 when a run of the main selection failed (or the template run failed outside the
# allow-list CONTENTION_TEMPLATE_ALLOW, default deepseek-harness,hermes-agent: their builds need
# what the registries reachable here lack), 2 on a usage error, else 0.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

runs=${CONTENTION_RUNS:-5}
skip_templates=${CONTENTION_SKIP_TEMPLATES:-0}
quiet=${CONTENTION_QUIET:-0}
run_timeout=${CONTENTION_RUN_TIMEOUT:-1800}
load_max=${CONTENTION_LOAD_MAX:-14400}
allow=${CONTENTION_TEMPLATE_ALLOW:-deepseek-harness,hermes-agent}
load_state=${CONTENTION_LOAD_STATE:-$root/build/contention/load-state}
out=
abxlua=
usage() { echo "usage: tests/contention/run.sh [--runs N] [--skip-templates] [--quiet] [--out DIR] ABXLUA" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --runs) [ $# -ge 2 ] || usage; runs=$2; shift 2 ;;
    --skip-templates) skip_templates=1; shift ;;
    --quiet) quiet=1; shift ;;
    --out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    -*) echo "run.sh: unknown option $1 (valid: --runs N, --skip-templates, --quiet, --out DIR)" >&2; exit 2 ;;
    *) [ -z "$abxlua" ] || usage; abxlua=$1; shift ;;
  esac
done
[ -n "$abxlua" ] || usage
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --runs must be a whole number >= 1, got '$runs'" >&2; exit 2; }
abxlua=$(cd "$(dirname "$abxlua")" && pwd)/$(basename "$abxlua")
[ -x "$abxlua" ] || { echo "run.sh: $abxlua is not an executable (build first: make build)" >&2; exit 2; }
cd "$root"
if [ -n "${ABX_RUN_ARGS:-}" ]; then
  run_args=$ABX_RUN_ARGS
else
  run_args=$(make -s --no-print-directory run-args) || { echo "run.sh: make run-args failed" >&2; exit 2; }
fi
read -r -a args <<<"$run_args"
out=${out:-$root/build/contention/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
tsv=$out/runs.tsv
: >"$tsv"

cpu_pids=()
load_pid=
run_pid=
cleanup() {
  trap - EXIT INT TERM
  if [ -n "$run_pid" ]; then # an interrupted run: TERM (timeout passes it on), abxlua cleans up
    kill -TERM "$run_pid" 2>/dev/null
    wait "$run_pid" 2>/dev/null
  fi
  for p in "${cpu_pids[@]}"; do kill "$p" 2>/dev/null; done
  if [ -n "$load_pid" ] && kill -0 -- "-$load_pid" 2>/dev/null; then
    echo "contention: stopping the second suite (process group $load_pid)"
    kill -TERM -- "-$load_pid" 2>/dev/null
    # its abxlua cleans up its sandboxes on TERM: wait for the whole group and the platform's
    # mounts below its TMPDIR to be gone (the loop's bash ends first)
    for _ in $(seq 1 90); do
      kill -0 -- "-$load_pid" 2>/dev/null || grep -qF "$out/load-tmp" /proc/self/mountinfo || break
      sleep 1
    done
    kill -KILL -- "-$load_pid" 2>/dev/null
  fi
  load_pid=
  wait 2>/dev/null
  grep -qF "$out/load-tmp" /proc/self/mountinfo || rm -rf --one-file-system "$out/load-copy" "$out/load-tmp"
}
trap cleanup EXIT
trap 'echo "contention: interrupted"; exit 130' INT TERM

# One run: its log and --json report in $out, a line in runs.tsv.
# Usage: one_run KIND N ARGS...
one_run() {
  local kind=$1 n=$2; shift 2
  local js=$out/$kind-$n.json log=$out/$kind-$n.log t0 t1 rc
  t0=$(date +%s.%N)
  # in the background and waited for, so that a signal's trap runs at once, not after the run
  timeout -k 60 "$run_timeout" "$abxlua" run "$@" --json "$js" >"$log" 2>&1 </dev/null &
  run_pid=$!
  wait "$run_pid"
  rc=$?
  run_pid=
  t1=$(date +%s.%N)
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$n" "$js" "$log" "$(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }")" "$rc" >>"$tsv"
  echo "contention: $kind run $n: $(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1) (exit $rc)"
}

n_cpu=$(nproc 2>/dev/null || echo 2)
if [ "$quiet" = 1 ]; then
  echo "contention: load: none (quiet baseline)"
else
  for _ in $(seq 1 $((2 * n_cpu))); do
    # $0 names the harness's out dir, so that its loops can be told from any other process's
    timeout "$load_max" bash -c 'while :; do :; done' "contention-cpu-loop:$out" &
    cpu_pids+=($!)
  done
  # the second suite: a copy of config/ and the selection (the project root is the config's parent,
  # so its .abxlua_cache is the copy's), its own state dir (kept between harness runs, so that its
  # template builds are cached as the main runs' are) and TMPDIR
  mkdir -p "$out/load-copy" "$out/load-tmp" "$load_state"
  cp -r config "$out/load-copy/"
  for a in "${args[@]}"; do # the selection's paths, at the same place in the copy
    case $a in -*) ;; *) [ -e "$a" ] && cp -r --parents "$a" "$out/load-copy/" ;; esac
  done
  rm -rf "$out/load-copy/.abxlua_cache"
  # setsid: its own process group, which cleanup signals whole
  (cd "$out/load-copy" && exec setsid env XDG_STATE_HOME="$load_state" TMPDIR="$out/load-tmp" \
     bash "$here/load_suite.sh" "$out" "$load_max" "$run_timeout" "$abxlua" "${args[@]}") </dev/null &
  load_pid=$!
  # the main runs start once the second suite's first run has (at most 30 s)
  for _ in $(seq 1 60); do [ -e "$out/load-1.log" ] && break; sleep 0.5; done
  echo "contention: load: $((2 * n_cpu)) CPU loops and a second suite run in a loop (pid $load_pid)"
fi
echo "contention: main selection: abxlua run ${args[*]} ($runs run(s)); logs and reports in $out"

for i in $(seq 1 "$runs"); do
  one_run main "$i" "${args[@]}"
done
if [ "$skip_templates" = 1 ]; then
  echo "contention: template run skipped"
else
  one_run templates 1 scenarios/templates/
fi
cleanup
trap 'exit 130' INT TERM
[ -f "$out/load.tsv" ] && cat "$out/load.tsv" >>"$tsv"
echo
echo "load: $([ "$quiet" = 1 ] && echo "none (quiet)" || echo "$((2 * n_cpu)) CPU loops + a second suite") on $n_cpu CPUs"
python3 "$here/report.py" "$tsv" "$allow" 15
