#!/usr/bin/env bash
# prefix.sh BUILD_DIR SOURCE_DIR: `cmake --install` to a temporary prefix, then the installed binary
# alone. Checks:
#   - the files of cmake/install.cmake are there (binary, example config, env.example, docs), the
#     config examples byte-identical to config/, and types/ installed exactly when the checkout has it;
#   - PREFIX/bin/abxlua --version, and the smoke scenario (smoke.lua) from an empty directory
#     against the local provider, with the source tree, the build directory and /usr/share/lua
#     hidden (bwrap tmpfs over each): nothing is read from where it was built;
#   - the same scenario with the installed example config copied into that directory.
set -u
build=$(realpath "$1") src=$(realpath "$2")
tmp=$(mktemp -d /tmp/abx-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail=0
bad() { echo "FAIL $*"; fail=1; }
ok() { echo "ok   $*"; }

if ! cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1; then
  cat "$tmp/install.log"; bad "cmake --install exited non-zero"; exit 1
fi
for f in bin/abxlua share/abxlua/config/abxlua.yaml share/abxlua/config/known_issues.yaml \
         share/abxlua/env.example share/doc/abxlua/README.md share/doc/abxlua/THIRD-PARTY.md \
         share/doc/abxlua/docs/scenarios.md; do
  [ -e "$prefix/$f" ] && ok "installed $f" || bad "not installed: $f"
done
[ -x "$prefix/bin/abxlua" ] || bad "bin/abxlua is not executable"
for f in abxlua.yaml known_issues.yaml; do
  cmp -s "$src/config/$f" "$prefix/share/abxlua/config/$f" || bad "share/abxlua/config/$f differs from config/$f"
done
if [ -d "$src/types" ]; then
  diff -r "$src/types" "$prefix/share/abxlua/types" >/dev/null && ok "types/ installed" ||
    bad "share/abxlua/types differs from types/"
else
  [ ! -e "$prefix/share/abxlua/types" ] && ok "no types/ in the checkout, none installed" ||
    bad "share/abxlua/types installed without types/"
fi

# the installed binary, with where it was built out of sight
work=$tmp/empty
mkdir -p "$work"
hide=(bwrap --dev-bind / / --tmpfs "$src" --tmpfs /usr/share/lua --cap-add ALL --chdir "$work")
case "$build" in "$src"/*) ;; *) hide+=(--tmpfs "$build") ;; esac
envs=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$tmp/home" NO_COLOR=1)
if out=$("${envs[@]}" "${hide[@]}" "$prefix/bin/abxlua" --version 2>&1) &&
   grep -Eq '^abxlua [0-9]+\.[0-9]+\.[0-9]+ \(' <<<"$out"; then
  ok "--version: $out"
else
  bad "--version: $out"
fi
cp "$src/tests/install/smoke.lua" "$work/smoke.lua"
run_smoke() { # label
  out=$("${envs[@]}" "${hide[@]}" "$prefix/bin/abxlua" run smoke.lua -j 1 2>&1); rc=$?
  if [ $rc -eq 0 ] && [ "$(tail -n 1 <<<"$out" | grep -Ec '^2 passed, 0 failed')" = 1 ]; then
    ok "$1: $(tail -n 1 <<<"$out")"
  else
    bad "$1: exit $rc"; echo "$out" | tail -20
  fi
}
run_smoke "scenario from an empty directory"
cp -r "$prefix/share/abxlua/config" "$work/config"
run_smoke "scenario with the installed example config"
exit $fail
