#!/bin/sh
# start_cmd of the qwen-code template: `qwen serve` (Qwen Code's HTTP daemon) as `user` on
# 127.0.0.1:4170 with a bearer token required on every request, /health included
# (--require-auth). The token is QWEN_SERVER_TOKEN from the sandbox's env vars, or a random
# one; either way it is written to /run/qwen-serve/token (0600, root) for clients that reach
# the sandbox through envd (the template script reads it there).
set -eu
install -d -m 0700 /run/qwen-serve
if [ -z "${QWEN_SERVER_TOKEN:-}" ]; then
  QWEN_SERVER_TOKEN=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
fi
(umask 077 && printf %s "$QWEN_SERVER_TOKEN" > /run/qwen-serve/token)
export QWEN_SERVER_TOKEN
cd /home/user
if [ "$(id -u)" = 0 ]; then
  exec runuser -u user -- env HOME=/home/user USER=user qwen serve --port 4170 --require-auth --no-web
fi
exec qwen serve --port 4170 --require-auth --no-web
