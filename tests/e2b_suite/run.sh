#!/usr/bin/env bash
# E2B's own JS SDK test suite (e2b-dev/E2B, packages/js-sdk, tests/sandbox/** and tests/api/**),
# unmodified, against one `abxlua serve` (issue 10, second acceptance point). Not part of
# `make test`: it installs ~600 npm packages and runs for many minutes. `make e2b-suite` runs it.
#   bash tests/e2b_suite/run.sh path/to/abxlua [tls|url] [test-file-substring ...]
#   tls (default): `serve --tls`; vitest gets ONLY E2B_API_KEY, E2B_DOMAIN=<domain>:<port> and
#                  NODE_EXTRA_CA_CERTS (E2B's own CI gives the SDK only a key and a domain)
#   url:           `serve`; E2B_API_KEY, E2B_API_URL, E2B_SANDBOX_URL, E2B_DOMAIN (a fallback for a
#                  serve without --tls; signed URLs and getHost() then cannot work as on E2B)
# The suite is never copied into this repository: it is exported with `git archive` from the
# clone of https://github.com/e2b-dev/E2B named by E2B_SDK_DIR (bare or not; required: without it
# the script says how to get one and exits 77, skipped) at E2B_COMMIT into E2B_SUITE_WORK (default $TMPDIR/abxlua-e2b-suite-<commit>), with the monorepo's root manifest,
# pnpm-lock.yaml, pnpm-workspace.yaml and .npmrc that the js-sdk workspace package needs, and its
# dependencies are installed from the npm registry by the pnpm version the monorepo pins
# (`packageManager`), through npx, from the lockfile (--frozen-lockfile --filter e2b). The export
# and install are kept (stamped by commit) and reused by the next run.
# Each test file runs alone (`vitest run --project unit <file>`, as E2B's CI runs the unit project),
# with a JSON report; report.mjs prints the per-file table (file, passed, failed, skipped,
# seconds), the totals and every failing test with the first line of its error.
# Exit status: 0 when every file ran (whatever the tests said: the table is the result), 1 when
# serve or the setup failed or E2B_SDK_DIR is not a clone with E2B_COMMIT, 77 without
# E2B_SDK_DIR, root, bwrap, node, npm or git.
set -u
ABX=${1:?usage: run.sh path/to/abxlua [tls|url] [file ...]}
shift
MODE=tls
case "${1:-}" in tls|url) MODE=$1; shift;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
ABX=$(cd "$(dirname "$ABX")" && pwd)/$(basename "$ABX")
E2B_COMMIT=${E2B_COMMIT:-b8029973aa7da5f741f7bb1a9f833b38a0885438}
FILE_TIMEOUT=${E2B_SUITE_FILE_TIMEOUT:-600}
GET_E2B="git clone --bare https://github.com/e2b-dev/E2B.git e2b.git && export E2B_SDK_DIR=\$PWD/e2b.git"

if [ -z "${E2B_SDK_DIR:-}" ]; then
  echo "SKIP: E2B_SDK_DIR is not set: set it to a clone of E2B's repository (bare or not) that"
  echo "      has commit $E2B_COMMIT, e.g.  $GET_E2B"
  exit 77
fi

if [ "$(id -u)" != 0 ]; then echo "SKIP: abxlua serve needs root (bubblewrap namespaces)"; exit 77; fi
for tool in bwrap node npm npx git; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not found"; exit 77; }
done
if ! git -C "$E2B_SDK_DIR" cat-file -e "$E2B_COMMIT^{commit}" 2>/dev/null; then
  echo "E2B_SDK_DIR=$E2B_SDK_DIR is not a clone of E2B's repository with commit $E2B_COMMIT."
  echo "Get one with  $GET_E2B"
  echo "(in an older clone: git -C \"\$E2B_SDK_DIR\" fetch origin)"
  exit 1
fi
WORK=${E2B_SUITE_WORK:-${TMPDIR:-/tmp}/abxlua-e2b-suite-${E2B_COMMIT:0:8}}
SDK="$WORK/packages/js-sdk"

# ---- export and install (once per commit) -----------------------------------------------------
if [ "$(cat "$WORK/.abxlua-stamp" 2>/dev/null)" != "$E2B_COMMIT" ]; then
  echo "# exporting e2b-dev/E2B@${E2B_COMMIT:0:8} packages/js-sdk to $WORK"
  rm -rf "$WORK" && mkdir -p "$WORK" || exit 1
  git -C "$E2B_SDK_DIR" archive "$E2B_COMMIT" package.json pnpm-lock.yaml pnpm-workspace.yaml .npmrc packages/js-sdk |
    tar -x -C "$WORK" || { echo "git archive failed"; exit 1; }
  pnpm_spec=$(node -e 'process.stdout.write(require(process.argv[1]).packageManager || "pnpm@10")' "$WORK/package.json")
  echo "# installing its dependencies with $pnpm_spec (frozen lockfile)"
  # --ignore-scripts: no postinstall downloads (playwright browsers, workerd); the unit project
  # needs none. engine-strict off: tsdown (the build tool, unused by the tests) asks for node 22.
  (cd "$WORK" && npx --yes "$pnpm_spec" install --frozen-lockfile --filter e2b --ignore-scripts \
     --config.engine-strict=false --reporter=append-only >"$WORK/install.log" 2>&1) ||
    { echo "pnpm install failed:"; tail -n 30 "$WORK/install.log"; exit 1; }
  echo "$E2B_COMMIT" >"$WORK/.abxlua-stamp"
