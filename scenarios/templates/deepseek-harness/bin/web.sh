#!/bin/sh
# start_cmd of deepseek-harness: `dsh web` (DeepSeek Harness's Web UI and API) as `user` on
# 127.0.0.1:3080, without opening a browser. dsh refuses a Host other than 127.0.0.1 (403), so
# the script checks it from inside the sandbox.
set -eu
cd /home/user
set -- dsh web --no-open
if [ "$(id -u)" = 0 ]; then
  exec runuser -u user -- env HOME=/home/user USER=user "$@"
fi
exec "$@"
