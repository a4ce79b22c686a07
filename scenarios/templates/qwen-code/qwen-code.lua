-- qwen-code: the template's own check (ctx.template_sandbox). Without an AI key: the CLI starts
-- on Node 24 and reports the pinned version, it lists the MCP server the recipe configured, and
-- its HTTP daemon (`qwen serve`, the template's start_cmd) answers /health with the bearer token
-- and refuses without it. With OPENAI_API_KEY (t.secret; OPENAI_BASE_URL and OPENAI_MODEL are
-- passed on when set, as Qwen Code reads them) and outbound HTTPS from the sandbox, one prompt
-- answers; otherwise that test is skipped with the reason.
local t = require("abx.test")
local cjson = require("cjson")

local VERSION = "0.24.4"
local PORT = 4170

local ai_key = require("abx.agent").ai_key

t.test("qwen starts on Node 24 and reports version " .. VERSION, function(ctx)
  local sbx = ctx.template_sandbox
  t.match(sbx.commands:run("node --version").stdout, "^v24%.")
  local r = sbx.commands:run("qwen --version")
  t.eq(r.exit_code, 0, r.stderr)
  t.eq(r.stdout, VERSION .. "\n")
end)

t.test("qwen-code lists the MCP server the recipe configured", { timeout = 300 }, function(ctx)
  local sbx = ctx.template_sandbox
  local settings = cjson.decode(sbx.files:read("/home/user/.qwen/settings.json"))
  t.eq(settings.mcpServers["abx-echo"].command, "/bin/echo")
  local r = sbx.commands:run("qwen mcp list", { cwd = "/home/user", timeout = 90 })
  t.eq(r.exit_code, 0, r.stderr)
  t.match(r.stdout, "abx%-echo: /bin/echo abx")
end)

t.test("qwen serve answers /health at its port URL with its token and 401 without", function(ctx)
  local sbx = ctx.template_sandbox
  local token = sbx.files:read("/var/lib/qwen-serve/token", { user = "root" })
  t.ok(#token >= 32, "a token was written")
  local r = sbx:http(PORT, { path = "/health", headers = { Authorization = "Bearer " .. token } })
  t.eq(r.status, 200, r.body)
  t.eq(cjson.decode(r.body).status, "ok")
  t.eq(sbx:http(PORT, { path = "/health" }).status, 401, "--require-auth: no token, no answer")
  -- the node process itself (runuser, its root parent, stays as the session's keeper)
  local ps = sbx.commands:run("ps -eo user=,args= | awk '$2 == \"node\" && /serve --port 4170/ "
    .. "{ print $1 }'")
  t.eq(ps.stdout, "user\n", "the daemon runs as user")
end)

t.test("qwen answers one prompt with an AI key", { timeout = 360 }, function(ctx)
  local key = ai_key(ctx, "OPENAI_API_KEY", "api.openai.com")
  local sbx = ctx.template_sandbox
  local envs = { OPENAI_API_KEY = key }
  for _, name in ipairs({ "OPENAI_BASE_URL", "OPENAI_MODEL" }) do envs[name] = t.secret(name) end
  local r = sbx.commands:run("qwen -p 'Reply with exactly the word pong.'",
    { envs = envs, cwd = "/home/user", timeout = 150 })
  t.eq(r.exit_code, 0, r.stderr)
  t.match(r.stdout:lower(), "pong")
end)
