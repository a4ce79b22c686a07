#!/usr/bin/env bash
# Installs the Debian 12 packages abxlua builds and runs with, only when one is missing.
# Idempotent: a second run installs nothing and makes no network request. clang-format (14 on
# Debian 12) is for the format:check test of `make test`. sudo, python-is-python3, git and curl
# are for the sandboxes: the `base` template takes /usr from the host (platform/rootfs.h) and
# E2B's base template offers them (`python` is Debian's python-is-python3).
set -euo pipefail
pkgs=(cmake make gcc pkg-config liblua5.4-dev lua5.4 libcurl4-openssl-dev lua-cjson-dev libyaml-dev
      libmicrohttpd-dev libjansson-dev libssl-dev lua-argparse bubblewrap valgrind time iproute2 nftables procps python3 curl
      libxml2-utils python3-jsonschema clang-format
      sudo python-is-python3 git)
# `deps.sh fuzz` (make fuzz) adds clang and libclang-rt-14-dev, which ships libFuzzer
# (libclang_rt.fuzzer-x86_64.a); the normal build does not need them.
if [ "${1:-}" = fuzz ]; then pkgs+=(clang libclang-rt-14-dev); fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
