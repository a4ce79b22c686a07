#!/usr/bin/env bash
# Conformance (issue 4 item 8, issue 10 item 8): the official E2B JS SDK, pinned per version in
# sdk-<version>/package.json + package-lock.json, unmodified, against `abxlua serve`.
#   bash tests/conformance/run.sh path/to/abxlua <sdk-version> <mode> [check-name-substring ...]
#   sdk-version: a directory sdk-<version>/ next to this script (2.50.0, 2.51.0), or ci-<version>
#             (ci-2.8.0): the @e2b/code-interpreter pin ci-<version>/, checked by code_interpreter.mjs,
#             or build-<version> (build-2.51.0): the pin sdk-<version>/ checked by
#             template_build.mjs (Template.build against serve's template build API),
#             or opensandbox-<version> (opensandbox-0.1.11): the pin opensandbox-<version>/ of
#             OpenSandbox's JS SDK @alibaba-group/opensandbox, checked by opensandbox.mjs against
#             `serve --flavor opensandbox` (the SDK gets OPEN_SANDBOX_API_KEY and
#             OPEN_SANDBOX_DOMAIN; tls: https://<host:port> and NODE_EXTRA_CA_CERTS). OpenSandbox's
#             code-interpreter JS SDK is not on npm: with OPENSANDBOX_SDK_DIR (a clone of
#             https://github.com/opensandbox-group/OpenSandbox, bare or not) its
#             sdks/code-interpreter/javascript/src at OPENSANDBOX_COMMIT is exported with git
#             archive and bundled by the pin's esbuild into the pin's node_modules (never into the
#             repository); without it those checks fail as `setup`
#   mode url: `serve --port 0`; the SDK gets E2B_API_KEY, E2B_API_URL, E2B_SANDBOX_URL (the same
#             URL: envd is reached by the E2b-Sandbox-Id/E2b-Sandbox-Port headers) and
#             E2B_DOMAIN=localhost
#   mode tls: `serve --tls --port 0`; the SDK's default addressing: ONLY E2B_API_KEY,
#             E2B_DOMAIN=<domain>:<port> (api.<domain>, 49983-<id>.<domain>, <port>-<id>.<domain>)
#             and NODE_EXTRA_CA_CERTS=<the CA serve generated> (the ready line's `ca_cert`)
# Installs the pin with `npm ci` (skipped when its node_modules matches its package-lock.json;
# serialised with flock, since ctest runs both modes of one pin at once), starts serve with
# --ready-fd 3, runs conformance.mjs against it, then stops serve with SIGTERM and checks that it
# exited 0 and that none of its processes (bwrap sandboxes and their descendants) remain.
# Exit status: conformance.mjs's, or 1 if serve misbehaved or lacks the mode (a missing server
# feature fails, it is never skipped), or 77 (skipped) without root, bwrap, node or npm.
set -u
ABX=${1:?usage: run.sh path/to/abxlua <sdk-version> <url|tls> [check ...]}
SDK=${2:?usage: run.sh path/to/abxlua <sdk-version> <url|tls> [check ...]}
MODE=${3:?usage: run.sh path/to/abxlua <sdk-version> <url|tls> [check ...]}
shift 3
HERE=$(cd "$(dirname "$0")" && pwd)
ABX=$(cd "$(dirname "$ABX")" && pwd)/$(basename "$ABX")
# sdk-version ci-<v>: the pin ci-<v>/ of @e2b/code-interpreter, checked by code_interpreter.mjs
FLAVOR=
case "$SDK" in
  ci-*) PIN="$HERE/$SDK"; SCRIPT=code_interpreter.mjs ;;
  opensandbox-*) PIN="$HERE/$SDK"; SCRIPT=opensandbox.mjs; FLAVOR=opensandbox ;;
  build-*) PIN="$HERE/sdk-${SDK#build-}"; SCRIPT=template_build.mjs ;;
  *) PIN="$HERE/sdk-$SDK"; SCRIPT=conformance.mjs ;;
esac
[ -f "$PIN/package-lock.json" ] || { echo "no pin $PIN/package-lock.json (pins: $(cd "$HERE" && echo sdk-* ci-* opensandbox-*))"; exit 2; }
case "$MODE" in url|tls) ;; *) echo "mode must be url or tls, not '$MODE'"; exit 2;; esac

if [ "$(id -u)" != 0 ]; then echo "SKIP: abxlua serve needs root (bubblewrap namespaces)"; exit 77; fi
for tool in bwrap node npm flock; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not found"; exit 77; }
done

