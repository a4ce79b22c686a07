# shellcheck shell=bash
# Sourced by the e2b-cli, e2b-desktop and code-interpreter peer suites (tests/peer_suites/): starts one
# `abxlua serve --tls` as tests/e2b_suite/run.sh does and sets what E2B's clients need.
#   serve_tls_start ABXLUA RUN_DIR [serve args...]
# Sets SERVE_PID, E2B_ENV (an array: E2B_API_KEY, E2B_ACCESS_TOKEN, E2B_DOMAIN=<domain>:<port>,
# NODE_EXTRA_CA_CERTS=<serve's CA>) and SERVE_URL; returns 1 (with serve's output on stderr)
# when serve did not write its ready line. serve_tls_stop ends that serve (TERM, then KILL after
# 30 s); the sourcing script calls it from its EXIT trap.
SERVE_PID=
E2B_ENV=()
SERVE_URL=

serve_tls_start() {
  local abx=$1 run=$2
  shift 2
  env -u ABX_LOCAL_API_KEY -u ABX_LOCAL_ACCESS_TOKEN "$abx" serve --tls --port 0 --ready-fd 3 "$@" \
    3>"$run/ready" >"$run/serve.log" 2>&1 &
  SERVE_PID=$!
  local _
  for _ in $(seq 1 600); do
    [ "$(tail -c1 "$run/ready" 2>/dev/null | od -An -c | tr -d ' ')" = '\n' ] && break
    kill -0 "$SERVE_PID" 2>/dev/null || break
    sleep 0.1
  done
  local ready
  ready=$(head -n1 "$run/ready" 2>/dev/null)
  if [ -z "$ready" ]; then
    echo "abxlua serve --tls did not write its ready line; its output:" >&2
    sed 's/^/  | /' "$run/serve.log" >&2
    return 1
  fi
  local key token domain port ca
  field() { node -e 'const r = JSON.parse(process.argv[1]); const v = r[process.argv[2]]; process.stdout.write(v === undefined ? "" : String(v))' "$ready" "$1"; }
  key=$(field api_key) token=$(field access_token) domain=$(field domain) port=$(field port)
  ca=$(field ca_cert) SERVE_URL=$(field url)
  case "$domain" in *:*) ;; *) domain="$domain:$port" ;; esac
  [ -n "$ca" ] && [ -f "$ca" ] || { echo "serve --tls: no CA file in its ready line: $ready" >&2; return 1; }
  E2B_ENV=(E2B_API_KEY="$key" E2B_ACCESS_TOKEN="$token" E2B_DOMAIN="$domain" NODE_EXTRA_CA_CERTS="$ca")
}

serve_tls_stop() {
  if [ -n "$SERVE_PID" ] && kill -0 "$SERVE_PID" 2>/dev/null; then
    kill -TERM "$SERVE_PID" 2>/dev/null
    local _
    for _ in $(seq 1 300); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SERVE_PID" 2>/dev/null
  fi
  SERVE_PID=
}
