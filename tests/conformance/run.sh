#!/usr/bin/env bash
# Conformance (issue 4 item 8): the official E2B JS SDK, pinned in package.json/package-lock.json,
# unmodified, against `abxlua serve`.
#   bash tests/conformance/run.sh path/to/abxlua [check-name-substring ...]
# Installs the SDK with `npm ci` (skipped when node_modules matches package-lock.json), starts
# `abxlua serve --port 0 --ready-fd 3`, points the SDK at it through E2B_API_KEY, E2B_API_URL,
# E2B_SANDBOX_URL (the same URL: envd is reached by the E2b-Sandbox-Id/E2b-Sandbox-Port headers)
# and E2B_DOMAIN=localhost, runs conformance.mjs, then stops serve with SIGTERM and checks that it
# exited 0 and that none of its processes (bwrap sandboxes and their descendants) remain.
# Exit status: conformance.mjs's, or 1 if serve misbehaved, or 77 (skipped) without root, bwrap,
# node or npm.
set -u
ABX=${1:?usage: run.sh path/to/abxlua [check ...]}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
ABX=$(cd "$(dirname "$ABX")" && pwd)/$(basename "$ABX")

if [ "$(id -u)" != 0 ]; then echo "SKIP: abxlua serve needs root (bubblewrap namespaces)"; exit 77; fi
for tool in bwrap node npm; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not found"; exit 77; }
done

# ---- the pinned SDK ------------------------------------------------------------------------
stamp="$HERE/node_modules/.conformance-lock.sha256"
want=$(sha256sum "$HERE/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "# npm ci"
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error) || { echo "npm ci failed"; exit 1; }
  echo "$want" >"$stamp"
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

env -u ABX_LOCAL_API_KEY "$ABX" serve --port 0 --ready-fd 3 3>"$work/ready" >"$work/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 1 300); do
  grep -q . "$work/ready" 2>/dev/null && [ "$(tail -c1 "$work/ready" | od -An -c | tr -d ' ')" = '\n' ] && break
  kill -0 "$serve_pid" 2>/dev/null || break
  sleep 0.1
done
ready=$(head -n1 "$work/ready" 2>/dev/null)
if [ -z "$ready" ]; then
  echo "abxlua serve did not write its ready line; its output:"
  sed 's/^/  | /' "$work/serve.log"
  exit 1
fi
field() { node -e 'const r = JSON.parse(process.argv[1]); process.stdout.write(String(r[process.argv[2]]))' "$ready" "$1"; }
url=$(field url) && key=$(field api_key) && domain=$(field domain) || { echo "bad ready line: $ready"; exit 1; }
echo "# abxlua serve pid $serve_pid at $url (domain $domain)"
state_dir="${TMPDIR:-/tmp}/abxlua-serve.$serve_pid"

# ---- the SDK against it --------------------------------------------------------------------
(
  cd "$HERE" &&
  env -u E2B_DEBUG -u E2B_ACCESS_TOKEN \
    E2B_API_KEY="$key" E2B_API_URL="$url" E2B_SANDBOX_URL="$url" E2B_DOMAIN="$domain" \
    node conformance.mjs "$@"
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
