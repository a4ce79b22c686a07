#!/usr/bin/env bash
# The peers' own test suites against abxlua's local flavours, as one command (issue 25 item 5;
# `make peer-suites`, never part of `make test`: npm installs and many minutes).
#   bash tests/peer_suites/run.sh path/to/abxlua [suite ...]     (default: every suite, in order)
# Suites, each a script tests/peer_suites/<script> run as `bash <script> path/to/abxlua`:
#   e2b-js-sdk        e2b_js_sdk.sh        E2B's JS SDK suite (e2b-dev/E2B packages/js-sdk,
#                                          upstream's tests/sandbox + tests/api), on `serve --tls`
#                                          through tests/e2b_suite/run.sh
#   code-interpreter  code_interpreter.sh  E2B's code-interpreter JS suite (e2b-dev/code-interpreter js/tests)
#   e2b-cli           e2b_cli.sh           the tests of E2B's CLI (@e2b/cli) with serve's CA
#   e2b-cli-commands  e2b_cli_commands.sh  every `e2b` command that works offline, @e2b/cli 2.19.0
#   e2b-desktop       e2b_desktop.sh       @e2b/desktop 2.4.0 on the desktop template, by visible effect
#   opensandbox-sdk   opensandbox_sdk.sh   OpenSandbox's JS SDK conformance run (tests/conformance/run.sh
#                                          opensandbox-<version>) on `serve --flavor opensandbox`
# Each suite comes from a pinned upstream commit or package version fetched at run time (a
# `git archive` of a clone named by a variable, or npm with a committed lockfile), never copied into
# this repository. Variables the suites read: E2B_SDK_DIR (a clone of e2b-dev/E2B),
# OPENSANDBOX_SDK_DIR (a clone of opensandbox-group/OpenSandbox), CI_REPO_DIR (a clone of
# e2b-dev/code-interpreter, code_interpreter.sh), and whatever e2b_cli.sh documents in its header. PEER_SUITES_OUT=DIR keeps every suite's full log there
# (default: a temporary directory, removed at the end). PEER_SUITES_DIR=DIR takes the suite scripts
# from DIR instead of tests/peer_suites/ (tests/peer_suites/selftest.sh gives it fakes).
#
# ---- the protocol every suite script follows (docs/peer-suites.md) ----------------------------
# 1. Invocation: `bash tests/peer_suites/<script> path/to/abxlua`, from any directory; the script
#    starts and stops its own serve and leaves nothing running.
# 2. It may print anything; this runner reads only lines that start with `PEER-`:
#      PEER-FAIL <suite> <class> <test name>: <first line of its error>
#          one line per failing test; <suite> is the script's suite name above; <test name> holds
#          no ": " (write " - " instead), so the first ": " after the class ends it.
#      PEER-SUITE <suite> passed=N failed=N skipped=N
#          exactly once, the last PEER- line; failed = the number of PEER-FAIL lines.
# 3. <class> is one of:
#      needs-internet     the test reaches a host outside this machine (forbidden here; passes with
#                         the internet)
#      needs-public-ca    the test starts a child without serve's CA (NODE_EXTRA_CA_CERTS): it can
#                         pass only against a publicly trusted certificate, as E2B's
#      missing-kernel     code in a language whose Jupyter kernel the template does not install
#      e2b-only-template  the test needs a template only E2B's cloud has (e.g. `httpbin`)
#      product-gap        anything else: abxlua does not do what the peer expects (a bug or a
#                         missing feature); also the default when a failure matches no rule
#      setup              the suite or a test could not be set up (a clone or package missing, an
#                         install that failed)
#    The classification is the script's: by test identity where a known test needs the internet or
#    an E2B-only template, never by a blanket match on error text.
# 4. Exit status: 0 when the suite ran (whatever its tests said: the PEER- lines are the result);
#    77 when it cannot run on this machine (no root, node, a clone not given...), after a line
#    `SKIP: <reason>`; anything else is a setup failure.
# This runner prints one table (suite, passed, failed, skipped, failures per class), then every
# PEER-FAIL line. A script that is missing, exits neither 0 nor 77, prints no PEER-SUITE line, or
# whose counts disagree with its PEER-FAIL lines or whose classes are not the six above counts as
# one `setup` failure. Exit status: 0 when every failure is needs-internet, needs-public-ca,
# missing-kernel or e2b-only-template; 1 when there is a product-gap or setup failure; 2 for a bad invocation.
set -u
ABX=${1:?usage: run.sh path/to/abxlua [suite ...]}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
[ -x "$ABX" ] || { echo "run.sh: $ABX is not an executable abxlua"; exit 2; }
ABX=$(cd "$(dirname "$ABX")" && pwd)/$(basename "$ABX")
declare -A SCRIPT=([e2b-js-sdk]=e2b_js_sdk.sh [code-interpreter]=code_interpreter.sh
                   [e2b-cli]=e2b_cli.sh [e2b-cli-commands]=e2b_cli_commands.sh
                   [e2b-desktop]=e2b_desktop.sh [opensandbox-sdk]=opensandbox_sdk.sh)
