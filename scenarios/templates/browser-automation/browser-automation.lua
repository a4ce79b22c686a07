-- browser-automation: the template's own check (ctx.template_sandbox). Debian's Chromium
-- renders the page the sandbox serves (start_cmd: site/ on 127.0.0.1:8000) headless to a PNG,
-- and the PNG is decoded inside the sandbox (bin/check_png.py) to prove the page rendered and
-- its script ran: size 800x600, the scripted box orange (#e04010, grey without JavaScript), the
-- background blue (#2050a0). playwright-core drives the same browser: title set by the script,
-- a click that changes the page, a screenshot. The page is reached at the sandbox's port URL too.
-- Flags: the headless-Chromium set of the machine notes (headless, no sandbox, no GPU, no background
-- networking, component updates, sync or first run; a new --user-data-dir), in bin/screenshot.sh.
local t = require("abx.test")
local cjson = require("cjson")

local BIN = "/opt/browser-automation/bin/"
local URL = "http://127.0.0.1:8000/index.html"

t.test("chromium is installed and reports its version", function(ctx)
  local r = ctx.template_sandbox.commands:run("chromium --version")
  t.eq(r.exit_code, 0, r.stderr)
  t.match(r.stdout, "^Chromium %d+%.")
end)

t.test("the page served in the sandbox answers at its port URL", function(ctx)
  local sbx = ctx.template_sandbox
  local r = sbx:http(8000, { path = "/index.html" })
  t.eq(r.status, 200)
  t.match(r.body, "<title>abx browser%-automation</title>")
end)

t.test("headless chromium renders the served page to a PNG with its script run", { timeout = 300 },
  function(ctx)
  local sbx = ctx.template_sandbox
  local shot = sbx.commands:run(BIN .. "screenshot.sh " .. URL .. " /tmp/page.png 800 600",
    { timeout = 90 })
  t.eq(shot.exit_code, 0, "screenshot: " .. shot.stderr:sub(-600))
  local png = sbx.files:read("/tmp/page.png")
  t.eq(png:sub(1, 8), "\137PNG\r\n\26\n", "a PNG signature")
  local r = sbx.commands:run("python3 " .. BIN .. "check_png.py /tmp/page.png 800 600 "
    .. "50,50=e04010 600,200=2050a0 10,590=2050a0")
  local ok, j = pcall(cjson.decode, r.stdout)
  t.ok(ok, "check_png printed JSON: " .. r.stdout .. r.stderr)
  t.eq(j.problems, {}, "the rendered pixels")
  t.eq(r.exit_code, 0)
end)

t.test("playwright-core drives chromium: title, a click and a screenshot", { timeout = 300 },
  function(ctx)
  local sbx = ctx.template_sandbox
  local r = sbx.commands:run("NODE_PATH=$(npm root -g) node " .. BIN .. "click.cjs " .. URL
    .. " /tmp/click.png", { timeout = 90 })
  t.eq(r.exit_code, 0, "click.cjs: " .. r.stderr:sub(-600))
  local j = cjson.decode(r.stdout)
  t.eq(j.title, "abx browser-automation: scripted")
  t.eq(j.before, "waiting")
  t.eq(j.after, "clicked")
  t.ok(j.png_bytes > 1000, "a screenshot was written")
  local check = sbx.commands:run("python3 " .. BIN .. "check_png.py /tmp/click.png 800 600 50,50=e04010")
  t.eq(check.exit_code, 0, check.stdout)
end)
