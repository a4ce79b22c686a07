#!/usr/bin/env bash
# run_case.sh: runs one runner case (a scenario file with a known outcome) and checks the outcome.
#
#   run_case.sh ABXLUA CASE.lua LAST_LINE_REGEX EXIT_CODE
#
# Runs `ABXLUA run CASE.lua <args>` from the source root (config/abxlua.yaml is found relative to
# the working directory), with <args> from the case's `-- args:` header line (default: -j 1; shell
# quoting is honoured, e.g. -m "not e2e_slow").
# Checks, and lists every check that did not hold:
#   - the last line of stdout matches LAST_LINE_REGEX (grep -E);
#   - the exit code is EXIT_CODE;
#   - every `-- expect-line: REGEX` of the case's header matches a line of stdout+stderr;
#   - no `-- expect-no-line: REGEX` matches any line;
#   - the `-- expect-in-order: REGEX` lines match lines of stdout+stderr in the order given (each
#     one a line after the line the previous one matched);
#   - the run took at most `-- expect-max-seconds: N` seconds, when given.
# Exit 0 when every check held, 1 otherwise (the captured output is printed then).
set -u
if [ $# -ne 4 ]; then
  echo "usage: $0 ABXLUA CASE.lua LAST_LINE_REGEX EXIT_CODE" >&2
  exit 2
fi
abxlua=$1 case_file=$2 last_re=$3 want_exit=$4
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 2
case_rel=${case_file#"$root"/}
[ -f "$case_rel" ] || { echo "run_case.sh: no such case: $case_file" >&2; exit 2; }

# header directives: comment lines at the top of the case file
directive() { sed -n "s/^-- $1: //p" "$case_rel"; }
args=$(directive args | head -n 1)
[ -n "$args" ] || args="-j 1"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s.%N)
eval "argv=($args)"
NO_COLOR=1 "$abxlua" run "$case_rel" "${argv[@]}" >"$tmp/out" 2>"$tmp/err"
code=$?
end=$(date +%s.%N)
elapsed=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
cat "$tmp/out" "$tmp/err" >"$tmp/all"

problems=()
last=$(tail -n 1 "$tmp/out")
if ! printf '%s\n' "$last" | grep -Eq -- "$last_re"; then
  problems+=("last line of stdout does not match /$last_re/: got '$last'")
fi
if [ "$code" != "$want_exit" ]; then
  problems+=("exit code $code, expected $want_exit")
fi
while IFS= read -r re; do
  [ -n "$re" ] || continue
  grep -Eq -- "$re" "$tmp/all" || problems+=("no line matches /$re/")
done < <(directive expect-line)
while IFS= read -r re; do
  [ -n "$re" ] || continue
  if grep -Eq -- "$re" "$tmp/all"; then
    problems+=("a line matches /$re/ but must not: $(grep -E -m1 -- "$re" "$tmp/all")")
  fi
done < <(directive expect-no-line)
after=0
while IFS= read -r re; do
  [ -n "$re" ] || continue
  n=$(tail -n +"$((after + 1))" "$tmp/all" | grep -En -m1 -- "$re" | cut -d: -f1)
  if [ -z "$n" ]; then
    problems+=("no line after line $after matches /$re/ (expect-in-order)")
  else
    after=$((after + n))
  fi
done < <(directive expect-in-order)
max=$(directive expect-max-seconds | head -n 1)
if [ -n "$max" ] && awk -v e="$elapsed" -v m="$max" 'BEGIN { exit !(e > m) }'; then
  problems+=("the run took ${elapsed}s, more than the allowed ${max}s")
fi

echo "case: $case_rel (abxlua run $case_rel $args): exit $code in ${elapsed}s"
if [ ${#problems[@]} -eq 0 ]; then
  echo "ok: $(grep -c '^-- expect-' "$case_rel") header expectations, last line, exit code"
  exit 0
fi
echo "----- stdout -----"; cat "$tmp/out"
echo "----- stderr -----"; cat "$tmp/err"
echo "------------------"
for p in "${problems[@]}"; do echo "FAILED CHECK: $p"; done
exit 1
