-- hermes-agent: the template's own check (ctx.template_sandbox). Without an AI key: `hermes`
-- starts (the npm bridge's Python runtime is in place) and reports Hermes Agent 0.21.5, and its
-- help answers. With OPENROUTER_API_KEY (t.secret; Hermes Agent's default provider) and
-- outbound HTTPS from the sandbox, one prompt answers; otherwise that test is skipped with the
-- reason. On this machine the recipe does not build (see template.yaml): the runner reports
-- the build failure with its log and these tests do not run.
local t = require("abx.test")

local VERSION = "0.21.5"

local ai_key = require("abx.agent").ai_key

t.test("hermes starts and reports Hermes Agent " .. VERSION, { timeout = 120 }, function(ctx)
  local sbx = ctx.template_sandbox
  local r = sbx.commands:run("hermes --version", { timeout = 90 })
  t.eq(r.exit_code, 0, r.stderr)
  t.match(r.stdout, VERSION:gsub("%.", "%%."))
  t.eq(sbx.commands:run("hermes --help", { timeout = 90 }).exit_code, 0)
end)

t.test("hermes answers one prompt with an AI key", { timeout = 180 }, function(ctx)
  local key = ai_key(ctx, "OPENROUTER_API_KEY", "openrouter.ai")
  local sbx = ctx.template_sandbox
  local r = sbx.commands:run("hermes chat -q 'Reply with exactly the word pong.'",
    { envs = { OPENROUTER_API_KEY = key }, cwd = "/home/user", timeout = 150 })
  t.eq(r.exit_code, 0, r.stderr)
  t.match(r.stdout:lower(), "pong")
end)
