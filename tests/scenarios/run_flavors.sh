#!/usr/bin/env bash
# The whole scenario suite once per local flavour (issue 12 part 5): `abxlua run scenarios/
# --flavor NAME` for each flavour `abxlua serve --flavor` knows, each with run_scenarios.sh's
# promises (exit 0, 0 failed, at least MIN_PASSED passed, nothing left behind), then a table of
# passed and skipped per flavour. A test a flavour cannot run must be skipped by capability with
# its reason, never failed.
# Usage: run_flavors.sh ABXLUA [MIN_PASSED] [FLAVOUR...]   (default: every flavour)
set -u
abxlua=$1
min_passed=${2:-40}
shift 2 2>/dev/null || shift $#
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -gt 0 ]; then flavours=("$@"); else
  # the names from `abxlua run --help` (abx.run.flavor.NAMES), so a new flavour is run too
  mapfile -t flavours < <("$abxlua" run --help | tr -d '\n' | sed -nE 's/.*--flavor`: ([a-z0-9, -]+)\).*/\1/p' | tr ',' '\n' | tr -d ' ')
fi
[ ${#flavours[@]} -gt 0 ] || { echo "run_flavors: FAIL: no flavour names in abxlua run --help"; exit 1; }
rows=() rc=0
for f in "${flavours[@]}"; do
  echo "=== flavour $f"
  out=$(ABX_FLAVOR=$f bash "$here/run_scenarios.sh" "$abxlua" "$min_passed" 2>&1)
  frc=$?
  summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' <<<"$out" | tail -n 1)
  if [ $frc -ne 0 ]; then
    echo "$out" | grep -E '^(FAILED|ERROR|run_scenarios: FAIL)' | head -40
    rc=1
  fi
  rows+=("$(printf '%-17s %s%s' "$f" "${summary:-no summary}" "$([ $frc -ne 0 ] && echo '  <- FAILED')")")
done
echo "=== the whole suite per flavour"
printf '%s\n' "${rows[@]}"
exit $rc
