-- deepseek-harness: the template's own check (ctx.template_sandbox). Without an AI key: `dsh`
-- starts on Node 24 and reports the pinned version, its help is DeepSeek Harness's (web,
-- plugin, profile: not the unrelated PyPI `dsh`), and `dsh web` (start_cmd) answers on
-- 127.0.0.1:3080 as user. With DEEPSEEK_API_KEY (t.secret) and outbound HTTPS from the sandbox,
-- one headless prompt answers; otherwise that test is skipped with the reason.
-- On this machine the recipe does not build (see template.yaml): the runner reports the build
-- failure with its log and these tests do not run.
local t = require("abx.test")

local VERSION = "0.1.5-rc.2"

local ai_key = require("abx.agent").ai_key

t.test("dsh starts on Node 24 and reports version " .. VERSION, { timeout = 300 }, function(ctx)
  local sbx = ctx.template_sandbox
  t.match(sbx.commands:run("node --version").stdout, "^v24%.")
  local r = sbx.commands:run("dsh --version", { timeout = 90 })
  t.eq(r.exit_code, 0, r.stderr)
  t.match(r.stdout, VERSION:gsub("%p", "%%%0"))
  local help = sbx.commands:run("dsh --help", { timeout = 90 }).stdout
  for _, word in ipairs({ "web", "plugin", "profile" }) do
    t.match(help, word, "dsh --help names " .. word)
  end
end)

t.test("dsh web answers on 127.0.0.1:3080 as user", function(ctx)
  local sbx = ctx.template_sandbox
  local r = sbx.commands:run("curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:3080/")
  t.eq(r.stdout, "200")
  local ps = sbx.commands:run("ps -eo user=,args= | awk '$2 == \"node\" && /dsh web/ { print $1 }'")
  t.eq(ps.stdout, "user\n", "dsh web runs as user (runuser, its root parent, keeps the session)")
end)

t.test("dsh answers one prompt with an AI key", { timeout = 360 }, function(ctx)
  local key = ai_key(ctx, "DEEPSEEK_API_KEY", "api.deepseek.com")
  local sbx = ctx.template_sandbox
  local r = sbx.commands:run("dsh -p 'Reply with exactly the word pong.'",
    { envs = { DEEPSEEK_API_KEY = key }, cwd = "/home/user", timeout = 150 })
  t.eq(r.exit_code, 0, r.stderr)
  t.match(r.stdout:lower(), "pong")
end)
