#!/bin/sh
# start_cmd of browser-automation: serves /opt/browser-automation/site on 127.0.0.1:8000 with
# python3's http.server, as `user` (runuser when started as root, as the local platform does).
set -eu
set -- python3 -m http.server 8000 --bind 127.0.0.1 --directory /opt/browser-automation/site
if [ "$(id -u)" = 0 ]; then
  exec runuser -u user -- "$@"
fi
exec "$@"