fi

# ---- the server ------------------------------------------------------------------------------
run=$(mktemp -d "${TMPDIR:-/tmp}/abxlua-e2b-suite-run.XXXXXX")
serve_pid=
cleanup() {
  if [ -n "$serve_pid" ] && kill -0 "$serve_pid" 2>/dev/null; then
    kill -TERM "$serve_pid" 2>/dev/null
    for _ in $(seq 1 300); do kill -0 "$serve_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$serve_pid" 2>/dev/null
  fi
  [ -n "${E2B_SUITE_KEEP:-}" ] && echo "# kept $run" || rm -rf "$run"
}
trap cleanup EXIT
serve_args=(--port 0 --ready-fd 3)
[ "$MODE" = tls ] && serve_args=(--tls "${serve_args[@]}")
env -u ABX_LOCAL_API_KEY "$ABX" serve "${serve_args[@]}" 3>"$run/ready" >"$run/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 1 300); do
  [ "$(tail -c1 "$run/ready" 2>/dev/null | od -An -c | tr -d ' ')" = '\n' ] && break
  kill -0 "$serve_pid" 2>/dev/null || break
  sleep 0.1
done
ready=$(head -n1 "$run/ready" 2>/dev/null)
if [ -z "$ready" ]; then
  echo "abxlua serve ${serve_args[*]} did not write its ready line; its output:"
  sed 's/^/  | /' "$run/serve.log"
  [ "$MODE" = tls ] && echo "(without --tls in this build, run: $0 $ABX url)"
  exit 1
fi
field() { node -e 'const r = JSON.parse(process.argv[1]); const v = r[process.argv[2]]; process.stdout.write(v === undefined ? "" : String(v))' "$ready" "$1"; }
url=$(field url) key=$(field api_key) domain=$(field domain) port=$(field port)
suite_env=(E2B_API_KEY="$key")
if [ "$MODE" = tls ]; then
  ca=$(field ca_cert)
  [ -n "$ca" ] && [ -f "$ca" ] || { echo "serve --tls: no CA file in the ready line's ca_cert: $ready"; exit 1; }
  case "$domain" in *:*) ;; *) domain="$domain:$port";; esac
  suite_env+=(E2B_DOMAIN="$domain" NODE_EXTRA_CA_CERTS="$ca")
  echo "# abxlua serve --tls (pid $serve_pid): E2B_DOMAIN=$domain NODE_EXTRA_CA_CERTS=$ca"
else
  suite_env+=(E2B_API_URL="$url" E2B_SANDBOX_URL="$url" E2B_DOMAIN="$domain")
  echo "# abxlua serve (pid $serve_pid): E2B_API_URL=E2B_SANDBOX_URL=$url E2B_DOMAIN=$domain"
fi

# ---- the suite, file by file -------------------------------------------------------------------
mapfile -t files < <(cd "$SDK" && find tests/sandbox tests/api -name '*.test.ts' | LC_ALL=C sort)
if [ $# -gt 0 ]; then
  sel=()
  for f in "${files[@]}"; do for w in "$@"; do case "$f" in *"$w"*) sel+=("$f"); break;; esac; done; done
  files=("${sel[@]}")
fi
echo "# e2b-dev/E2B@${E2B_COMMIT:0:8} packages/js-sdk: ${#files[@]} test files, $MODE mode"
mkdir -p "$run/reports"
: >"$run/index.tsv"
n=0
for f in "${files[@]}"; do
  n=$((n + 1))
  out="$run/reports/$n.json"
  t0=$(date +%s.%N)
  # Only the suite's variables reach vitest (its config copies process.env into the tests).
  (cd "$SDK" && env -i PATH="$PATH" HOME="${HOME:-/root}" TMPDIR="${TMPDIR:-/tmp}" "${suite_env[@]}" \
     timeout -k 10 "$FILE_TIMEOUT" ./node_modules/.bin/vitest run --project unit --reporter=json \
     --outputFile="$out" "$f" >"$run/reports/$n.log" 2>&1)
  rc=$?
  t1=$(date +%s.%N)
  printf '%s\t%s\t%s\t%s\n' "$f" "$out" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')" >>"$run/index.tsv"
  printf '# %3d/%d %s (exit %s)\n' "$n" "${#files[@]}" "$f" "$rc"
done
node "$HERE/report.mjs" "$run/index.tsv"
exit 0
