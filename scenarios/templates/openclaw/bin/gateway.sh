#!/bin/sh
# start_cmd of the openclaw template: the OpenClaw Gateway (HTTP + WebSocket) as `user` on
# 127.0.0.1:18789, token auth. The token is OPENCLAW_GATEWAY_TOKEN from the sandbox's env vars,
# or a random one, written to /run/openclaw/token (0600, root) for clients that reach the
# sandbox through envd. GET /health answers without it.
set -eu
install -d -m 0700 /run/openclaw
if [ -z "${OPENCLAW_GATEWAY_TOKEN:-}" ]; then
  OPENCLAW_GATEWAY_TOKEN=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
fi
(umask 077 && printf %s "$OPENCLAW_GATEWAY_TOKEN" > /run/openclaw/token)
cd /home/user
set -- openclaw gateway --port 18789 --bind loopback --auth token --token "$OPENCLAW_GATEWAY_TOKEN"
if [ "$(id -u)" = 0 ]; then
  exec runuser -u user -- env HOME=/home/user USER=user "$@"
fi
exec "$@"
