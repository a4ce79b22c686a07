-- abx.accept.desktop: `abxlua accept desktop --template T --output-dir NEW`, the desktop
-- acceptance runner (the seed suite's e2e/desktop_acceptance.py): one sandbox of template T with a
-- VNC password of its own (VNC_PASSWORD in its envs, never printed or reported), network
-- allowPublicTraffic false (so the edge wants e2b-traffic-access-token on every port but envd's),
-- the desktop started in it (scenarios/templates/desktop/bin/start.sh: Xvfb, jwm, a solid root,
-- one window of a known colour, x11vnc -rfbauth, websockify on 6080); then through the ingress,
-- with the traffic token, a WebSocket to 6080 (abx.accept.desktop_ws) carrying RFB 3.8
-- (abx.accept.desktop_rfb): VNC authentication, ServerInit, SetPixelFormat, SetEncodings [Raw],
-- one full FramebufferUpdateRequest, the Raw update decoded; the pixels inside the window
-- (its geometry from xwininfo in the sandbox) must all be the window's colour and a patch of the
-- root the root's; the screenshot is saved as PNG (libpng) and read back. Then the refusals: a
-- wrong password (SecurityResult failed) and no traffic token (the edge's 403) must both be
-- refused. Finally the sandbox is killed and the tag e2e=<run id> listed to show nothing is left.
--
-- Output dir (must not exist; its parent must): report.json, screenshot.png. The report has no
-- password, token, sandbox or run id (it is masked besides). Exit codes: 0 every check passed,
-- 1 a check failed (the report says which), 2 interrupted (SIGINT/SIGTERM: the sandbox is
-- killed and serve stopped first), 4 usage (an existing output dir, an unknown template or
-- provider, missing credentials).
-- Template T: the provider's template of that name, else a folder scenarios/templates/T that the
-- provider builds (templates_build; the local platform keeps its layers in its build cache).
-- --upload-script puts the start script into the sandbox first, for a template with the
-- packages but not the script (the local `base`, whose /usr is the host's: scripts/deps.sh).
local core = require("abx.core")
local cjson = require("cjson")
local config = require("abx.run.config")
local provider = require("abx.run.provider")
local Tracker = require("abx.run.tracker")
local ws = require("abx.accept.desktop_ws")
local rfb = require("abx.accept.desktop_rfb")

local M = {}

M.SCRIPT = "scenarios/templates/desktop/bin/start.sh" -- the template folder's, for --upload-script
M.SCRIPT_IN_TEMPLATE = "/opt/desktop/bin/start.sh"    -- where the recipe copies it
M.UPLOADED = "/tmp/abx-desktop/start.sh"
M.PORT = 6080                                          -- websockify (start.sh)
M.WINDOW = "abx-desktop-window"
M.WINDOW_RGB = "e04010"
M.ROOT_RGB = "2050a0"
M.ROOT_PATCH = { x = 8, y = 8, w = 48, h = 40 }       -- top left: root, clear of windows and tray

function M.configure(cmd)
  cmd:option("--template", "Template of the sandbox: the provider's, or a folder under "
    .. "scenarios/templates/ it builds (e.g. desktop)."):argname("T")
  cmd:option("--output-dir", "A new directory for report.json and screenshot.png (must not exist)."):argname("NEW")
    :target("output_dir")
  cmd:option("--provider", "Provider from config/abxlua.yaml (default: ABX_PROVIDER or config).")
  cmd:option("--config", "Config file (default: ABX_CONFIG or config/abxlua.yaml).")
  cmd:option("--timeout", "Seconds for the whole run before cleanup (default 300).", "300")
    :convert(tonumber)
  cmd:flag("--upload-script", "Upload scenarios/templates/desktop/bin/start.sh into the sandbox "
    .. "first (a template with the packages but not the script, e.g. the local base)."):target("upload_script")
end

local function say(s) core.ewrite("desktop: " .. s .. "\n", true) end

local function quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local function hex_rgb(h)
  return string.char(tonumber(h:sub(1, 2), 16), tonumber(h:sub(3, 4), 16), tonumber(h:sub(5, 6), 16))
end

--- Pixels of `rgb` (width W) inside rectangle r that are not `want` (3 bytes): count and the first.
---@return integer bad, string|nil first "x,y=rrggbb"
function M.mismatches(rgb, W, r, want)
  local bad, first = 0, nil
  local row_want = want:rep(r.w)
  for y = r.y, r.y + r.h - 1 do
    local off = (y * W + r.x) * 3
    local row = rgb:sub(off + 1, off + r.w * 3)
    if row ~= row_want then
      for x = 0, r.w - 1 do
        local px = row:sub(x * 3 + 1, x * 3 + 3)
        if px ~= want then
          bad = bad + 1
          first = first or string.format("%d,%d=%02x%02x%02x", r.x + x, y, px:byte(1, 3))
        end
      end
    end
  end
  return bad, first
end

--- xwininfo's geometry of the window: {x, y, w, h} (the client area, absolute).
---@return table|nil geometry, string|nil why
function M.parse_xwininfo(out)
  local x = out:match("Absolute upper%-left X:%s+(%-?%d+)")
  local y = out:match("Absolute upper%-left Y:%s+(%-?%d+)")
  local w, h = out:match("Width:%s+(%d+)"), out:match("Height:%s+(%d+)")
  if not (x and y and w and h) then return nil, "xwininfo printed no geometry" end
  -- an unmapped window has a geometry too (1x1 at 0,0 before the client sized it)
  if not out:match("Map State:%s+IsViewable") then return nil, "the window is not viewable" end
  return { x = tonumber(x), y = tonumber(y), w = tonumber(w), h = tonumber(h) }
end

-- The checks so far, each {name, ok, detail, seconds}.
local function new_report(args, pname)
  return { kind = "desktop", template = args.template, provider = pname, checks = {},
    started_at = os.date("!%Y-%m-%dT%H:%M:%SZ"), passed = false }
end

local function check(rep, name, fn)
  local t0 = core.now()
  local ok, detail = pcall(fn)
  local c = { name = name, ok = ok, seconds = math.floor((core.now() - t0) * 1000) / 1000 }
  if ok then c.detail = detail else c.error = core.is_error(detail) and tostring(detail) or tostring(detail) end
  rep.checks[#rep.checks + 1] = c
  say(string.format("%s %s (%.1fs)%s", ok and "ok  " or "FAIL", name, c.seconds,
    ok and "" or (": " .. c.error)))
  if not ok and core.is_error(detail) and detail.kind == "Interrupted" then error(detail, 0) end
  return ok, detail
end

-- The VNC session through the ingress: ws + RFB; returns the transport (closed by the caller).
local function vnc_url(sbx)
  local route = require("abx.client.route")
  local url, connect_to, headers = route.target(route.of(sbx), M.PORT, "/")
  return url, connect_to, headers
end

local function open_ws(sbx, with_token, deadline)
  local url, connect_to, headers = vnc_url(sbx)
  local h = {}
  for k, v in pairs(headers) do h[k] = v end
  if with_token then h["e2b-traffic-access-token"] = sbx.traffic_access_token end
  return ws.connect({ url = url, connect_to = connect_to, headers = h, protocols = { "binary" },
    deadline = deadline })
end

-- The deadline `s` seconds from now.
local function in_seconds(s) return core.now() + s end

-- Check "template": the provider has the template, or it is built from its folder
-- scenarios/templates/<name> through the provider's build API (st.unknown_template when neither).
local function provide_template(conn, tpl, st)
  local template = require("abx.client.template")
  if template.exists(conn, tpl) then return { source = "provider" } end
  local dir = "scenarios/templates/" .. tpl
  local recipe = require("abx.run.recipe")
  if not recipe.is_template_dir(dir) then
    st.unknown_template = true
    core.error("InvalidArgument", 0, string.format("unknown template %q: the provider has none "
      .. "of that name and there is no %s/template.yaml", tpl, dir))
  end
  local r = recipe.load(dir)
  local tb = require("abx.run.template_build")
  say("building template " .. tpl .. " through the provider's build API")
  local res = tb.build(conn, r, { deploy = true, out = say, verbose = false })
  return { source = "folder", build = res.status, build_seconds = res.seconds }
end

-- The sandbox: private traffic (a traffic token required), the VNC password in its envs; its id
-- and token are masked from now on.
local function create_sandbox(conn, args, st)
  local sbx = conn:create({ template = args.template, timeout = math.max(120,
    math.floor(args.timeout) + 60), envs = { VNC_PASSWORD = st.password },
    network = { allow_public_traffic = false } })
  if type(sbx.traffic_access_token) ~= "string" or sbx.traffic_access_token == "" then
    core.error("Protocol", 0, "the sandbox has no traffic access token (network.allowPublicTraffic false)")
  end
  core.add_secret(sbx.traffic_access_token)
  core.add_secret(sbx.id) -- edge answers name it: masked in the console and the report
  return sbx
end

-- Starts the desktop script (the template's, or uploaded with --upload-script) and waits up to
-- 60 s for its ready file.
local function start_desktop(sbx, args)
  local script = M.SCRIPT_IN_TEMPLATE
  if args.upload_script then
    local text = assert(core.read_file(M.SCRIPT))
    sbx.files:write(M.UPLOADED, text)
    local r = sbx.commands:run("chmod 0755 " .. M.UPLOADED)
    if r.exit_code ~= 0 then core.error("Sandbox", 0, "chmod of the script: " .. r.stderr) end
    script = M.UPLOADED
  end
  local r = sbx.commands:run("test -x " .. script .. " && (setsid " .. script
    .. " >/tmp/abx-desktop-start.log 2>&1 </dev/null &) && echo started")
  if r.exit_code ~= 0 then
    core.error("Sandbox", 0, script .. " is not in the sandbox (use a template built from "
      .. "scenarios/templates/desktop, or --upload-script)")
  end
  local t_end = in_seconds(60)
  while true do
    local c = sbx.commands:run("test -f /tmp/desktop/ready")
    if c.exit_code == 0 then break end
    if core.now() > t_end then
      local log = sbx.commands:run("tail -c 600 /tmp/abx-desktop-start.log; tail -c 300 /tmp/desktop/*.log")
      core.error("Timeout", 0, "the desktop did not start within 60 s: " .. log.stdout)
    end
    core.sleep(0.2)
  end
  return { script = args.upload_script and "uploaded" or "template's" }
end

-- The framebuffer through the ingress with the traffic token: RFB handshake, then one update.
local function capture_screen(sbx, st)
  local t = open_ws(sbx, true, in_seconds(60))
  local shot
  local okc, err = pcall(function()
    local s = rfb.handshake(t, st.password)
    local rgb, stats = rfb.capture(t, s)
    shot = { width = s.width, height = s.height, rgb = rgb, name = s.name, version = s.version,
      updates = stats.updates, rects = stats.rects, frames = t.frames, subprotocol = t.protocol }
  end)
  t:close()
  if not okc then error(err, 0) end
  return shot
end

-- The window's pixels (its client area less 2 pixels each side: no decoration of the window
-- manager in it) and a patch of the root window have their colours in the screenshot.
local function check_pixels(win, shot)
  local inner = { x = win.x + 2, y = win.y + 2, w = win.w - 4, h = win.h - 4 }
  if inner.w < 1 or inner.h < 1 or win.x + win.w > shot.width or win.y + win.h > shot.height then
    core.error("Assertion", 0, "the window is not on the screen: " .. cjson.encode(win))
  end
  local bad, first = M.mismatches(shot.rgb, shot.width, inner, hex_rgb(M.WINDOW_RGB))
  local rbad, rfirst = M.mismatches(shot.rgb, shot.width, M.ROOT_PATCH, hex_rgb(M.ROOT_RGB))
  local d = { window = win, window_colour = M.WINDOW_RGB, window_pixels = inner.w * inner.h,
    window_mismatches = bad, root_colour = M.ROOT_RGB,
    root_pixels = M.ROOT_PATCH.w * M.ROOT_PATCH.h, root_mismatches = rbad }
  if bad > 0 or rbad > 0 then
    core.error("Assertion", 0, string.format("%d window and %d root pixels differ (first: %s %s)",
      bad, rbad, tostring(first), tostring(rfirst)))
  end
  return d
end

-- screenshot.png in the output directory, read back equal to the framebuffer.
local function write_screenshot(dir, shot)
  local path = dir .. "/screenshot.png"
  local size = core.png_write(path, shot.width, shot.height, shot.rgb)
  local w, h, back = core.png_read(path)
  if w ~= shot.width or h ~= shot.height or back ~= shot.rgb then
    core.error("Assertion", 0, "the PNG read back is not the framebuffer")
  end
  return { file = "screenshot.png", bytes = size, sha256 = core.sha256(core.read_file(path)) }
end

-- The refusals: a wrong VNC password (RFB's SecurityResult), no traffic token (the edge's 403).
local function check_refusals(rep, sbx, st)
  check(rep, "a wrong VNC password is refused", function()
    local wrong = st.password
    while wrong == st.password do wrong = core.random_hex(4) end
    local t = open_ws(sbx, true, in_seconds(30))
    local okc, err = pcall(rfb.handshake, t, wrong)
    t:close()
    if okc then core.error("Assertion", 0, "the server accepted a wrong password") end
    if not (core.is_error(err) and err.kind == "Authentication") then error(err, 0) end
    return { refused = "SecurityResult failed", message = err.message }
  end)
  check(rep, "no traffic token is refused by the edge", function()
    local okc, err = pcall(open_ws, sbx, false, in_seconds(30))
    if okc then
      err:close()
      core.error("Assertion", 0, "the upgrade without e2b-traffic-access-token was let through")
    end
    if not (core.is_error(err) and err.kind == "Authentication" and err.status == 403) then error(err, 0) end
    return { status = err.status }
  end)
end

-- The body of the run (inside the guard): fills rep, returns nothing. Each check's failure stops
-- the checks that need what it made.
local function body(conn, rep, args, st)
  check(rep, "template", function() return provide_template(conn, args.template, st) end)
  if st.unknown_template or not rep.checks[#rep.checks].ok then return end
  local sbx
  local ok = check(rep, "sandbox created (traffic token required, password in its envs)", function()
    sbx = create_sandbox(conn, args, st)
    return { traffic_token = true }
  end)
  if not ok then return end
  ok = check(rep, "desktop started (Xvfb, jwm, window, x11vnc -rfbauth, websockify)", function()
    return start_desktop(sbx, args)
  end)
  if not ok then return end
  local win
  ok = check(rep, "window mapped (xwininfo)", function()
    local r = sbx.commands:run("DISPLAY=:1 xwininfo -name " .. M.WINDOW)
    local g, why = M.parse_xwininfo(r.stdout)
    if not g then core.error("Sandbox", 0, why .. ": " .. r.stderr) end
    win = g
    return g
  end)
  if not ok then return end
  local shot
  check(rep, "VNC through the ingress with the traffic token: RFB 3.8, VNC auth, Raw update", function()
    shot = capture_screen(sbx, st)
    return { width = shot.width, height = shot.height, server_version = shot.version,
      desktop_name = shot.name, updates = shot.updates, rects = shot.rects,
      websocket_frames = shot.frames, subprotocol = shot.subprotocol }
  end)
  if shot then
    check(rep, "the window's pixels and the root's in the screenshot", function()
      return check_pixels(win, shot)
    end)
    check(rep, "screenshot.png written and read back", function()
      return write_screenshot(args.output_dir, shot)
    end)
  end
  check_refusals(rep, sbx, st)
end

local function write_report(dir, rep)
  local f = assert(io.open(dir .. "/report.json", "wb"))
  -- lua-cjson 2.1.0 (Debian 12) encodes an empty table as {}: the two lists of the report are
  -- lists also when empty (no other key of the report has these names)
  local text = cjson.encode(rep):gsub('"failures":{}', '"failures":[]'):gsub('"errors":{}', '"errors":[]')
  f:write(core.mask(text), "\n")
  f:close()
end

-- The options: a template, a new output dir in an existing parent (its trailing slashes dropped
-- from args.output_dir), a timeout, the script when it is uploaded. Returns a usage error or nil.
local function check_args(args)
  if not args.template or args.template == "" then return "accept desktop needs --template T" end
  if not args.output_dir or args.output_dir == "" then return "accept desktop needs --output-dir NEW" end
  if not args.timeout or args.timeout <= 0 then return "--timeout must be a positive number of seconds" end
  local out = args.output_dir:gsub("/+$", "")
  args.output_dir = out
  if core.exists(out) then
    return "the output dir " .. out .. " exists: give a new one (nothing is overwritten)"
  end
  local parent = out:match("^(.*)/[^/]+$") or "."
  if parent ~= "" and not core.isdir(parent) then
    return "the output dir's parent " .. parent .. " is not a directory"
  end
  if args.upload_script and not core.exists(M.SCRIPT) then
    return "--upload-script needs " .. M.SCRIPT .. " (run from the project's root)"
  end
  return nil
end

-- The cleanup, never interrupted: the sandbox, then a look by tag that nothing is left; the
-- platform stops. Fills rep.cleanup; returns the tracker's cleanup report.
local function clean_up(rep, conn, tracker, run_id, info)
  local c = tracker:cleanup(conn)
  local left_ok, left = pcall(conn.list, conn, { metadata = { e2e = run_id } })
  if not left_ok then c.errors[#c.errors + 1] = "list by tag: " .. tostring(left) end
  rep.cleanup = { sandboxes_killed = c.tracked + c.swept, errors = c.errors,
    sandboxes_left = left_ok and #left or nil }
  info.stop(false)
  return c
end

-- The verdict in rep: the failed checks, interrupted, passed (every check, a clean cleanup,
-- nothing left). `gok`, `gerr`: how the checks' guard ended.
local function verdict(rep, c, gok, gerr, interrupted)
  local failed = {}
  for _, ch in ipairs(rep.checks) do
    if not ch.ok then failed[#failed + 1] = ch.name end
  end
  rep.failures = failed
  rep.interrupted = interrupted or (core.is_error(gerr) and gerr.kind == "Interrupted") or nil
  rep.passed = gok and #failed == 0 and #c.errors == 0 and rep.cleanup.sandboxes_left == 0
    and not rep.interrupted
end

function M.execute(args)
  local aerr = check_args(args)
  if aerr then return nil, aerr end
  local out = args.output_dir
  local cfg = config.load(config.find(args.config))
  local okp, pname, p = pcall(config.provider, cfg, args.provider)
  if not okp then return nil, tostring(pname) end
  local code, usage = 1, nil
  core.run(function()
    local run_id = "desk-" .. core.random_hex(4)
    local rep = new_report(args, pname)
    local st = { password = core.random_hex(4) } -- 8 characters: VNC authentication's key length
    core.add_secret(st.password)
    local interrupted = false
    core.on_interrupt(function()
      interrupted = true
      say("interrupted: stopping, then killing the sandbox and stopping the platform")
    end)
    say("starting provider " .. pname)
    local ok, conn, info = pcall(provider.open, pname, p, { run_id = run_id, defaults = cfg.defaults })
    if not ok then
      core.ewrite("abxlua: " .. tostring(conn) .. "\n")
      code = core.is_error(conn) and conn.kind == "InvalidArgument" and 4 or 1
      return
    end
    if not conn then
      usage = "missing credentials for provider " .. pname .. ": " .. table.concat(info.missing, ", ")
      if info.stop then info.stop() end
      return
    end
    local tracker = Tracker.new(2, run_id)
    local owner = tracker:owner("accept desktop", 1)
    conn.hooks = tracker:hooks(function() return owner end)
    local mk = os.execute("mkdir -m 0755 -- " .. quote(out))
    if not mk then
      usage = "cannot create the output dir " .. out
      info.stop()
      return
    end
    local t0 = core.now()
    local gok, gerr = core.guard({ timeout = args.timeout, interruptible = true },
      function(e) return e end, body, conn, rep, args, st)
    if not gok then
      rep.error = core.is_error(gerr) and tostring(gerr) or tostring(gerr)
      say("stopped: " .. rep.error)
    end
    local c = clean_up(rep, conn, tracker, run_id, info)
    rep.duration_s = math.floor((core.now() - t0) * 10) / 10
    verdict(rep, c, gok, gerr, interrupted)
    if st.unknown_template then
      usage = rep.checks[1].error:gsub("^InvalidArgument[^:]*: ", "")
      os.remove(out .. "/report.json")
      os.execute("rmdir -- " .. quote(out))
      return
    end
    write_report(out, rep)
    say(string.format("%s: %d checks, %d failed; report %s/report.json", rep.passed and "passed"
      or "FAILED", #rep.checks, #rep.failures, out))
    code = rep.interrupted and 2 or (rep.passed and 0 or 1)
  end)
  if usage then return nil, usage end
  return code
end

return M