ORDER=(e2b-js-sdk code-interpreter e2b-cli e2b-cli-commands e2b-desktop opensandbox-sdk)
CLASSES="needs-internet needs-public-ca missing-kernel e2b-only-template product-gap setup"
ACCEPTED="needs-internet needs-public-ca missing-kernel e2b-only-template"
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=("${ORDER[@]}")
for s in "${suites[@]}"; do
  [ -n "${SCRIPT[$s]:-}" ] || { echo "run.sh: unknown suite '$s' (suites: ${ORDER[*]})"; exit 2; }
done
out=${PEER_SUITES_OUT:-}
if [ -z "$out" ]; then
  out=$(mktemp -d "${TMPDIR:-/tmp}/abxlua-peer-suites.XXXXXX")
  trap 'rm -rf "$out"' EXIT
else
  mkdir -p "$out" || exit 2
fi

# check_output SUITE LOG RC: the suite's PEER- lines, checked against the protocol, into
# $out/SUITE.fails (one "class<TAB>line" per failure) and $out/SUITE.row (passed failed skipped note)
check_output() {
  local suite=$1 log=$2 rc=$3 summary n_fail p f k cls
  : >"$out/$suite.fails"
  setup_fail() { printf 'setup\tPEER-FAIL %s setup %s\n' "$suite" "$1" >>"$out/$suite.fails"; }
  if [ "$rc" = 77 ]; then
    echo "0 0 0 skipped: $(grep -m1 '^SKIP:' "$log" | cut -c7- || true)" >"$out/$suite.row"
    return
  fi
  summary=$(grep "^PEER-SUITE $suite " "$log" | tail -n 1)
  while IFS= read -r line; do
    cls=$(awk '{print $3}' <<<"$line")
    if [ "$(awk '{print $2}' <<<"$line")" != "$suite" ] || ! grep -qw -- "$cls" <<<"$CLASSES"; then
      setup_fail "bad PEER-FAIL line (suite must be $suite, class one of: $CLASSES): $line"
    else
      printf '%s\t%s\n' "$cls" "$line" >>"$out/$suite.fails"
    fi
  done < <(grep '^PEER-FAIL ' "$log")
  n_fail=$(grep -c '^PEER-FAIL ' "$log")
  if [ "$rc" != 0 ]; then
    setup_fail "${SCRIPT[$suite]} exited $rc: $(grep -v '^PEER-' "$log" | grep . | tail -n 1)"
  fi
  if [[ ! "$summary" =~ ^PEER-SUITE\ [^\ ]+\ passed=([0-9]+)\ failed=([0-9]+)\ skipped=([0-9]+)$ ]]; then
    [ "$rc" = 0 ] && setup_fail "${SCRIPT[$suite]} printed no line 'PEER-SUITE $suite passed=N failed=N skipped=N'"
    echo "0 $n_fail 0" >"$out/$suite.row"
    return
  fi
  p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]} k=${BASH_REMATCH[3]}
  [ "$f" = "$n_fail" ] || setup_fail "PEER-SUITE says failed=$f but there are $n_fail PEER-FAIL lines"
  echo "$p $f $k" >"$out/$suite.row"
}

for s in "${suites[@]}"; do
  script="${PEER_SUITES_DIR:-$HERE}/${SCRIPT[$s]}"
  log="$out/$s.log"
  if [ ! -f "$script" ]; then
    echo "# $s: tests/peer_suites/${SCRIPT[$s]} not found"
    printf 'setup\tPEER-FAIL %s setup tests/peer_suites/%s is missing (not in this checkout)\n' "$s" "${SCRIPT[$s]}" >"$out/$s.fails"
    echo "0 0 0 did not run" >"$out/$s.row"
    continue
  fi
  echo "# $s: bash tests/peer_suites/${SCRIPT[$s]} (log: $log)"
  t0=$(date +%s)
  # its progress (`# ...`), SKIP and PEER-SUITE lines go through; the full output is in the log
  bash "$script" "$ABX" 2>&1 | tee "$log" | grep --line-buffered -E '^(# |SKIP:|PEER-SUITE )' | sed -u 's/^/  /'
  rc=${PIPESTATUS[0]}
  echo "# $s: exit $rc after $(( $(date +%s) - t0 )) s"
  check_output "$s" "$log" "$rc"
done

# ---- the table -------------------------------------------------------------------------------
echo
printf '| %-16s | %6s | %6s | %7s | %s\n' suite passed failed skipped "failures by class"
printf '|%s|-------:|-------:|--------:|%s\n' "------------------" "--------------------"
bad=0
for s in "${suites[@]}"; do
  read -r p f k note <"$out/$s.row"
  by=$(cut -f1 "$out/$s.fails" | sort | uniq -c | awk '{printf "%s%s %s", (NR>1?", ":""), $1, $2}')
  printf '| %-16s | %6s | %6s | %7s | %s\n' "$s" "$p" "$f" "$k" "${by:-none}${note:+ ($note)}"
  while IFS=$'\t' read -r cls _; do
    grep -qw -- "$cls" <<<"$ACCEPTED" || bad=1
  done <"$out/$s.fails"
done
echo
for s in "${suites[@]}"; do
  [ -s "$out/$s.fails" ] || continue
  echo "failures of $s:"
  cut -f2- "$out/$s.fails" | sed 's/^/  /'
done
if [ $bad = 0 ]; then
  echo "peer-suites: every failure is needs-internet, needs-public-ca, missing-kernel or e2b-only-template"
else
  echo "peer-suites: product-gap or setup failures (see above)"
fi
exit $bad
