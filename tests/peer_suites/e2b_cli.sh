#!/usr/bin/env bash
# E2B's CLI test suite (e2b-dev/E2B packages/cli, tests/**), unmodified, against one `abxlua serve
# --tls` (issue 25 item 3). A peer suite: `make peer-suites` runs it, never `make test` (it
# installs ~660 npm packages and runs for minutes).
#   bash tests/peer_suites/e2b_cli.sh path/to/abxlua
# The suite is never copied into this repository: it is exported with `git archive` from the
# clone of https://github.com/e2b-dev/E2B named by E2B_SDK_DIR (bare or not) at E2B_COMMIT into
# E2B_CLI_WORK (default $TMPDIR/abxlua-e2b-cli-<commit>), with the monorepo's root manifest,
# lockfile, workspace file and .npmrc and packages/js-sdk (the CLI builds against the workspace's
# SDK source); dependencies come from the npm registry through the pnpm version the monorepo pins
# (--frozen-lockfile --filter @e2b/cli...). The suite's global setup runs `pnpm build` (tsdown):
# a `pnpm` on PATH runs that pinned pnpm through npx. tsdown loads its TypeScript config natively
# on node >= 22.18 and through the optional peer `unrun` before: on an older node, unrun
# (UNRUN_VERSION) is installed beside the export and linked into its node_modules. The export and
# install are kept (stamped) and reused.
# vitest gets ONLY PATH, a fresh HOME (no ~/.e2b config), TMPDIR, E2B_API_KEY, E2B_ACCESS_TOKEN,
# E2B_DOMAIN=<domain>:<port> and NODE_EXTRA_CA_CERTS (serve's CA). e2b_cli_report.mjs prints a
# `PEER-FAIL e2b-cli <class> <test>: <first error line>` per failure and last
# `PEER-SUITE e2b-cli passed=N failed=N skipped=N`.
# Exit status: 0 when the suite ran (the lines are the result), 1 when setup or serve failed,
# 77 without E2B_SDK_DIR, root, bwrap, node, npm or git (the reason printed).
set -u
ABX=${1:?usage: e2b_cli.sh path/to/abxlua}
HERE=$(cd "$(dirname "$0")" && pwd)
ABX=$(cd "$(dirname "$ABX")" && pwd)/$(basename "$ABX")
E2B_COMMIT=${E2B_COMMIT:-b8029973aa7da5f741f7bb1a9f833b38a0885438}
UNRUN_VERSION=0.2.39
GET_E2B="git clone --bare https://github.com/e2b-dev/E2B.git e2b.git && export E2B_SDK_DIR=\$PWD/e2b.git"

if [ -z "${E2B_SDK_DIR:-}" ]; then
  echo "SKIP: E2B_SDK_DIR is not set: a clone of E2B's repository with $E2B_COMMIT, e.g. $GET_E2B"
  exit 77
fi
if [ "$(id -u)" != 0 ]; then echo "SKIP: abxlua serve needs root (bubblewrap namespaces)"; exit 77; fi
for tool in bwrap node npm npx git; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not found"; exit 77; }
done
if ! git -C "$E2B_SDK_DIR" cat-file -e "$E2B_COMMIT^{commit}" 2>/dev/null; then
  echo "E2B_SDK_DIR=$E2B_SDK_DIR has no commit $E2B_COMMIT (get one with: $GET_E2B)"
  exit 1
fi
WORK=${E2B_CLI_WORK:-${TMPDIR:-/tmp}/abxlua-e2b-cli-${E2B_COMMIT:0:8}}
CLI="$WORK/packages/cli"
STAMP="$E2B_COMMIT unrun@$UNRUN_VERSION"