# ---- the pinned SDK ------------------------------------------------------------------------
(
  flock 9
  stamp="$PIN/node_modules/.conformance-lock.sha256"
  want=$(sha256sum "$PIN/package-lock.json" | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "# npm ci in sdk-$SDK"
    (cd "$PIN" && npm ci --no-audit --no-fund --loglevel=error) || { echo "npm ci failed"; exit 1; }
    echo "$want" >"$stamp"
  fi
) 9>"$PIN/.npm-ci.lock" || exit 1

# ---- OpenSandbox's code-interpreter SDK (opensandbox-* only): from the pinned commit's source --
OS_COMMIT=${OPENSANDBOX_COMMIT:-3bb6fad3d8b60bca70384c75a1f061c7514e248b}
os_ci=
if [ "$FLAVOR" = opensandbox ] && [ -n "${OPENSANDBOX_SDK_DIR:-}" ]; then
  os_ci="$PIN/node_modules/.abxlua-os-ci-${OS_COMMIT:0:12}/index.mjs"
  (
    flock 9
    [ -f "$os_ci" ] && exit 0
    git -C "$OPENSANDBOX_SDK_DIR" cat-file -e "$OS_COMMIT^{commit}" 2>/dev/null || {
      echo "OPENSANDBOX_SDK_DIR=$OPENSANDBOX_SDK_DIR is not a clone of OpenSandbox with commit $OS_COMMIT"
      echo "(git clone --bare https://github.com/opensandbox-group/OpenSandbox.git)"; exit 1; }
    src=$(mktemp -d "${TMPDIR:-/tmp}/abxlua-os-ci.XXXXXX")
    git -C "$OPENSANDBOX_SDK_DIR" archive "$OS_COMMIT" sdks/code-interpreter/javascript/src 2>"$src/git.err" |
      tar -x -C "$src" && [ -f "$src/sdks/code-interpreter/javascript/src/index.ts" ] ||
      { echo "git archive of sdks/code-interpreter/javascript/src failed:"; cat "$src/git.err"; rm -rf "$src"; exit 1; }
    echo "# bundling OpenSandbox@${OS_COMMIT:0:8} sdks/code-interpreter/javascript with esbuild"
    "$PIN/node_modules/.bin/esbuild" "$src/sdks/code-interpreter/javascript/src/index.ts" --bundle --format=esm \
      --platform=node --target=node20 --external:@alibaba-group/opensandbox --log-level=warning \
      --outfile="$os_ci" || { echo "esbuild failed"; rm -rf "$src"; exit 1; }
    rm -rf "$src"
  ) 9>"$PIN/.npm-ci.lock" || exit 1
fi

# ---- the server ----------------------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/abxlua-conformance.XXXXXX")
serve_pid=
cleanup() {
  if [ -n "$serve_pid" ] && kill -0 "$serve_pid" 2>/dev/null; then
    kill -TERM "$serve_pid" 2>/dev/null
    sleep 2
    kill -KILL "$serve_pid" 2>/dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT

serve_args=(--port 0 --ready-fd 3 --build-cache "$work/build-cache")
[ "$MODE" = tls ] && serve_args=(--tls "${serve_args[@]}")
[ -n "$FLAVOR" ] && serve_args+=(--flavor "$FLAVOR")
env -u ABX_LOCAL_API_KEY "$ABX" serve "${serve_args[@]}" 3>"$work/ready" >"$work/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 1 300); do
  grep -q . "$work/ready" 2>/dev/null && [ "$(tail -c1 "$work/ready" | od -An -c | tr -d ' ')" = '\n' ] && break
  kill -0 "$serve_pid" 2>/dev/null || break
  sleep 0.1
done
ready=$(head -n1 "$work/ready" 2>/dev/null)
if [ -z "$ready" ]; then
  echo "not ok - abxlua serve ${serve_args[*]} did not write its ready line; its output:"
  sed 's/^/  | /' "$work/serve.log"
  exit 1
fi
field() { node -e 'const r = JSON.parse(process.argv[1]); process.stdout.write(String(r[process.argv[2]]))' "$ready" "$1"; }
url=$(field url) && key=$(field api_key) && domain=$(field domain) && port=$(field port) ||
  { echo "bad ready line: $ready"; exit 1; }
state_dir="${TMPDIR:-/tmp}/abxlua-serve.$serve_pid"

# ---- the SDK against it --------------------------------------------------------------------
sdk_env=(E2B_API_KEY="$key" CONFORMANCE_SDK_DIR="$PIN" CONFORMANCE_MODE="$MODE")
if [ "$FLAVOR" = opensandbox ]; then
  # OpenSandbox's SDK: its own variables only (README "Connection Configuration")
  hostport=${url#*://}
  sdk_env=(OPEN_SANDBOX_API_KEY="$key" CONFORMANCE_SDK_DIR="$PIN" CONFORMANCE_MODE="$MODE")
  [ -n "$os_ci" ] && sdk_env+=(CONFORMANCE_OS_CI="$os_ci" CONFORMANCE_OS_CI_FROM="OpenSandbox@${OS_COMMIT:0:8} sdks/code-interpreter/javascript")
  if [ "$MODE" = url ]; then
    sdk_env+=(OPEN_SANDBOX_DOMAIN="$hostport")
  else
    ca=$(field ca_cert)
    [ "$ca" != undefined ] && [ -f "$ca" ] || { echo "not ok - serve --tls: no CA file in ca_cert: $ready"; exit 1; }
    sdk_env+=(OPEN_SANDBOX_DOMAIN="https://$hostport" NODE_EXTRA_CA_CERTS="$ca")
  fi
  echo "# abxlua serve --flavor opensandbox pid $serve_pid at $url; $SDK with OPEN_SANDBOX_DOMAIN/OPEN_SANDBOX_API_KEY"
elif [ "$MODE" = url ]; then
  sdk_env+=(E2B_API_URL="$url" E2B_SANDBOX_URL="$url" E2B_DOMAIN="$domain")
  echo "# abxlua serve pid $serve_pid at $url (domain $domain); $SDK with E2B_API_URL/E2B_SANDBOX_URL"
else
  ca=$(field ca_cert)
  if [ "$ca" = undefined ] || [ ! -f "$ca" ]; then
    echo "not ok - serve --tls: its ready line has no CA file in ca_cert: $ready"
    kill -TERM "$serve_pid"; wait "$serve_pid"; serve_pid=
    exit 1
  fi
  case "$domain" in *:*) ;; *) domain="$domain:$port";; esac
  sdk_env+=(E2B_DOMAIN="$domain" NODE_EXTRA_CA_CERTS="$ca")
  echo "# abxlua serve --tls pid $serve_pid at $url; $SDK with only E2B_DOMAIN=$domain and the CA $ca"
fi
(
  cd "$HERE" &&
  env -u E2B_DEBUG -u E2B_ACCESS_TOKEN -u E2B_API_URL -u E2B_SANDBOX_URL -u E2B_DOMAIN -u NODE_EXTRA_CA_CERTS \
    -u OPEN_SANDBOX_API_KEY -u OPEN_SANDBOX_DOMAIN -u OPENSANDBOX_DISABLE_METRICS \
    "${sdk_env[@]}" node "$SCRIPT" "$@"
)
rc=$?

# ---- shutdown: exit 0, nothing left ---------------------------------------------------------
# Descendants of serve now, each as pid:starttime (so a reused pid is not mistaken for a survivor).
descendants() {
  local -A kids=()
  local pid ppid
  while read -r pid ppid; do kids[$ppid]+="$pid "; done < <(ps -e -o pid=,ppid=)
  local queue=("$1") out=() p c
  while [ ${#queue[@]} -gt 0 ]; do
    p=${queue[0]}; queue=("${queue[@]:1}")
    for c in ${kids[$p]:-}; do out+=("$c"); queue+=("$c"); done
  done
  for c in "${out[@]}"; do
    t=$(sed 's/.*) //' "/proc/$c/stat" 2>/dev/null | cut -d' ' -f20) && [ -n "$t" ] && echo "$c:$t"
  done
}
before=$(descendants "$serve_pid")
kill -TERM "$serve_pid"
serve_rc=
for _ in $(seq 1 300); do
  if ! kill -0 "$serve_pid" 2>/dev/null; then break; fi
  sleep 0.1
done
if kill -0 "$serve_pid" 2>/dev/null; then
  echo "not ok - serve shutdown: still running 30 s after SIGTERM"
  kill -KILL "$serve_pid"
fi
wait "$serve_pid"
serve_rc=$?
serve_pid=
sleep 0.5
left=()
for pt in $before; do
  p=${pt%%:*}; t=${pt#*:}
  st=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null) || continue
  [ "$(echo "$st" | cut -d' ' -f20)" = "$t" ] || continue
  [ "$(echo "$st" | cut -d' ' -f1)" = Z ] && continue
  left+=("$p ($(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline" | cut -c1-100))")
done
for d in /proc/[0-9]*; do
  if tr '\0' ' ' 2>/dev/null <"$d/cmdline" | grep -qF "$state_dir"; then
    p=${d#/proc/}
    case " ${left[*]} " in *" $p "*) ;; *) left+=("$p ($(tr '\0' ' ' 2>/dev/null <"$d/cmdline" | cut -c1-100))");; esac
  fi
done
fail=0
if [ "$serve_rc" != 0 ]; then
  echo "not ok - serve shutdown: exit status $serve_rc after SIGTERM; its output:"
  tail -n 40 "$work/serve.log" | sed 's/^/  | /'
  fail=1
fi
if [ ${#left[@]} -gt 0 ]; then
  echo "not ok - serve shutdown: processes left behind:"
  printf '  %s\n' "${left[@]}"
  fail=1
fi
if [ -e "$state_dir" ]; then echo "not ok - serve shutdown: state dir left: $state_dir"; fail=1; fi
[ $fail = 0 ] && echo "# serve stopped: exit 0, no sandbox process left"
if [ $rc = 0 ] && [ $fail != 0 ]; then rc=1; fi
exit $rc
