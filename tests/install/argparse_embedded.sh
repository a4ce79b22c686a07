#!/usr/bin/env bash
# argparse_embedded.sh ABXLUA: the binary parses its command line with no Lua file on disk.
# lua-argparse is a build dependency only (CMakeLists.txt embeds its argparse.lua); here the
# directories Lua would search are hidden (a tmpfs over /usr/share/lua and /usr/local/share/lua,
# LUA_PATH pointing nowhere), then `--version`, `run --help` and a usage error must behave.
set -u
abxlua=$(realpath "$1")
fail=0
hide=(bwrap --bind / / --dev /dev --proc /proc --tmpfs /usr/share/lua --tmpfs /usr/local/share
      --setenv LUA_PATH '/nonexistent/?.lua' --setenv LUA_PATH_5_4 '/nonexistent/?.lua'
      --setenv NO_COLOR 1)
check() { # name want_rc regex cmd...
  local name=$1 want=$2 re=$3; shift 3
  out=$("${hide[@]}" "$@" 2>&1); rc=$?
  if [ "$rc" -ne "$want" ] || ! grep -Eq -- "$re" <<<"$out"; then
    echo "FAIL $name: exit $rc (want $want), output does not match /$re/:"; echo "$out" | head -20
    fail=1
  else
    echo "ok   $name"
  fi
}
check version 0 '^abxlua [0-9]+\.[0-9]+\.[0-9]+ ' "$abxlua" --version
check run-help 0 '^Usage: abxlua run' "$abxlua" run --help
check usage-error 4 "unknown option '--no-such-option'" "$abxlua" run --no-such-option
exit $fail
