#!/usr/bin/env bash
# cleanup.sh: after `abxlua run tests/runner/fixtures.lua`, nothing of the run is left on the host:
# no `abxlua serve` of the run, no bwrap of its sandboxes, no `abxlua envd` inside them, the
# platform's port is closed and its log is removed (the run passed).
# Usage: cleanup.sh ABXLUA. Run from the source root. Exit 0 when clean, 1 with the leftovers.
#
# Other runs may be going on on the same host, so a process counts as this run's when it carries
# the run's E2E_RUN_ID in its environment (the engine and its platform child), or names one of the
# run's sandbox ids in its command line (bwrap --hostname <id>) or mount table (envd inside it).
# bwrap and envd processes of other runs are listed as a note, not a failure.
set -u
abxlua=$1
cd "$(dirname "$0")/../.." || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run_id="cleanupcase${$}x${RANDOM}"

# -s: the case prints its sandbox ids, which a passing test's captured output would not show
E2E_RUN_ID=$run_id NO_COLOR=1 "$abxlua" run tests/runner/fixtures.lua -j 1 -s >"$tmp/out" 2>"$tmp/err"
code=$?
problems=()
[ "$code" = 0 ] || problems+=("abxlua run tests/runner/fixtures.lua exited $code, expected 0")

mapfile -t ids < <(sed -n 's/^sandbox-id: \([a-z0-9]*\)$/\1/p' "$tmp/out")
[ "${#ids[@]}" = 3 ] || problems+=("expected 3 'sandbox-id:' lines from fixtures.lua, got ${#ids[@]}")
port=$(sed -n 's|^abxlua .*(http://127\.0\.0\.1:\([0-9]*\)).*|\1|p' "$tmp/out" | head -n 1)
[ -n "$port" ] || problems+=("no platform URL in the run's header line")

# processes stop asynchronously after their parent exits: give them a moment
leftovers() {
  local p c pid
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    [ "$pid" = "$$" ] && continue
    c=$(tr "\0" " " 2>/dev/null <"$p/cmdline") || continue
    [ -n "$c" ] || continue
    if tr "\0" "\n" 2>/dev/null <"$p/environ" | grep -qx "E2E_RUN_ID=$run_id"; then
      echo "$pid (has E2E_RUN_ID=$run_id): $c"
      continue
    fi
    case "$c" in
      *bwrap*|*"abxlua envd"*|*"abxlua serve"*) ;;
      *) continue ;;
    esac
    local id mine=""
    for id in "${ids[@]}"; do
      if [[ "$c" == *"$id"* ]] || grep -q -- "$id" "$p/mountinfo" 2>/dev/null; then mine=$id; fi
    done
    if [ -n "$mine" ]; then
      echo "$pid (sandbox $mine): ${c:0:200}"
    else
      echo "$pid FOREIGN: ${c:0:120}" >>"$tmp/foreign"
    fi
  done
}
left=""
for _ in 1 2 3 4 5 6 7 8 9 10; do
  : >"$tmp/foreign"
  left=$(leftovers)
  [ -z "$left" ] && break
  sleep 0.5
done
[ -z "$left" ] || problems+=("processes of the run are still alive 5 s after it ended:
$left")

if [ -n "$port" ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  problems+=("the platform's port $port still accepts connections")
fi
log="${XDG_STATE_HOME:-$HOME/.local/state}/abxlua/serve-$run_id.log"
[ ! -e "$log" ] || problems+=("the platform log $log was kept although the run passed")
for id in "${ids[@]}"; do
  for d in "${TMPDIR:-/tmp}"/abxlua-serve.*/"$id"; do
    [ -e "$d" ] && problems+=("the sandbox state directory $d is left on disk")
  done
done

echo "run $run_id: exit $code, sandboxes: ${ids[*]:-none}, platform port ${port:-?}"
if [ -s "$tmp/foreign" ]; then
  echo "note: bwrap/envd/serve processes of other runs on this host (not counted):"
  sed 's/^/  /' "$tmp/foreign"
fi
if [ ${#problems[@]} -eq 0 ]; then
  echo "ok: no process, port, log or sandbox directory of the run is left"
  exit 0
fi
echo "----- stdout -----"; cat "$tmp/out"
echo "----- stderr -----"; cat "$tmp/err"
echo "------------------"
for p in "${problems[@]}"; do echo "FAILED CHECK: $p"; done
exit 1
