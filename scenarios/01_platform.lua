-- 01_platform: authentication, sandbox listing and error mapping of the control plane.
-- Fixtures: ctx.conn (the run's connection), ctx.sandbox_factory (only to keep a mistaken create
--           tracked). Markers: none.
-- Protocol: docs/protocol/e2b-control-plane.md §1.2 (X-API-Key), §2 (error body, pagination),
--           §3.4 (per-route behaviour), §6.1 (HTTP status -> error kind).
local t = require("abx.test")

t.test("a valid API key is accepted", function(ctx)
  local items = ctx.conn:list_page({ limit = 1 })
  t.eq(type(items), "table")
end)

t.test("a wrong API key is rejected with Authentication", { requires = { "api_key_check" } },
  function(ctx)
  local bad = ctx.conn:with({ api_key = "e2b_0000000000000000000000000000000000000000" })
  local err = t.raises("Authentication", function() bad:list() end)
  t.eq(err.status, 401)
end)

t.test("a wrong API key is refused at E2B's GET /v2/sandboxes", { requires = { "api_key_check", "e2b_api" } },
  function(ctx)
  local bad = ctx.conn:with({ api_key = "e2b_0000000000000000000000000000000000000000" })
  local err = t.raises("Authentication", function() bad:list() end)
  t.eq(err.status, 401)
  t.eq(err.request, "GET /v2/sandboxes")
end)

t.test("a request without an API key is rejected with Authentication",
  { requires = { "api_key_check" } }, function(ctx)
  local anon = ctx.conn:with({ api_key = false })
  local err = t.raises("Authentication", function() anon:list() end)
  t.eq(err.status, 401)
end)

t.test("list returns an array of sandbox infos", function(ctx)
  local all = ctx.conn:list()
  t.eq(type(all), "table")
  for _, info in ipairs(all) do
    t.eq(type(info.sandbox_id), "string")
    t.ok(info.state == "running" or info.state == "paused", "state is running or paused")
  end
end)

t.test("get_info of an unknown sandbox gives SandboxNotFound", function(ctx)
  local err = t.raises("SandboxNotFound", function() ctx.conn:get_info("inotexistent00000000000") end)
  t.eq(err.status, 404)
  t.eq(err.request, "GET /sandboxes/inotexistent00000000000")
end)

t.test("creating from an unknown template gives NotFound with status 404",
  { requires = { "e2b_api" } }, function(ctx)
  local err = t.raises("NotFound", function()
    ctx.sandbox_factory({ template = "abx-no-such-template-" .. ctx.run_id })
  end)
  t.eq(err.status, 404)
  t.eq(err.request, ctx.conn.v2_routes and "POST /v2/sandboxes" or "POST /sandboxes")
  t.ok(type(err.message) == "string" and #err.message > 0, "the error carries the server's message")
end)

t.test("kill of an unknown sandbox returns false", function(ctx)
  t.eq(ctx.conn:kill("inotexistent00000000000"), false)
end)

t.test("connect to an unknown sandbox gives SandboxNotFound", function(ctx)
  t.raises("SandboxNotFound", function() ctx.conn:connect("inotexistent00000000000", { timeout = 60 }) end)
end)

t.test("list follows X-Next-Token across pages of one sandbox", function(ctx)
  local tag = "pages-" .. ctx.run_id
  ctx.sandbox_factory({ metadata = { abx_case = tag } })
  ctx.sandbox_factory({ metadata = { abx_case = tag } })
  local first, token = ctx.conn:list_page({ metadata = { abx_case = tag }, limit = 1 })
  t.eq(#first, 1)
  t.ok(token, "a first page of 1 out of 2 carries X-Next-Token")
  local all = ctx.conn:list({ metadata = { abx_case = tag }, limit = 1 })
  t.eq(#all, 2)
  t.ok(all[1].sandbox_id ~= all[2].sandbox_id, "pages do not repeat a sandbox")
end)
