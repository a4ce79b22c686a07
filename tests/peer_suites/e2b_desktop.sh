#!/usr/bin/env bash
# E2B's desktop SDK (npm @e2b/desktop, pinned in desktop-2.4.0/package.json, unmodified) against
# the local `desktop` template (scenarios/templates/desktop) on one `abxlua serve --tls` (issue
# 25 item 3). A peer suite: `make peer-suites` runs it, never `make test` (it needs npm).
#   bash tests/peer_suites/e2b_desktop.sh path/to/abxlua
# Deploys the template to that serve with `abxlua template deploy desktop` through a provider
# written for it (kind remote, flavor e2b, serve's API URL, domain and CA: the config is the
# repository's config/abxlua.yaml with that provider added, in the run's directory), then runs
# desktop-2.4.0/desktop.mjs with ONLY PATH, HOME, TMPDIR, E2B_API_KEY, E2B_DOMAIN=<domain>:<port>
# and NODE_EXTRA_CA_CERTS. It prints `ok|FAIL <check>: <detail>` per check, `PEER-FAIL
# e2b-desktop <class> <check>: <first error line>` per failure and last `PEER-SUITE e2b-desktop
# passed=N failed=N skipped=N`.
# Exit status: 0 when the checks ran (the lines are the result), 1 when setup, serve or the
# template's deploy failed (a PEER-SUITE line with the failure still printed for a failed
# deploy), 77 without root, bwrap, node or npm.
set -u
ABX=${1:?usage: e2b_desktop.sh path/to/abxlua}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
ABX=$(cd "$(dirname "$ABX")" && pwd)/$(basename "$ABX")
PKG="$HERE/desktop-2.4.0"
if [ "$(id -u)" != 0 ]; then echo "SKIP: abxlua serve needs root (bubblewrap namespaces)"; exit 77; fi
for tool in bwrap node npm; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not found"; exit 77; }
done
(cd "$PKG" && flock .npm-ci.lock sh -c '[ -d node_modules/@e2b/desktop ] || npm ci --no-audit --no-fund >/dev/null 2>&1') ||
  { echo "npm ci in $PKG failed"; exit 1; }

run=$(mktemp -d "${TMPDIR:-/tmp}/abxlua-e2b-desktop.XXXXXX")
# shellcheck source=tests/peer_suites/e2b_serve_tls.sh
. "$HERE/e2b_serve_tls.sh"
cleanup() {
  serve_tls_stop
  [ -n "${E2B_DESKTOP_KEEP:-}" ] && echo "# kept $run" || rm -rf "$run"
}
trap cleanup EXIT
serve_tls_start "$ABX" "$run" || exit 1
declare -A E
for kv in "${E2B_ENV[@]}"; do E[${kv%%=*}]=${kv#*=}; done
echo "# abxlua serve --tls (pid $SERVE_PID): E2B_DOMAIN=${E[E2B_DOMAIN]} NODE_EXTRA_CA_CERTS=${E[NODE_EXTRA_CA_CERTS]}"

# the provider of this serve, added to the repository's config
python3 - "$ROOT/config/abxlua.yaml" "$run/abxlua.yaml" "${E[E2B_DOMAIN]}" "${E[NODE_EXTRA_CA_CERTS]}" <<'PY' || exit 1
import sys
src, dst, domain, ca = sys.argv[1:5]
s = open(src).read()
if s.count("\nproviders:\n") != 1:
    sys.exit("config/abxlua.yaml: no single 'providers:' line to add the peer provider under")
block = ("providers:\n  peer-serve:\n    kind: remote\n    flavor: e2b\n"
         "    api_url: https://api.%s\n    domain: %s\n    envd_routing: host\n"
         "    route_version: v2\n    ca_file: %s\n"
         "    capabilities: [templates_build, envd, e2b_api, v2_routes]\n") % (domain, domain, ca)
open(dst, "w").write(s.replace("\nproviders:\n", "\n" + block, 1))
PY
echo "# deploying the desktop template (scenarios/templates/desktop)"
if ! (cd "$ROOT" && env E2B_API_KEY="${E[E2B_API_KEY]}" timeout 1800 "$ABX" template deploy desktop \
        --config "$run/abxlua.yaml" --provider peer-serve -q >"$run/deploy.log" 2>&1); then
  echo "template deploy failed; the end of its output:"
  tail -n 20 "$run/deploy.log" | sed 's/^/  | /'
  echo "PEER-FAIL e2b-desktop product-gap template deploy: $(grep -v '^ *$' "$run/deploy.log" | tail -n 1)"
  echo "PEER-SUITE e2b-desktop passed=0 failed=1 skipped=0"
  exit 1
fi
(cd "$PKG" && env -i PATH="$PATH" HOME="$run" TMPDIR="${TMPDIR:-/tmp}" E2B_API_KEY="${E[E2B_API_KEY]}" \
   E2B_DOMAIN="${E[E2B_DOMAIN]}" NODE_EXTRA_CA_CERTS="${E[NODE_EXTRA_CA_CERTS]}" \
   timeout -k 10 900 node desktop.mjs) || echo "desktop.mjs exited $?"
exit 0
