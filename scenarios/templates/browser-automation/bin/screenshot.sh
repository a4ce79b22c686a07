#!/bin/sh
# screenshot.sh URL OUT.png [WIDTH HEIGHT]: renders URL in Debian's headless Chromium to a PNG.
# Flags: a fresh --user-data-dir per run, and no background networking, component updates,
# sync or first-run work (a sandbox has no network; without them Chromium keeps trying to reach
# Google's hosts). --no-sandbox: Chromium's own sandbox needs user namespaces or a set-user-ID
# helper, neither of which a sandbox (no_new_privs) offers; the sandbox itself is the isolation.
set -eu
url=$1 out=$2 w=${3:-800} h=${4:-600}
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
chromium --headless --no-sandbox --disable-gpu --disable-quic --disable-background-networking \
  --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
  --hide-scrollbars --window-size="$w,$h" --screenshot="$out" "$url"
test -s "$out"
