#!/usr/bin/env bash
# cli.sh: the command line of abxlua: --version, help, run --help, list, usage errors (exit 4),
# nothing collected (exit 5). Usage: cli.sh ABXLUA. Run from the source root.
# Exit 0 when every check held; otherwise lists the checks that did not hold and exits 1.
set -u
abxlua=$1
cd "$(dirname "$0")/../.." || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export NO_COLOR=1
failures=0

# run NAME EXPECTED_EXIT ARGS...: runs abxlua, keeps stdout in $tmp/NAME.out, stderr in .err
run() {
  local name=$1 want=$2
  shift 2
  "$abxlua" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
  local code=$?
  if [ "$code" != "$want" ]; then
    echo "FAILED CHECK [$name]: abxlua $* exited $code, expected $want"
    sed 's/^/  stdout: /' "$tmp/$name.out"; sed 's/^/  stderr: /' "$tmp/$name.err"
    failures=$((failures + 1))
  fi
}
# has NAME STREAM REGEX: the stream (out|err) of run NAME has a line matching REGEX
has() {
  if ! grep -Eq -- "$3" "$tmp/$1.$2"; then
    echo "FAILED CHECK [$1]: no $2 line matches /$3/"
    sed "s/^/  $2: /" "$tmp/$1.$2"
    failures=$((failures + 1))
  fi
}
# lines NAME STREAM N: the stream has exactly N lines
lines() {
  local n
  n=$(wc -l <"$tmp/$1.$2")
  if [ "$n" != "$3" ]; then
    echo "FAILED CHECK [$1]: $2 has $n lines, expected $3"
    sed "s/^/  $2: /" "$tmp/$1.$2"
    failures=$((failures + 1))
  fi
}

run version 0 --version
has version out '^abxlua [0-9]+\.[0-9]+\.[0-9]+ \([0-9a-z]+\)$'
lines version out 1

run help 0 help
has help out '^Usage: abxlua'
has help out '^ +run +Run scenario files'
has help out '^ +list +List the tests'
has help out 'Exit codes: 0 ok, 1 failures/errors, 2 interrupted, 3 internal error, 4 usage error, 5 nothing collected'

run noargs 0
has noargs out '^Usage: abxlua'

run help_run 0 help run
has help_run out '^Usage: abxlua run'

run run_help 0 run --help
has run_help out '^Usage: abxlua run'
has run_help out '-j <jobs>'
has run_help out '-k <k>'
has run_help out '-m <m>'
has run_help out '--profile <profile>'
has run_help out '--timeout <timeout>'
has run_help out '-x, --exitfirst'

# a subcommand's usage error shows that subcommand's usage line, not the top level's; help takes
# a subcommand path
run sub_usage 4 sandbox logs ID --level bogus
has sub_usage err '^Usage: abxlua sandbox logs'
run sub_usage2 4 mcp --bogus
has sub_usage2 err '^Usage: abxlua mcp'
has sub_usage2 err "abxlua: error: unknown option '--bogus'"
run help_sub 0 help sandbox exec
has help_sub out '^Usage: abxlua sandbox exec'
run help_sub_bad 4 help sandbox nosuch
has help_sub_bad err 'unknown command sandbox nosuch'

run list 0 list tests/runner/outcomes_basic.lua
has list out '^tests/runner/outcomes_basic\.lua::passes \[e2e,e2e_slow\]$'
has list out '^tests/runner/outcomes_basic\.lua::assertion fails \[e2e\]$'
has list out '^tests/runner/outcomes_basic\.lua::plain Lua error fails \[e2e\]$'
has list out '^tests/runner/outcomes_basic\.lua::skipped by t\.skip \[e2e\]$'
has list out '^tests/runner/outcomes_basic\.lua::skipped by opts\.skip \[e2e\]$'
has list out '^5 tests collected$'
lines list out 6

run list_k 0 list -k skipped tests/runner/outcomes_basic.lua
has list_k out '^tests/runner/outcomes_basic\.lua::skipped by t\.skip \[e2e\]$'
has list_k out '^2 tests collected$'
lines list_k out 3

