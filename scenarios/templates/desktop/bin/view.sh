#!/bin/sh
# desktop: the template's viewer of text files (its default for text/plain, share/mimeapps.list),
# so `xdg-open FILE` (E2B's desktop SDK: Sandbox.open) shows FILE in a window titled
# "abx-viewer: FILE".
exec xterm -T "abx-viewer: $1" -e less -- "$1"
