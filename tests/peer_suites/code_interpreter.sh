#!/usr/bin/env bash
# E2B's code-interpreter JS suite (e2b-dev/code-interpreter, js/tests/**, unmodified) against one
# `abxlua serve --tls` and its built-in code-interpreter-v1 template (issue 25). Not part of
# `make test`: it installs the suite's npm packages and creates a sandbox per test for many
# minutes. `make ci-suite` runs it, `make peer-suites` too.
#   bash tests/peer_suites/code_interpreter.sh path/to/abxlua [test-file-substring ...]
# The suite is never copied into this repository: it is exported with `git archive` from the
# clone of https://github.com/e2b-dev/code-interpreter named by CI_REPO_DIR (bare or not;
# required: without it the script says how to get one and exits 77, skipped) at CI_COMMIT into
# CI_SUITE_WORK (default $TMPDIR/abxlua-ci-suite-<commit>): the monorepo's root manifest,
# pnpm-lock.yaml, pnpm-workspace.yaml and .npmrc, the other workspace packages' package.json (the
# lockfile names them) and js/. Its dependencies are installed from the npm registry by the pnpm
# version the monorepo pins (`packageManager`), through npx, from the lockfile (--frozen-lockfile
# --filter @e2b/code-interpreter, --ignore-scripts: no downloads at install). The export and
# install are kept (stamped by commit) and reused by the next run.
# vitest runs the suite's own config (js/vitest.config.mts: every tests/**/*.test.ts but
# its runtimes/ folder, up to 4 files at once) with a JSON report, given only E2B_API_KEY, E2B_DOMAIN
# and NODE_EXTRA_CA_CERTS (as tests/e2b_suite/run.sh, E2B's CI gives a key and a domain), and one
# runner option: --testTimeout/--hookTimeout CI_SUITE_TEST_TIMEOUT ms (default 180000; the
# suite's 30 s covers its per-test sandbox create, which a busy machine exceeds).
# ci_report.mjs prints the per-file table, the totals per language, each failure classified
# (needs internet, missing kernel, product gap) and a last line
#   PEER-SUITE code-interpreter passed=N failed=N skipped=N
# Exit status: 0 when the suite ran (whatever the tests said: the table is the result), 1 when
# serve or the setup failed or CI_REPO_DIR is not a clone with CI_COMMIT, 77 without CI_REPO_DIR,
# root, bwrap, node, npm or git.
set -u
ABX=${1:?usage: code_interpreter.sh path/to/abxlua [file ...]}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
ABX=$(cd "$(dirname "$ABX")" && pwd)/$(basename "$ABX")
CI_COMMIT=${CI_COMMIT:-7df1757bfd5baa037f909ce97c2dbe014da973c0}
TEST_TIMEOUT=${CI_SUITE_TEST_TIMEOUT:-180000}
RUN_TIMEOUT=${CI_SUITE_RUN_TIMEOUT:-5400}
GET_CI="git clone --bare https://github.com/e2b-dev/code-interpreter.git ci.git && export CI_REPO_DIR=\$PWD/ci.git"

if [ -z "${CI_REPO_DIR:-}" ]; then
  echo "SKIP: CI_REPO_DIR is not set: set it to a clone of E2B's code-interpreter repository"
  echo "      (bare or not) that has commit $CI_COMMIT, e.g.  $GET_CI"
  exit 77
fi
if [ "$(id -u)" != 0 ]; then echo "SKIP: abxlua serve needs root (bubblewrap namespaces)"; exit 77; fi
for tool in bwrap node npm npx git; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not found"; exit 77; }
done
if ! git -C "$CI_REPO_DIR" cat-file -e "$CI_COMMIT^{commit}" 2>/dev/null; then
  echo "CI_REPO_DIR=$CI_REPO_DIR is not a clone of e2b-dev/code-interpreter with commit $CI_COMMIT."
  echo "Get one with  $GET_CI"
  exit 1
fi
WORK=${CI_SUITE_WORK:-${TMPDIR:-/tmp}/abxlua-ci-suite-${CI_COMMIT:0:8}}

# ---- export and install (once per commit) -----------------------------------------------------
if [ "$(cat "$WORK/.abxlua-stamp" 2>/dev/null)" != "$CI_COMMIT" ]; then
  echo "# exporting e2b-dev/code-interpreter@${CI_COMMIT:0:8} js/ to $WORK"
  rm -rf "$WORK" && mkdir -p "$WORK" || exit 1
  git -C "$CI_REPO_DIR" archive "$CI_COMMIT" package.json pnpm-lock.yaml pnpm-workspace.yaml .npmrc \
      python/package.json chart_data_extractor/package.json template/package.json js |
    tar -x -C "$WORK" || { echo "git archive failed"; exit 1; }
  pnpm_spec=$(node -e 'process.stdout.write(require(process.argv[1]).packageManager || "pnpm@10")' "$WORK/package.json")
  echo "# installing its dependencies with $pnpm_spec (frozen lockfile)"
  (cd "$WORK" && npx --yes "$pnpm_spec" install --frozen-lockfile --filter @e2b/code-interpreter \
     --ignore-scripts --config.engine-strict=false --reporter=append-only >"$WORK/install.log" 2>&1) ||
    { echo "pnpm install failed:"; tail -n 30 "$WORK/install.log"; exit 1; }
  echo "$CI_COMMIT" >"$WORK/.abxlua-stamp"
fi

# ---- the server ------------------------------------------------------------------------------
run=$(mktemp -d "${TMPDIR:-/tmp}/abxlua-ci-suite-run.XXXXXX")
# shellcheck source=tests/peer_suites/e2b_serve_tls.sh
. "$HERE/e2b_serve_tls.sh"
cleanup() {
  serve_tls_stop
  [ -n "${CI_SUITE_KEEP:-}" ] && echo "# kept $run" || rm -rf "$run"
}
trap cleanup EXIT
serve_tls_start "$ABX" "$run" || exit 1
# E2B_ENV[2], [3]: E2B_DOMAIN and NODE_EXTRA_CA_CERTS ([0], [1] are the keys)
echo "# abxlua serve --tls (pid $SERVE_PID): ${E2B_ENV[*]:2}"
kernels=$(ls /usr/share/jupyter/kernels /usr/local/share/jupyter/kernels 2>/dev/null | grep -v ':$' | sort -u | tr '\n' ' ')
echo "# kernels on the host (the template's /usr): ${kernels:-none}"

# ---- the suite --------------------------------------------------------------------------------
echo "# e2b-dev/code-interpreter@${CI_COMMIT:0:8} js/tests${*:+ (files matching: $*)}"
t0=$(date +%s)
(cd "$WORK/js" && env -i PATH="$PATH" HOME="${HOME:-/root}" TMPDIR="${TMPDIR:-/tmp}" \
   "${E2B_ENV[@]}" \
   timeout -k 10 "$RUN_TIMEOUT" ./node_modules/.bin/vitest run --reporter=json \
   --outputFile="$run/report.json" --testTimeout="$TEST_TIMEOUT" --hookTimeout="$TEST_TIMEOUT" \
   "$@" >"$run/vitest.log" 2>&1)
rc=$?
echo "# vitest exit $rc after $(( $(date +%s) - t0 )) s"
if [ ! -s "$run/report.json" ]; then
  echo "vitest wrote no report; the end of its output:"
  tail -n 30 "$run/vitest.log" | sed 's/^/  | /'
  exit 1
fi
node "$HERE/ci_report.mjs" "$run/report.json" "$WORK/js" "$kernels"
exit 0
