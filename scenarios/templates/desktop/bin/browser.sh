#!/bin/sh
# desktop: the template's web browser (its default for http/https URLs and HTML,
# share/mimeapps.list), so `xdg-open URL` (E2B's desktop SDK: Sandbox.open) shows the page: Debian's
# Chromium without its own sandbox (the sandbox is already one; Chromium's needs namespaces it
# cannot make inside), a profile in /tmp, no first-run dialogs.
exec chromium --no-sandbox --no-first-run --no-default-browser-check --disable-gpu \
  --user-data-dir=/tmp/abx-chromium "$@"
