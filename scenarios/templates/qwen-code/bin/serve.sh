#!/bin/sh
# start_cmd of the qwen-code template: `qwen serve` (Qwen Code's HTTP daemon) as `user` on
# 127.0.0.1:4170 with a bearer token required on every request, /health included
# (--require-auth). The token is QWEN_SERVER_TOKEN from the sandbox's env vars, or a random
# one; either way it is written to /var/lib/qwen-serve/token (0600, in the directory the recipe
# made for user) for clients that reach the sandbox through envd (the template script reads it
# there). start_cmd runs as the template's user; started as root, it drops to user (runuser).
set -eu
if [ -z "${QWEN_SERVER_TOKEN:-}" ]; then
  QWEN_SERVER_TOKEN=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
fi
export QWEN_SERVER_TOKEN
cd /home/user
set -- qwen serve --port 4170 --require-auth --no-web
if [ "$(id -u)" = 0 ]; then
  runuser -u user -- sh -c 'umask 077 && printf %s "$QWEN_SERVER_TOKEN" > /var/lib/qwen-serve/token'
  exec runuser -u user -- env HOME=/home/user USER=user "$@"
fi
(umask 077 && printf %s "$QWEN_SERVER_TOKEN" > /var/lib/qwen-serve/token)
exec "$@"
