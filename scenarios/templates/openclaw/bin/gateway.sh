#!/bin/sh
# start_cmd of the openclaw template: the OpenClaw Gateway (HTTP + WebSocket) as `user` on
# 127.0.0.1:18789, token auth. The token is OPENCLAW_GATEWAY_TOKEN from the sandbox's env vars,
# or a random one, written to /var/lib/openclaw-gateway/token (0600, in the directory the
# recipe made for user) for clients that reach the sandbox through envd. GET /health answers
# without it. start_cmd runs as the template's user; started as root, it drops to user.
set -eu
if [ -z "${OPENCLAW_GATEWAY_TOKEN:-}" ]; then
  OPENCLAW_GATEWAY_TOKEN=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
fi
export OPENCLAW_GATEWAY_TOKEN
cd /home/user
set -- openclaw gateway --port 18789 --bind loopback --auth token --token "$OPENCLAW_GATEWAY_TOKEN"
if [ "$(id -u)" = 0 ]; then
  runuser -u user -- sh -c 'umask 077 && printf %s "$OPENCLAW_GATEWAY_TOKEN" > /var/lib/openclaw-gateway/token'
  exec runuser -u user -- env HOME=/home/user USER=user "$@"
fi
(umask 077 && printf %s "$OPENCLAW_GATEWAY_TOKEN" > /var/lib/openclaw-gateway/token)
exec "$@"
