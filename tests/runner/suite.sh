#!/usr/bin/env bash
# suite.sh: a growing suite (issue 13 part 5), on the small project tests/runner/suite/:
#   - helper modules (scenarios/**/lib/*.lua, _*.lua) are not collected as scenarios, and naming
#     one on the command line is a usage error (exit 4) saying why;
#   - scenarios/?.lua and scenarios/lib/?.lua of the project are on package.path from any
#     working directory (the scenarios require lib.mylib, mylib, _shared, sub.lib.deep);
#   - the config is found by walking up from the working directory (its marker suite_only is
#     used), `abxlua run` without paths runs the project's scenarios/ from a subdirectory, and a
#     directory with no config anywhere above gets a warning that the built-in defaults apply;
#   - file- and run-scoped fixtures: one sandbox for a file's tests, torn down after its last.
# Usage: suite.sh ABXLUA. Exit 0 when every check held; otherwise lists them and exits 1.
set -u
abxlua=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
project=$here/suite
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export NO_COLOR=1
unset ABX_CONFIG ABX_PROVIDER CI
failures=0

# run NAME DIR EXPECTED_EXIT ARGS...: runs abxlua in DIR, keeps stdout/stderr in $tmp/NAME.out/.err
run() {
  local name=$1 dir=$2 want=$3
  shift 3
  (cd "$dir" && "$abxlua" "$@") >"$tmp/$name.out" 2>"$tmp/$name.err"
  local code=$?
  if [ "$code" != "$want" ]; then
    echo "FAILED CHECK [$name]: (cd $dir && abxlua $*) exited $code, expected $want"
    sed 's/^/  stdout: /' "$tmp/$name.out"; sed 's/^/  stderr: /' "$tmp/$name.err"
    failures=$((failures + 1))
  fi
}
# has NAME STREAM REGEX / hasnt NAME STREAM REGEX
has() {
  if ! grep -Eq -- "$3" "$tmp/$1.$2"; then
    echo "FAILED CHECK [$1]: no $2 line matches /$3/"
    sed "s/^/  $2: /" "$tmp/$1.$2"
    failures=$((failures + 1))
  fi
}
hasnt() {
  if grep -Eq -- "$3" "$tmp/$1.$2"; then
    echo "FAILED CHECK [$1]: a $2 line matches /$3/: $(grep -E -m1 -- "$3" "$tmp/$1.$2")"
    failures=$((failures + 1))
  fi
}

# 1. the whole project from its root: helpers skipped, every scenario passes, one sandbox in all
run root "$project" 0 run scenarios/ -j 1
has root out '^7 passed, 0 failed, 0 skipped, 0 xfailed in [0-9.]+s$'
has root out '^cleanup: 1 sandboxes created, 0 killed at the end \(tracked\), 0 found by tag'
hasnt root out '^(PASSED|FAILED|ERROR|SKIPPED).*(lib/|/_)[a-z]+\.lua'
hasnt root out 'no tests'
hasnt root err 'warning'

# 2. from a subdirectory without paths: the config above is found (marker suite_only) and the
#    project's scenarios/ run, requires resolve
run subdir "$project/scenarios/sub" 0 run -j 1
has subdir out '^7 passed, 0 failed, 0 skipped, 0 xfailed in [0-9.]+s$'
has subdir out '^PASSED +\.\./\.\./scenarios/sub/04_nested\.lua::a nested scenario requires lib\.mylib'
hasnt subdir err 'warning'
# ... and a path relative to that directory
run subdir_file "$project/scenarios/sub" 0 run 04_nested.lua ../01_require.lua -j 1
has subdir_file out '^3 passed, 0 failed, 0 skipped, 0 xfailed in [0-9.]+s$'
# listing from a deeper directory finds the same config
run subdir_list "$project/scenarios/lib" 0 list
has subdir_list out '01_require\.lua::helpers load from scenarios/ and scenarios/lib/ \[e2e,suite_only\]$'
hasnt subdir_list out "^[^:]*(/lib/|/_)"

# 3. a helper named explicitly: usage error saying why
run helper_lib "$project" 4 run scenarios/lib/mylib.lua
has helper_lib err 'scenarios/lib/mylib\.lua is a helper module, not a scenario'
has helper_lib err 'lib/'
run helper_underscore "$project" 4 run scenarios/_shared.lua
has helper_underscore err 'scenarios/_shared\.lua is a helper module, not a scenario'
run helper_list "$project" 4 list scenarios/sub/lib/deep.lua
has helper_list err 'scenarios/sub/lib/deep\.lua is a helper module, not a scenario'
# ... also named from inside scenarios/lib/, and a lib/ directory itself
run helper_cwd "$project/scenarios/lib" 4 run mylib.lua
has helper_cwd err '^abxlua: error: mylib\.lua is a helper module, not a scenario \(it lies in a lib/ directory'
run helper_dir "$project" 4 run scenarios/lib
has helper_dir err '^abxlua: error: scenarios/lib is a directory of helper modules, not a scenario'

# 4. no config/abxlua.yaml anywhere above: a warning on stderr, the built-in defaults apply
mkdir -p "$tmp/noconf"
cp "$here/helpers/passes.lua" "$tmp/noconf/passes.lua"
run noconf "$tmp/noconf" 0 list passes.lua
has noconf err '^abxlua: warning: no config/abxlua\.yaml in .*noconf or any directory above it'
has noconf err 'built-in defaults'
has noconf out '^passes\.lua::still runs \[e2e\]$'
# an explicit config: no warning
run explicit "$tmp/noconf" 0 list --config "$project/config/abxlua.yaml" passes.lua
hasnt explicit err 'warning'

if [ "$failures" -gt 0 ]; then
  echo "suite.sh: $failures check(s) failed"
  exit 1
fi
echo "suite.sh: every check held"
