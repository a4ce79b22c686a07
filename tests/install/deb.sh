#!/usr/bin/env bash
# deb.sh BUILD_DIR SOURCE_DIR: `cpack -G DEB`, the package's fields checked against the binary, then
# the package installed into a scratch root and run there. Checks:
#   - one abxlua_<version>_<arch>.deb with the files of cmake/install.cmake under /usr;
#   - Depends names the package of every library the binary links (NEEDED, resolved by ldd, owner
#     by dpkg -S) and of every program the local platform execs (bwrap, ip, nft); not lua-argparse
#     (embedded);
#   - scratch_root.py builds a root of the Essential packages plus the Depends closure (nothing
#     else of this host) and installs the .deb there with `dpkg --root` (dpkg checks Depends);
#   - in that root (bwrap), `abxlua --version`, and smoke.lua from an empty directory against the
#     local provider: a sandbox and its network link (ip, nft) work with only what Depends brings;
#   - `dpkg --root ROOT -r abxlua` removes it, leaving no file of the package;
#   - docs/install.md's Install section names every Depends entry.
set -u
build=$(realpath "$1") src=$(realpath "$2")
tmp=$(mktemp -d /tmp/abx-deb.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL $*"; fail=1; }
ok() { echo "ok   $*"; }

if ! cpack --config "$build/CPackConfig.cmake" -G DEB -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1; then
  cat "$tmp/cpack.log"; echo "FAIL cpack -G DEB"; exit 1
fi
debs=("$tmp"/pkg/*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || { echo "FAIL want one .deb, got: ${debs[*]}"; exit 1; }
deb=${debs[0]}
version=$(sed -n 's/^project(abxlua VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
arch=$(dpkg --print-architecture)
[ "$(basename "$deb")" = "abxlua_${version}_${arch}.deb" ] && ok "package $(basename "$deb")" ||
  bad "package file $(basename "$deb"), want abxlua_${version}_${arch}.deb"
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = abxlua ] && [ "$(field Version)" = "$version" ] &&
  [ "$(field Architecture)" = "$arch" ] || bad "Package/Version/Architecture: $(field Package) $(field Version) $(field Architecture)"
depends=$(field Depends)
echo "     Depends: $depends"
dep_names=" $(tr ',|' '\n\n' <<<"$depends" | sed 's/(.*//; s/:.*//; s/[[:space:]]//g' | tr '\n' ' ') "

dpkg-deb -x "$deb" "$tmp/x"
for f in usr/bin/abxlua usr/share/abxlua/config/abxlua.yaml usr/share/abxlua/config/known_issues.yaml \
         usr/share/abxlua/env.example usr/share/doc/abxlua/THIRD-PARTY.md; do
  [ -e "$tmp/x/$f" ] || bad "not in the package: /$f"
done
owner() { # path -> the package owning it (merged /usr: try both spellings)
  local p=$1 alt
  case "$p" in /usr/*) alt=${p#/usr} ;; *) alt=/usr$p ;; esac
  { dpkg -S "$p" 2>/dev/null || dpkg -S "$alt" 2>/dev/null; } | head -n 1 | sed 's/:.*//'
}
bin=$tmp/x/usr/bin/abxlua
needed=$(objdump -p "$bin" | awk '$1 == "NEEDED" { print $2 }')
[ -n "$needed" ] || bad "objdump found no NEEDED entry in the binary"
for so in $needed; do
  path=$(ldd "$bin" | awk -v so="$so" '$1 == so { print $3 }')
  pkg=$(owner "$path")
  if [ -z "$pkg" ]; then bad "$so ($path): no package owns it"
  elif [[ "$dep_names" == *" $pkg "* ]]; then ok "links $so: $pkg in Depends"
  else bad "links $so ($path, package $pkg) but Depends lacks $pkg"; fi
done
for exe in /usr/bin/bwrap /usr/sbin/ip /usr/sbin/nft; do
  pkg=$(owner "$exe")
  if [ -n "$pkg" ] && [[ "$dep_names" == *" $pkg "* ]]; then ok "execs $exe: $pkg in Depends"
  else bad "execs $exe (package '${pkg:-none}') but Depends lacks it"; fi
done
[[ "$dep_names" != *" lua-argparse "* ]] || bad "Depends names lua-argparse (it is embedded)"
# docs/install.md's Install section lists Depends by hand: it must name every entry
install_section=$(sed -n '/^## Install$/,/^## /p' "$src/docs/install.md")
for pkg in $dep_names; do
  # a sanitizer build (make test-asan) links the sanitizers' runtimes: not what the package ships
  case $pkg in libasan*|libubsan*) continue ;; esac
  grep -qw -- "$pkg" <<<"$install_section" || bad "docs/install.md Install does not name the Depends entry $pkg"
done

# a scratch root with only what Depends brings, the package installed by dpkg
root=$tmp/root
if python3 "$src/tests/install/scratch_root.py" "$root" "$deb" >"$tmp/root.log" 2>&1; then
  ok "dpkg --root installed it in a scratch root ($(head -n 1 "$tmp/root.log" | cut -d: -f1))"
else
  cat "$tmp/root.log"; echo "FAIL the .deb did not install in the scratch root"; exit 1
fi
mkdir -p "$root/tmp/empty"
cp "$src/tests/install/smoke.lua" "$root/tmp/empty/smoke.lua"
in_root=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root NO_COLOR=1
         bwrap --bind "$root" / --dev-bind /dev /dev --proc /proc --bind /sys /sys --tmpfs /run
         --cap-add ALL --chdir /tmp/empty)
if out=$("${in_root[@]}" abxlua --version 2>&1) && grep -Eq "^abxlua $version " <<<"$out"; then
  ok "in the root: $out"
else
  bad "in the root, abxlua --version: $out"
fi
out=$("${in_root[@]}" abxlua run smoke.lua -j 1 2>&1); rc=$?
if [ $rc -eq 0 ] && tail -n 1 <<<"$out" | grep -Eq '^2 passed, 0 failed'; then
  ok "in the root, smoke.lua: $(tail -n 1 <<<"$out")"
else
  bad "in the root, smoke.lua: exit $rc"; echo "$out" | tail -20
  log=$(sed -n 's/^local platform log: //p' <<<"$out")
  [ -n "$log" ] && [ -f "$root$log" ] && tail -20 "$root$log"
fi
if dpkg --root "$root" -r abxlua >"$tmp/rm.log" 2>&1 && [ ! -e "$root/usr/bin/abxlua" ] &&
   [ ! -e "$root/usr/share/abxlua" ]; then
  ok "dpkg -r removed it"
else
  cat "$tmp/rm.log"; bad "dpkg --root -r abxlua left files or failed"
fi
exit $fail