# ---- export and install (once per commit) -----------------------------------------------------
if [ "$(cat "$WORK/.abxlua-stamp" 2>/dev/null)" != "$STAMP" ]; then
  echo "# exporting e2b-dev/E2B@${E2B_COMMIT:0:8} packages/cli and packages/js-sdk to $WORK"
  rm -rf "$WORK" && mkdir -p "$WORK" || exit 1
  git -C "$E2B_SDK_DIR" archive "$E2B_COMMIT" package.json pnpm-lock.yaml pnpm-workspace.yaml \
    .npmrc packages/cli packages/js-sdk | tar -x -C "$WORK" || { echo "git archive failed"; exit 1; }
  pnpm_spec=$(node -e 'process.stdout.write(require(process.argv[1]).packageManager || "pnpm@10")' "$WORK/package.json")
  mkdir -p "$WORK/.bin"
  printf '#!/bin/sh\nexec npx --yes %s "$@"\n' "$pnpm_spec" >"$WORK/.bin/pnpm" && chmod +x "$WORK/.bin/pnpm"
  echo "# installing its dependencies with $pnpm_spec (frozen lockfile)"
  # --ignore-scripts: no postinstall downloads; engine-strict off: tsdown asks for node 22.18
  (cd "$WORK" && npx --yes "$pnpm_spec" install --frozen-lockfile --filter '@e2b/cli...' \
     --ignore-scripts --config.engine-strict=false --reporter=append-only >"$WORK/install.log" 2>&1) ||
    { echo "pnpm install failed:"; tail -n 30 "$WORK/install.log"; exit 1; }
  if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 22 || (a === 22 && b >= 18) ? 0 : 1)'; then
    echo "# node $(node --version): installing unrun@$UNRUN_VERSION for tsdown's TypeScript config"
    mkdir -p "$WORK/.unrun" && echo '{"private": true}' >"$WORK/.unrun/package.json"
    (cd "$WORK/.unrun" && npm install --no-audit --no-fund "unrun@$UNRUN_VERSION" >>"$WORK/install.log" 2>&1) ||
      { echo "npm install unrun failed:"; tail -n 20 "$WORK/install.log"; exit 1; }
    ln -sfn "$WORK/.unrun/node_modules/unrun" "$WORK/node_modules/unrun"
  fi
  echo "$STAMP" >"$WORK/.abxlua-stamp"
fi

# ---- the server and the suite ----------------------------------------------------------------
run=$(mktemp -d "${TMPDIR:-/tmp}/abxlua-e2b-cli-run.XXXXXX")
# shellcheck source=tests/peer_suites/e2b_serve_tls.sh
. "$HERE/e2b_serve_tls.sh"
cleanup() {
  serve_tls_stop
  [ -n "${E2B_CLI_KEEP:-}" ] && echo "# kept $run" || rm -rf "$run"
}
trap cleanup EXIT
serve_tls_start "$ABX" "$run" || exit 1
echo "# abxlua serve --tls (pid $SERVE_PID): ${E2B_ENV[*]}" | sed 's/E2B_API_KEY=[^ ]*/E2B_API_KEY=.../; s/E2B_ACCESS_TOKEN=[^ ]*/E2B_ACCESS_TOKEN=.../'
mkdir -p "$run/home"
(cd "$CLI" && env -i PATH="$WORK/.bin:$PATH" HOME="$run/home" TMPDIR="${TMPDIR:-/tmp}" "${E2B_ENV[@]}" \
   timeout -k 10 "${E2B_CLI_TIMEOUT:-1800}" ./node_modules/.bin/vitest run --reporter=json \
   --outputFile="$run/report.json" >"$run/vitest.log" 2>&1)
rc=$?
if [ ! -s "$run/report.json" ]; then
  echo "vitest wrote no report (exit $rc); the end of its output:"
  tail -n 30 "$run/vitest.log" | sed 's/^/  | /'
  echo "PEER-SUITE e2b-cli passed=0 failed=1 skipped=0"
  exit 1
fi
node "$HERE/e2b_cli_report.mjs" "$run/report.json"
exit 0
