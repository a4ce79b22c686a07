#!/usr/bin/env bash
# new.sh: `abxlua new scenario NAME` and `abxlua new template NAME` (issue 13, item 6).
#
#   new.sh ABXLUA        (from the source root: config/abxlua.yaml is found there)
#
# Checks: each scaffold is created where --dir says, with a header comment and one test;
# `abxlua list` collects it (for the template folder that loads and checks template.yaml) and
# `abxlua template build --dry-run` accepts the recipe; both pass when run on the local provider
# (the template is built through serve's build API: one RUN step on base, about a second);
# luacheck finds nothing in them; an existing file or folder is never overwritten (exit 4, the
# file unchanged); a bad NAME is exit 4 and creates nothing. Exit 0 when every check held.
set -u
abxlua=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # check DESCRIPTION COMMAND...: runs COMMAND, counts a failure when it fails
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}
run() { # run WANT_RC ARGS...: abxlua ARGS, output in $tmp/out, true when the exit code is WANT_RC
  local want=$1; shift
  "$abxlua" "$@" >"$tmp/out" 2>&1
  local rc=$?
  [ "$rc" -eq "$want" ] || { echo "  abxlua $* exited $rc, want $want:"; sed 's/^/    /' "$tmp/out"; return 1; }
}
has() { grep -Eq -- "$1" "$tmp/out" || { echo "  no line matches $1 in:"; sed 's/^/    /' "$tmp/out"; return 1; }; }

sc=$tmp/scenarios
check "new scenario creates the file" run 0 new scenario 11_demo --dir "$sc"
check "it says what it created" has "^created $sc/11_demo\.lua$"
check "the file starts with a header comment naming it" grep -q "^-- 11_demo: " "$sc/11_demo.lua"
check "the file has one test" test "$(grep -c '^t\.test(' "$sc/11_demo.lua")" -eq 1
check "abxlua list collects its one test" run 0 list "$sc/11_demo.lua"
check "list names it" has "^$sc/11_demo\.lua::a command in a fresh sandbox prints its output"
check "list counts one" has "^1 tests collected$"

tp=$tmp/templates
check "new template creates the folder" run 0 new template demo-tpl --dir "$tp"
check "with template.yaml" test -f "$tp/demo-tpl/template.yaml"
check "and the script named after it" test -f "$tp/demo-tpl/demo-tpl.lua"
check "the script has one test" test "$(grep -c '^t\.test(' "$tp/demo-tpl/demo-tpl.lua")" -eq 1
check "abxlua list loads the recipe and collects the script" run 0 list "$tp/demo-tpl"
check "list names its test" has "^$tp/demo-tpl/demo-tpl\.lua::demo-tpl has the file its recipe wrote"
check "the recipe is valid for a build (--dry-run)" run 0 template build "$tp/demo-tpl" --dry-run
check "the dry run builds from base" has '"fromTemplate":"base"'

check "both pass on the local provider (the template built first)" \
  run 0 run "$sc/11_demo.lua" "$tp/demo-tpl" -j 1
check "two passed" has "^2 passed, 0 failed, 0 skipped, 0 xfailed in "

if command -v luacheck >/dev/null; then
  check "luacheck finds nothing in them" luacheck --config .luacheckrc --formatter plain -q \
    "$sc/11_demo.lua" "$tp/demo-tpl/demo-tpl.lua"
else
  echo "FAIL: luacheck is not installed (scripts/deps.sh installs lua-check)"; fails=$((fails + 1))
fi

# never overwrites: exit 4, and the file keeps what was added to it
echo "-- my own line" >>"$sc/11_demo.lua"
check "an existing scenario is not overwritten (exit 4)" run 4 new scenario 11_demo --dir "$sc"
check "the message says so" has "11_demo\.lua exists; not overwritten"
check "the file is unchanged" grep -q "^-- my own line$" "$sc/11_demo.lua"
echo "steps: []" >"$tp/demo-tpl/template.yaml"
check "an existing template folder is not overwritten (exit 4)" run 4 new template demo-tpl --dir "$tp"
check "its recipe is unchanged" grep -qx "steps: \[\]" "$tp/demo-tpl/template.yaml"

# bad names: exit 4, nothing created
for name in "bad name" _helper x.lua ../escape -dash ""; do
  check "scenario name '$name' is refused (exit 4)" run 4 new scenario "$name" --dir "$tmp/none"
done
for name in MyTpl my.tpl ../escape _x ""; do
  check "template name '$name' is refused (exit 4)" run 4 new template "$name" --dir "$tmp/none"
done
check "a refused name creates nothing" test ! -e "$tmp/none"
check "the message explains a scenario name" run 4 new scenario "bad name" --dir "$tmp/none"
check "  (letters, digits, '_' and '-')" has "is not a scenario name: letters, digits"
check "an unknown kind is a usage error" run 4 new widget x

echo "$fails checks failed"
[ "$fails" -eq 0 ]
