#!/usr/bin/env bash
# Installs the Debian 12 packages abxlua builds and runs with, only when one is missing.
# Idempotent: a second run installs nothing and makes no network request. clang-format (14 on
# Debian 12) is for the format:check test of `make test`, lua-check (luacheck) for its lint:luacheck
# test (tests/editor/tests.cmake). sudo, python-is-python3, git and curl
# are for the sandboxes: the `base` template takes /usr from the host (platform/template/rootfs.h) and
# E2B's base template offers them (`python` is Debian's python-is-python3). python3-jupyter-client,
# python3-ipykernel and python3-matplotlib are for the code-interpreter-v1 template's server
# (platform/code_interpreter/server.py: real Jupyter kernels; matplotlib for PNG results and its
# `chart` data); python3-pandas and python3-pil for its kernels' E2B formats (abx_formats.py: a
# DataFrame's `data`, PIL's Image.save shown) and the code_interpreter_charts test.
# r-cran-irkernel is its R kernel (installed without recommends: r-base-core's would add compilers
# and r-recommended). Its JavaScript/TypeScript kernels come from npm: make ci-kernels.
# mmdebstrap builds the root of a `fromImage: debian:<suite>` template from Debian packages
# (platform/template/image_debian.h). dpkg-dev: dpkg-shlibdeps computes the .deb Depends (cpack -G DEB).
set -euo pipefail
pkgs=(cmake make gcc pkg-config liblua5.4-dev lua5.4 libcurl4-openssl-dev lua-cjson-dev libyaml-dev
      libmicrohttpd-dev libjansson-dev libssl-dev libarchive-dev lua-argparse bubblewrap valgrind time iproute2 nftables procps python3 curl
      libxml2-utils python3-jsonschema clang-format lua-check libnss-myhostname dpkg-dev
      sudo python-is-python3 git python3-jupyter-client python3-ipykernel python3-matplotlib mmdebstrap
      nettle-dev libpng-dev xvfb x11vnc websockify xterm x11-utils x11-xserver-utils jwm chromium
      xfce4-session xfwm4 xfdesktop4 xfce4-panel xfce4-settings dbus-x11 scrot xdotool novnc net-tools
      xdg-utils libgtk-3-bin)
# chromium: the html:chromium test opens the --html report in headless Chromium over the DevTools
# protocol on --remote-debugging-pipe (tests/html/cdp.py); without it that test skips (77).
# nettle-dev, libpng-dev: the desktop runner (VNC auth DES, SHA-1, PNG; bindings/core_wire.c, core_png.c);
# xvfb ... jwm: the desktop template's packages on the host, so a `base` sandbox runs it (quick tests)
# xfce4-session ... libgtk-3-bin: the rest of the desktop template's packages, those E2B's desktop SDK
# drives (XFCE, scrot, xdotool, noVNC, xdg-open, gtk-launch; tests/peer_suites/e2b_desktop.sh)
# libarchive-dev: the local platform unpacks and checks template build uploads (layer_cache.h).
# libnss-myhostname: `localhost` and every name under `.localhost` resolve to loopback through NSS,
# as `abxlua serve --tls` needs for api.e2b.localhost and <port>-<id>.e2b.localhost (getent, Node's
# dns.lookup, Python; libcurl resolves *.localhost itself).
# the code-interpreter-v1 kernels' E2B formats: a DataFrame's `data`, PIL's save shown (above)
pkgs+=(python3-pandas python3-pil)
# `deps.sh fuzz` (make fuzz) adds clang and libclang-rt-14-dev, which ships libFuzzer
# (libclang_rt.fuzzer-x86_64.a); the normal build does not need them.
if [ "${1:-}" = fuzz ]; then pkgs+=(clang libclang-rt-14-dev); fi
norec=(r-cran-irkernel)
# one dpkg-query for every package (a query per package cost `make run` 0.7 s on each call)
# (dpkg-query exits 1 when a package is not known at all: that one is missing, not an error)
installed=" $({ dpkg-query -W -f='${Package} ${Status}\n' "${pkgs[@]}" "${norec[@]}" 2>/dev/null || true; } |
  awk '$NF == "installed" && $(NF-1) == "ok" {print $1}' | tr '\n' ' ') "
missing=()
for p in "${pkgs[@]}" "${norec[@]}"; do
  case "$installed" in *" $p "*) ;; *) missing+=("$p");; esac
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  rec=() nr=()
  for p in "${missing[@]}"; do
    case " ${norec[*]} " in *" $p "*) nr+=("$p");; *) rec+=("$p");; esac
  done
  [ ${#rec[@]} -eq 0 ] || DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${rec[@]}" >/dev/null
  [ ${#nr[@]} -eq 0 ] ||
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${nr[@]}" >/dev/null
fi
# The package's postinst adds `myhostname` to /etc/nsswitch.conf's hosts line; a hand-written
# nsswitch.conf may lack it (or the line): add it before `dns`, else at the end. Idempotent.
if ! grep -Eq '^hosts:.*[[:space:]]myhostname([[:space:]]|$)' /etc/nsswitch.conf 2>/dev/null; then
  echo "deps: adding myhostname to the hosts line of /etc/nsswitch.conf" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  if grep -q '^hosts:' /etc/nsswitch.conf 2>/dev/null; then
    $SUDO sed -i -E '/^hosts:/{s/[[:space:]]dns([[:space:]]|$)/ myhostname dns\1/;t;s/$/ myhostname/}' /etc/nsswitch.conf
  else
    echo 'hosts:          files myhostname dns' | $SUDO tee -a /etc/nsswitch.conf >/dev/null
  fi
fi
