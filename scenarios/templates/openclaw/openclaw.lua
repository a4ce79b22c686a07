-- openclaw: the template's own check (ctx.template_sandbox). Without an AI key: the CLI starts
-- on Node 24 and reports the pinned version, its config (~/.openclaw/openclaw.json) has the
-- gateway.mode the recipe set, and the OpenClaw Gateway (start_cmd) answers /health at its port
-- URL, running as user. With OPENAI_API_KEY (t.secret; OpenClaw's default model is OpenAI's)
-- and outbound HTTPS from the sandbox, one local agent turn answers; otherwise that test is
-- skipped with the reason.
local t = require("abx.test")
local cjson = require("cjson")

local VERSION = "2026.9.6"
local PORT = 18789

local ai_key = require("abx.agent").ai_key

t.test("openclaw starts on Node 24 and reports version " .. VERSION, { timeout = 400 }, function(ctx)
  local sbx = ctx.template_sandbox
  t.match(sbx.commands:run("node --version").stdout, "^v24%.")
  local r = sbx.commands:run("openclaw --version", { timeout = 90 })
  t.eq(r.exit_code, 0, r.stderr)
  t.match(r.stdout, "OpenClaw " .. VERSION:gsub("%.", "%%.") .. " %(")
end)

t.test("openclaw's config has the gateway mode the recipe set", { timeout = 400 }, function(ctx)
  local sbx = ctx.template_sandbox
  local conf = cjson.decode(sbx.files:read("/home/user/.openclaw/openclaw.json"))
  t.eq(conf.gateway.mode, "local")
  local r = sbx.commands:run("openclaw config get gateway.mode", { timeout = 90 })
  t.eq(r.exit_code, 0, r.stderr)
  t.match(r.stdout, "local")
end)

t.test("the OpenClaw Gateway answers /health at its port URL", { timeout = 400 }, function(ctx)
  local sbx = ctx.template_sandbox
  local r = sbx:http(PORT, { path = "/health" })
  t.eq(r.status, 200, r.body)
  local j = cjson.decode(r.body)
  t.eq(j.ok, true)
  t.eq(j.status, "live")
  -- the gateway names its process openclaw-gateway (a comm of 15 characters would cut it)
  t.match(sbx.commands:run("ps -eo user=,args= | grep '[o]penclaw-gateway'").stdout, "^user ",
    "it runs as user")
  t.eq(#sbx.files:read("/var/lib/openclaw-gateway/token", { user = "root" }), 64, "its token was written")
end)

t.test("openclaw answers one agent turn with an AI key", { timeout = 540 }, function(ctx)
  local key = ai_key(ctx, "OPENAI_API_KEY", "api.openai.com")
  local sbx = ctx.template_sandbox
  local r = sbx.commands:run("openclaw agent --local --message 'Reply with exactly the word pong.'",
    { envs = { OPENAI_API_KEY = key }, cwd = "/home/user", timeout = 200 })
  t.eq(r.exit_code, 0, r.stderr)
  t.match(r.stdout:lower(), "pong")
end)
