-- desktop: the template's own check, run by `abxlua run scenarios/templates/desktop` once the
-- recipe is built (`abxlua accept desktop --template desktop` is the whole acceptance run: VNC
-- through the ingress, a screenshot). Fixture: ctx.template_sandbox. Markers: none.
-- What it proves: the recipe installed the desktop and its script; bin/start.sh refuses to start
-- without a VNC password; with one (VNC_PASSWORD in the process' envs, as the runner gives it in
-- the sandbox's) it brings up Xvfb on :1 at 1024x768x24, jwm managing the screen, the known window
-- mapped, x11vnc on 127.0.0.1:5900 only (an RFB 3.8 greeting, VNC authentication offered) with
-- its password file 0600 and no server holding the password in its environment, and websockify
-- on 6080.
local t = require("abx.test")
local core = require("abx.core")

local START = "/opt/desktop/bin/start.sh"

t.test("start.sh refuses to start without a VNC password", function(ctx)
  local r = ctx.template_sandbox.commands:run(START)
  t.ok(r.exit_code ~= 0, "exit " .. tostring(r.exit_code))
  t.match(r.stderr, "VNC_PASSWORD is not set")
end)

t.test("start.sh brings up Xvfb, jwm, the window, x11vnc (password) and websockify", { timeout = 90 },
  function(ctx)
  local sbx = ctx.template_sandbox
  local pw = core.random_hex(4)
  core.add_secret(pw)
  local h = sbx.commands:run(START, { background = true, envs = { VNC_PASSWORD = pw }, timeout = 0 })
  local up = sbx.commands:run("for i in $(seq 300); do test -f /tmp/desktop/ready && exit 0; sleep 0.1; done; "
    .. "tail -c 800 /tmp/desktop/*.log; exit 1", { timeout = 60 })
  t.eq(up.exit_code, 0, "ready within 30 s: " .. up.stdout)
  local x = sbx.commands:run("DISPLAY=:1 xdpyinfo | grep -E 'dimensions|depth of root'")
  t.eq(x.exit_code, 0, x.stderr)
  t.match(x.stdout, "dimensions:%s+1024x768 pixels")
  t.match(x.stdout, "depth of root window:%s+24 planes")
  local wm = sbx.commands:run("DISPLAY=:1 xprop -root _NET_SUPPORTING_WM_CHECK")
  t.match(wm.stdout, "window id", "jwm manages the screen")
  local win = sbx.commands:run("DISPLAY=:1 xwininfo -name abx-desktop-window")
  t.match(win.stdout, "Map State: IsViewable")
  local ports = sbx.commands:run("ss -Htln")
  t.match(ports.stdout, "127%.0%.0%.1:5900 ", "x11vnc listens on loopback only")
  t.ok(not ports.stdout:find("0%.0%.0%.0:5900") and not ports.stdout:find("%[::%]:5900"),
    "x11vnc is not on every address: " .. ports.stdout)
  t.match(ports.stdout, ":6080 ", "websockify listens on 6080")
  -- RFC 6143 §7.1.1/§7.1.2: the greeting, then (after the client's version) the security types
  local g = sbx.commands:run("python3 -c \"import socket; s=socket.create_connection(('127.0.0.1',5900)); "
    .. "v=s.recv(12); s.sendall(b'RFB 003.008\\n'); n=s.recv(1)[0]; print(v.decode().strip(), list(s.recv(n)))\"")
  t.eq(g.exit_code, 0, g.stderr)
  t.eq(g.stdout, "RFB 003.008 [2]\n", "RFB 3.8 offering VNC authentication only")
  local f = sbx.commands:run("stat -c '%a %U' /home/user/.vnc/passwd")
  t.eq(f.stdout, "600 user\n", "the password file is the user's alone")
  local env = sbx.commands:run("for p in $(pgrep -u user -x 'Xvfb|jwm|xterm|x11vnc|websockify'); do "
    .. "tr '\\0' '\\n' </proc/$p/environ | grep -c '^VNC_PASSWORD=' || true; done", { user = "root" })
  t.ok(env.stdout ~= "", "the desktop's processes were found")
  t.ok(not env.stdout:find("[1-9]"), "no server holds VNC_PASSWORD in its environment: " .. env.stdout)
  h:kill()
end)
