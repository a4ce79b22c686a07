-- codex: the template's own check (ctx.template_sandbox, a sandbox of this folder's template).
-- Without an AI key: the CLI starts and reports the pinned version, it reads the recipe's
-- ~/.codex/config.toml (its MCP server is listed), and it says it is not logged in. With
-- OPENAI_API_KEY (t.secret: environment or .env) and outbound HTTPS from the sandbox, one
-- non-interactive turn answers; otherwise that test is skipped with the reason.
local t = require("abx.test")

local VERSION = "0.171.0"

--- The key, or a skip naming what is missing (the key, or the sandbox's way out).
local ai_key = require("abx.agent").ai_key

t.test("codex starts and reports version " .. VERSION, function(ctx)
  local r = ctx.template_sandbox.commands:run("codex --version")
  t.eq(r.exit_code, 0, r.stderr)
  t.match(r.stdout, "^codex%-cli " .. VERSION:gsub("%.", "%%.") .. "\n")
end)

t.test("codex reads the recipe's config.toml", function(ctx)
  local sbx = ctx.template_sandbox
  t.eq(sbx.commands:run("stat -c '%U' /home/user/.codex/config.toml").stdout, "user\n")
  local r = sbx.commands:run("codex mcp list")
  t.eq(r.exit_code, 0, r.stderr)
  t.match(r.stdout, "abx%-echo +/bin/echo +abx")
  local login = sbx.commands:run("codex login status")
  t.eq(login.exit_code, 1, "no credentials in the template")
  t.match(login.stdout .. login.stderr, "Not logged in")
end)

t.test("codex answers one turn with an AI key", { timeout = 180 }, function(ctx)
  local key = ai_key(ctx, "OPENAI_API_KEY", "api.openai.com")
  local sbx = ctx.template_sandbox
  local r = sbx.commands:run("codex exec --skip-git-repo-check 'Reply with exactly the word pong.'",
    { envs = { OPENAI_API_KEY = key }, timeout = 150 })
  t.eq(r.exit_code, 0, r.stderr)
  t.match(r.stdout:lower(), "pong")
end)
