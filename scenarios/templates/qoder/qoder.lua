-- qoder: the template's own check (ctx.template_sandbox). Without an AI key: the CLI starts and
-- reports the pinned version (both bins), and it lists the MCP server the recipe added to
-- ~/.qoder/settings.json. With QODER_PERSONAL_ACCESS_TOKEN (t.secret; qodercli's
-- non-interactive sign-in) and outbound HTTPS from the sandbox, one print-mode prompt answers;
-- otherwise that test is skipped with the reason.
local t = require("abx.test")
local cjson = require("cjson")

local VERSION = "1.1.52"

local ai_key = require("abx.agent").ai_key

t.test("qodercli starts and reports version " .. VERSION, function(ctx)
  local r = ctx.template_sandbox.commands:run("qodercli --version")
  t.eq(r.exit_code, 0, r.stderr)
  t.eq(r.stdout, VERSION .. "\n")
  t.eq(ctx.template_sandbox.commands:run("command -v qoder").exit_code, 0, "the qoder bin too")
end)

t.test("qodercli lists the MCP server the recipe configured", { timeout = 120 }, function(ctx)
  local sbx = ctx.template_sandbox
  local settings = cjson.decode(sbx.files:read("/home/user/.qoder/settings.json"))
  t.ok(settings.mcpServers and settings.mcpServers["abx-echo"], "abx-echo in ~/.qoder/settings.json")
  local r = sbx.commands:run("qodercli mcp list", { cwd = "/home/user", timeout = 90 })
  t.eq(r.exit_code, 0, r.stderr)
  t.match(r.stdout, "abx%-echo: /bin/echo abx")
end)

t.test("qodercli answers one prompt with an access token", { timeout = 180 }, function(ctx)
  local key = ai_key(ctx, "QODER_PERSONAL_ACCESS_TOKEN", "qoder.com")
  local sbx = ctx.template_sandbox
  local r = sbx.commands:run("qodercli -p 'Reply with exactly the word pong.'",
    { envs = { QODER_PERSONAL_ACCESS_TOKEN = key }, cwd = "/home/user", timeout = 150 })
  t.eq(r.exit_code, 0, r.stderr)
  t.match(r.stdout:lower(), "pong")
end)
