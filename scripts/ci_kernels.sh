#!/usr/bin/env bash
# Installs the code-interpreter-v1 template's kernels that come from npm, not from Debian: tslab
# (JavaScript as the `jslab` kernel, TypeScript as `tslab`), which the template's server
# (platform/code_interpreter/server.py, KERNELS) uses for the javascript/js and typescript/ts
# languages. `make ci-kernels` runs it; `make test` never does (it needs the npm registry): the
# tests of these kernels skip (77) naming the missing kernel until it has run.
#   bash scripts/ci_kernels.sh            install (idempotent: a second run fetches nothing)
#   bash scripts/ci_kernels.sh --check    exit 0 when installed, 1 naming what is missing
# Everything comes from the npm registry: tslab's zeromq dependency ships its prebuilt addons in
# its package (build/linux/x64), and --ignore-scripts keeps its install script from building or
# downloading anything. E2B's template installs its own ijavascript fork from GitHub instead
# (template/template.py @ 7df1757), which cannot be fetched here.
# The kernels run tslab through scripts/ci_kernels/tslab_e2b.js (copied to SHIM), which gives
# E2B's JavaScript kernel's outputs: the last expression's value as the execute result, a thrown
# exception as an error message, an execution count (its header says how).
# The packages go to npm's global prefix, the shim to /usr/local/lib/abx-kernels and the
# kernelspecs to /usr/local/share/jupyter/kernels: all under the host's /usr, which the `base`
# template (so code-interpreter-v1) takes as its own.
set -euo pipefail
TSLAB_VERSION=1.0.22
KERNELS_DIR=/usr/local/share/jupyter/kernels
SHIM=/usr/local/lib/abx-kernels/tslab_e2b.js
SRC_SHIM="$(cd "$(dirname "$0")" && pwd)/ci_kernels/tslab_e2b.js"

installed() {
  local bin
  bin="$(npm prefix -g)/bin/tslab"
  [ -x "$bin" ] && [ "$("$bin" --version 2>/dev/null)" = "tslab $TSLAB_VERSION" ] &&
    cmp -s "$SRC_SHIM" "$SHIM" &&
    grep -qF "$SHIM" "$KERNELS_DIR/jslab/kernel.json" 2>/dev/null &&
    grep -qF "$SHIM" "$KERNELS_DIR/tslab/kernel.json" 2>/dev/null
}

# kernelspec NAME DISPLAY LANGUAGE [--js]: NAME's kernel.json running the shim
kernelspec() {
  local args
  args=$(node -e 'process.stdout.write(JSON.stringify({argv: [process.execPath, ...process.argv.slice(1, 3),
      "--config-path", "{connection_file}", ...process.argv.slice(5)], display_name: process.argv[3],
      language: process.argv[4]}))' "$SHIM" "$(npm root -g)/tslab" "$2" "$3" "${@:4}")
  $SUDO mkdir -p "$KERNELS_DIR/$1"
  echo "$args" | $SUDO tee "$KERNELS_DIR/$1/kernel.json" >/dev/null
}

for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "ci_kernels: $tool not found (scripts/deps.sh)" >&2; exit 1; }
done
if [ "${1:-}" = --check ]; then
  installed && exit 0
  echo "ci_kernels: tslab $TSLAB_VERSION (kernels jslab, tslab) is not installed: make ci-kernels" >&2
  exit 1
fi
[ $# -eq 0 ] || { echo "usage: ci_kernels.sh [--check]" >&2; exit 2; }
if installed; then
  echo "ci_kernels: tslab $TSLAB_VERSION and its kernels jslab, tslab are installed"
  exit 0
fi
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "ci_kernels: installing tslab@$TSLAB_VERSION from the npm registry" >&2
$SUDO npm install -g --ignore-scripts --no-audit --no-fund "tslab@$TSLAB_VERSION" >&2
# the prebuilt zeromq addon must load, else the kernels would die at their first start
(cd "$(npm root -g)/tslab" && node -e 'require("zeromq")') ||
  { echo "ci_kernels: tslab's zeromq addon does not load on this machine" >&2; exit 1; }
$SUDO install -D -m 0644 "$SRC_SHIM" "$SHIM"
# absolute paths: a sandbox's PATH need not hold npm's global bin
kernelspec jslab JavaScript javascript --js
kernelspec tslab TypeScript typescript
installed || { echo "ci_kernels: the kernelspecs are not in $KERNELS_DIR after install" >&2; exit 1; }
echo "ci_kernels: installed tslab $TSLAB_VERSION; kernels: jslab (javascript), tslab (typescript)"
