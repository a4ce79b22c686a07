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
  set -- runuser -u user -- env HOME=/home/user USER=user "$@"
else
  (umask 077 && printf %s "$OPENCLAW_GATEWAY_TOKEN" > /var/lib/openclaw-gateway/token)
fi
# The gateway gives its state-lease worker a fixed 5 s to come up (openclaw's
# LEASE_HEARTBEAT_START_TIMEOUT_MS) and exits when a loaded machine misses it ("Gateway failed to
# start: state lease heartbeat did not become ready", issue 22): it is started again, at most 5
# times in all, each restart noted in the start log.
n=1
while :; do
  st=0
  "$@" || st=$?
  if [ "$st" -eq 0 ] || [ "$n" -ge 5 ]; then
    exit "$st"
  fi
  n=$((n + 1))
  echo "gateway.sh: the gateway exited with status $st; starting it again (attempt $n of 5)" >&2
  sleep 2
done
