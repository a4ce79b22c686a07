-- 02_lifecycle: create, connect, get_info, list, kill, TTL (timeout), envs and the envd access token.
-- Fixtures: ctx.sandbox_factory (own sandbox per test), ctx.conn, ctx.run_id.
-- Markers: e2e_slow (TTL expiry).
-- Protocol: reference/e2b-control-plane.md §3.2-3.4 (NewSandbox, Sandbox, SandboxDetail, list
--           filters, kill 204/404, timeout), §6.1 (errors), §7 (envd routing);
--           reference/envd-protocol.md §6.1 (X-Access-Token, plain HTTP 401).
local t = require("abx.test")
local sandbox = require("abx.sandbox")

local function find(list, id)
  for _, info in ipairs(list) do
    if info.sandbox_id == id then return info end
  end
  return nil
end

t.test("create returns a sandbox id and an envd version", function(ctx)
  local sbx = ctx.sandbox_factory({ template = "base", timeout = 120 })
  t.match(sbx.id, "^[%w]+$")
  t.ok(type(sbx.template_id) == "string" and #sbx.template_id > 0, "template_id is set")
  t.match(sbx.envd_version, "^%d+%.%d+%.%d+")
  t.eq(sbx:get_host(8080), "8080-" .. sbx.id .. "." .. sbx.domain)
end)

t.test("connect to a running sandbox returns the same sandbox, usable through envd", function(ctx)
  local sbx = ctx.sandbox_factory({ timeout = 120 })
  local again = ctx.conn:connect(sbx.id, { timeout = 120 })
  t.eq(again.id, sbx.id)
  t.eq(again.commands:run("echo connected").stdout, "connected\n")
end)

t.test("get_info shows the running state, the template and the metadata", function(ctx)
  local sbx = ctx.sandbox_factory({ template = "base", metadata = { abx_case = "info" } })
  local info = sbx:get_info()
  t.eq(info.sandbox_id, sbx.id)
  t.eq(info.state, "running")
  t.ok(info.template_id == sbx.template_id, "template_id matches the create response")
  t.eq(info.metadata.abx_case, "info")
  t.eq(info.metadata.e2e, ctx.run_id)
  t.ok(info.cpu_count >= 1, "cpu_count >= 1")
  t.ok(info.memory_mb >= 128, "memory_mb >= 128")
  t.ok(sandbox.parse_time(info.end_at) > sandbox.parse_time(info.started_at), "end_at after started_at")
end)

t.test("list includes a running sandbox with its metadata", function(ctx)
  local sbx = ctx.sandbox_factory({ metadata = { abx_case = "listed" } })
  local info = find(ctx.conn:list({ state = { "running" } }), sbx.id)
  t.ok(info, "the new sandbox is listed")
  t.eq(info.metadata.abx_case, "listed")
  t.eq(info.state, "running")
end)

t.test("list filtered by a unique metadata value returns exactly that sandbox", function(ctx)
  local unique = "only-" .. ctx.run_id .. "-" .. tostring(math.random(1, 1e9))
  local sbx = ctx.sandbox_factory({ metadata = { abx_unique = unique } })
  ctx.sandbox_factory({ metadata = { abx_unique = unique .. "-other" } })
  local got = ctx.conn:list({ metadata = { abx_unique = unique } })
  t.eq(#got, 1)
  t.eq(got[1].sandbox_id, sbx.id)
end)

t.test("kill twice returns true then false", function(ctx)
  local sbx = ctx.sandbox_factory({ timeout = 120 })
  t.eq(sbx:kill(), true)
  t.eq(sbx:kill(), false)
end)

t.test("after kill get_info gives SandboxNotFound and is_running is false", function(ctx)
  local sbx = ctx.sandbox_factory({ timeout = 120 })
  t.eq(sbx:is_running(), true)
  sbx:kill()
  local err = t.raises("SandboxNotFound", function() sbx:get_info() end)
  t.eq(err.status, 404)
  t.eq(sbx:is_running(), false)
end)

t.test("set_timeout moves end_at", function(ctx)
  local sbx = ctx.sandbox_factory({ timeout = 120 })
  local before = sandbox.parse_time(sbx:get_info().end_at)
  sbx:set_timeout(900)
  local after = sandbox.parse_time(sbx:get_info().end_at)
  t.ok(after > before + 600, string.format("end_at moved by %.0f s, expected ~780", after - before))
  sbx:set_timeout(60)
  local shorter = sandbox.parse_time(sbx:get_info().end_at)
  t.ok(shorter < after - 600, "set_timeout may shorten the TTL")
end)

t.test("a sandbox is gone after its TTL expires", { markers = { "e2e_slow" }, timeout = 90 }, function(ctx)
  local sbx = ctx.sandbox_factory({ timeout = 3 })
  t.eventually(function()
    t.raises("SandboxNotFound", function() ctx.conn:get_info(sbx.id) end)
  end, { timeout = 45, interval = 1 })
  t.eq(sbx:kill(), false)
end)

t.test("envs given at create are visible to commands", function(ctx)
  local sbx = ctx.sandbox_factory({ envs = { ABX_CREATE_VAR = "from-create" } })
  t.eq(sbx.commands:run("printf %s \"$ABX_CREATE_VAR\"").stdout, "from-create")
end)

t.test("a secure sandbox rejects envd calls without the right access token", function(ctx)
  local sbx = ctx.sandbox_factory({ secure = true })
  t.ok(sbx.secure, "a secure sandbox comes with an envdAccessToken")
  t.eq(sbx.commands:run("echo ok").stdout, "ok\n")
  local wrong = sbx:with({ access_token = "wrong-token" })
  local err = t.raises("Authentication", function() wrong.commands:run("echo no") end)
  t.eq(err.status, 401)
  t.raises("Authentication", function() sbx:with({ access_token = false }).files:list("/") end)
end)
