#!/bin/sh
# desktop: starts the desktop of one sandbox, as the template's user (run in the background by
# abxlua accept desktop; no start_cmd, see template.yaml): the X display :1 (Xvfb
# 1024x768x24, no TCP, -noreset: the server must not reset, dropping the root colour, when
# its last client leaves), a window manager (jwm), a solid root (#2050a0) and one known window (an
# xterm whose every pixel is #e04010: background, foreground, cursor and border the same colour,
# at +100+80 by its -geometry), x11vnc on 127.0.0.1:5900 with -rfbauth (a VNC password is
# required: VNC_PASSWORD from the sandbox's env vars, at most 8 characters, as VNC authentication
# uses them; without it the script refuses to start) and websockify on 6080, which carries the RFB
# bytes in WebSocket binary frames to x11vnc (the ingress proxies HTTP, so the VNC stream reaches
# a client outside as a WebSocket, as E2B's desktop template serves noVNC on 6080).
# The password goes into x11vnc's obfuscated password file (~/.vnc/passwd, 0600) and leaves
# this script's environment before any server starts, so none of them holds it; nothing prints it.
# Logs (and jwm's configuration): /tmp/desktop/. Ready once the window is mapped and websockify started
# (/tmp/desktop/ready written last).
# Started as root it drops to `user` with runuser.
set -eu
if [ "$(id -u)" = 0 ]; then
  exec runuser -u user -- "$0" "$@"
fi
: "${VNC_PASSWORD:?VNC_PASSWORD is not set: the desktop template needs a VNC password (envs at create)}"
case "${#VNC_PASSWORD}" in
  [1-8]) ;;
  *) echo "VNC_PASSWORD must be 1 to 8 characters (VNC authentication uses 8)" >&2; exit 2 ;;
esac
export DISPLAY=:1
LOG=/tmp/desktop
mkdir -p "$LOG" "$HOME/.vnc"
chmod 700 "$HOME/.vnc"
rm -f "$LOG/ready"
umask 077
x11vnc -storepasswd "$VNC_PASSWORD" "$HOME/.vnc/passwd" >/dev/null 2>&1
unset VNC_PASSWORD
umask 022
Xvfb :1 -screen 0 1024x768x24 -nolisten tcp -noreset -ac >"$LOG/xvfb.log" 2>&1 &
i=0
until xdpyinfo >/dev/null 2>&1; do
  i=$((i + 1)); [ $i -lt 100 ] || { echo "Xvfb did not start" >&2; exit 1; }
  sleep 0.1
done
# jwm paints the root itself when it starts, in its own time (the xterm can be mapped before):
# its configuration (Debian's, then the root colour of ours) makes that paint the known colour too
cat >"$LOG/jwmrc" <<'EOF'
<?xml version="1.0"?>
<JWM>
  <Include>/etc/jwm/system.jwmrc</Include>
  <Desktops width="1" height="1"><Background type="solid">#2050a0</Background></Desktops>
</JWM>
EOF
jwm -f "$LOG/jwmrc" >"$LOG/wm.log" 2>&1 &
# the window opens once jwm manages the screen (EWMH's _NET_SUPPORTING_WM_CHECK on the root):
# a window mapped before would be reparented and moved by jwm after its geometry was read
i=0
until xprop -root _NET_SUPPORTING_WM_CHECK 2>/dev/null | grep -q 'window id'; do
  i=$((i + 1)); [ $i -lt 100 ] || { echo "jwm did not start" >&2; exit 1; }
  sleep 0.1
done
xterm -geometry 40x12+100+80 -title abx-desktop-window -bg '#e04010' -fg '#e04010' -cr '#e04010' \
  -bw 0 -b 0 +sb -e sleep infinity >"$LOG/xterm.log" 2>&1 &
x11vnc -display :1 -rfbauth "$HOME/.vnc/passwd" -rfbport 5900 -localhost -forever -shared \
  -nocursor -noxdamage -o "$LOG/x11vnc.log" >/dev/null 2>&1 &
i=0
# viewable and managed (ICCCM's WM_STATE, set by jwm once it framed the window): its final place
until xwininfo -name abx-desktop-window 2>/dev/null | grep -q IsViewable \
  && xprop -name abx-desktop-window WM_STATE 2>/dev/null | grep -q 'Normal'; do
  i=$((i + 1)); [ $i -lt 100 ] || { echo "the window did not appear" >&2; exit 1; }
  sleep 0.1
done
xsetroot -solid '#2050a0' # the same colour, for a jwm that has not read its configuration yet
listening() { [ -n "$(ss -Htln "sport = :$1")" ]; }
i=0
until listening 5900; do
  i=$((i + 1)); [ $i -lt 100 ] || { echo "x11vnc did not listen" >&2; exit 1; }
  sleep 0.1
done
websockify 6080 127.0.0.1:5900 >"$LOG/websockify.log" 2>&1 &
i=0
until listening 6080; do
  i=$((i + 1)); [ $i -lt 100 ] || { echo "websockify did not listen" >&2; exit 1; }
  sleep 0.1
done
touch "$LOG/ready"
wait
