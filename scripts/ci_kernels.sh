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
# The packages go to npm's global prefix and the kernelspecs to /usr/local/share/jupyter/kernels:
# both under the host's /usr, which the `base` template (so code-interpreter-v1) takes as its own.
set -euo pipefail
TSLAB_VERSION=1.0.22
KERNELS_DIR=/usr/local/share/jupyter/kernels

installed() {
  local bin
  bin="$(npm prefix -g)/bin/tslab"
  [ -x "$bin" ] && [ "$("$bin" --version 2>/dev/null)" = "tslab $TSLAB_VERSION" ] &&
    [ -f "$KERNELS_DIR/jslab/kernel.json" ] && [ -f "$KERNELS_DIR/tslab/kernel.json" ]
}

for tool in node npm /usr/bin/python3; do
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
bin="$(npm prefix -g)/bin/tslab"
# the prebuilt zeromq addon must load, else the kernels would die at their first start
(cd "$(npm root -g)/tslab" && node -e 'require("zeromq")') ||
  { echo "ci_kernels: tslab's zeromq addon does not load on this machine" >&2; exit 1; }
# an absolute binary: a sandbox's PATH need not hold npm's global bin
$SUDO "$bin" install --python=/usr/bin/python3 --binary="$bin" --prefix=/usr/local >&2
installed || { echo "ci_kernels: the kernelspecs are not in $KERNELS_DIR after install" >&2; exit 1; }
echo "ci_kernels: installed tslab $TSLAB_VERSION; kernels: jslab (javascript), tslab (typescript)"