run list_broken 1 list tests/runner/syntax_error.lua tests/runner/helpers/passes.lua
has list_broken out '^ERROR tests/runner/syntax_error\.lua \(collection\): tests/runner/syntax_error\.lua:14:'
has list_broken out '^tests/runner/helpers/passes\.lua::still runs \[e2e\]$'

run missing 4 run /nonexistent
has missing err '/nonexistent'
run missing_list 4 list /nonexistent/dir
run unknown_option 4 run --no-such-option tests/runner/helpers/passes.lua
has unknown_option err "--no-such-option"
run unknown_command 4 frobnicate
run bad_jobs 4 run -j 0 tests/runner/helpers/passes.lua
run bad_max_sandboxes 4 run --max-sandboxes 0 tests/runner/helpers/passes.lua
has bad_max_sandboxes err '^abxlua: error: --max-sandboxes must be a positive integer, got 0$'
run frac_max_sandboxes 4 run --max-sandboxes 2.5 tests/runner/helpers/passes.lua
run help_unknown 4 help nosuch

mkdir -p "$tmp/empty"
run empty_dir 5 run "$tmp/empty"
has empty_dir out '^0 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\.[0-9]{2}s$'
run empty_list 5 list "$tmp/empty"
# a directory with no *.lua files is just as empty
echo "not a scenario" >"$tmp/empty/readme.txt"
run no_lua 5 run "$tmp/empty"

# -k selecting nothing collects nothing
run k_none 5 run -k no-test-has-this-name tests/runner/helpers/passes.lua

# selection expressions: -m / -k / --profile on list; a bad expression or profile is a usage error
run list_m 0 list -m "e2e_slow" tests/runner/outcomes_basic.lua
has list_m out '^tests/runner/outcomes_basic\.lua::passes \[e2e,e2e_slow\]$'
lines list_m out 2
run list_profile 0 list --profile fast tests/runner/outcomes_basic.lua
has list_profile out '^4 tests collected$'
run list_profile_m 0 list --profile fast -m e2e_slow tests/runner/outcomes_basic.lua
has list_profile_m out '^1 tests collected$'
run bad_paren 4 list -m "e2e and (e2e_slow" tests/runner/outcomes_basic.lua
has bad_paren err "-m: expected '\)' at column 18 in 'e2e and \(e2e_slow'"
run bad_k 4 run -k "stdout and" tests/runner/helpers/passes.lua
has bad_k err "-k: .* at column 11 in 'stdout and'"
# an empty -m / -k is no filter (CI's -m "$MARKERS" with an empty variable)
run empty_m 0 run -m "" tests/runner/helpers/passes.lua
has empty_m out '^1 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\.[0-9]{2}s$'
run unknown_mark 4 list -m "e2e_slow or nosuch" tests/runner/outcomes_basic.lua
has unknown_mark err 'unknown marker "nosuch".*markers:.*config/abxlua\.yaml'
run unknown_profile 4 run --profile nosuch tests/runner/helpers/passes.lua
has unknown_profile err 'unknown profile "nosuch" \(configured: all, fast\)'

# a passing file exits 0
run passes 0 run tests/runner/helpers/passes.lua -j 1
has passes out '^PASSED +tests/runner/helpers/passes\.lua::still runs'
has passes out '^1 passed, 0 failed, 0 skipped, 0 xfailed in [0-9]+\.[0-9]{2}s$'

# a directory with subdirectories is collected recursively (files below helpers/ too)
run recursive 1 list tests/runner   # 1: the deliberately broken cases are collection errors
has recursive out '^tests/runner/helpers/passes\.lua::still runs \[e2e\]'
has recursive out '^tests/runner/outcomes_basic\.lua::'

if [ "$failures" -gt 0 ]; then
  echo "$failures CLI check(s) failed"
  exit 1
fi
echo "ok: every CLI check held"
