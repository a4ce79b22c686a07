-- claude-code: the template's own check (ctx.template_sandbox). Without an AI key: the CLI
-- starts and reports the pinned version, its user settings are in place, it lists the recipe's
-- MCP server (~/.claude.json) and reports that it is not logged in. With ANTHROPIC_API_KEY
-- (t.secret) and outbound HTTPS from the sandbox, one print-mode turn answers; otherwise that
-- test is skipped with the reason.
local t = require("abx.test")
local cjson = require("cjson")

local VERSION = "2.1.332"

local ai_key = require("abx.agent").ai_key

t.test("claude starts and reports version " .. VERSION, function(ctx)
  local r = ctx.template_sandbox.commands:run("claude --version")
  t.eq(r.exit_code, 0, r.stderr)
  t.eq(r.stdout, VERSION .. " (Claude Code)\n")
end)

t.test("claude-code's settings and MCP config are in place and read", { timeout = 120 }, function(ctx)
  local sbx = ctx.template_sandbox
  local settings = cjson.decode(sbx.files:read("/home/user/.claude/settings.json"))
  t.eq(settings.env.DISABLE_AUTOUPDATER, "1")
  t.eq(sbx.commands:run("stat -c '%U %a' /home/user/.claude.json").stdout, "user 600\n")
  local r = sbx.commands:run("claude mcp list", { cwd = "/home/user", timeout = 90 })
  t.eq(r.exit_code, 0, r.stderr)
  t.match(r.stdout, "abx%-echo: /bin/echo abx")
  local auth = sbx.commands:run("claude auth status", { cwd = "/home/user" })
  local ok, status = pcall(cjson.decode, auth.stdout)
  t.ok(ok and type(status) == "table", "auth status is JSON: " .. auth.stdout)
  t.eq(status.loggedIn, false, "no credentials in the template")
end)

t.test("claude answers one turn with an AI key", { timeout = 180 }, function(ctx)
  local key = ai_key(ctx, "ANTHROPIC_API_KEY", "api.anthropic.com")
  local sbx = ctx.template_sandbox
  local r = sbx.commands:run("claude -p 'Reply with exactly the word pong.'",
    { envs = { ANTHROPIC_API_KEY = key }, cwd = "/home/user", timeout = 150 })
  t.eq(r.exit_code, 0, r.stderr)
  t.match(r.stdout:lower(), "pong")
end)
