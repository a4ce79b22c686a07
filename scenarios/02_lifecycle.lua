-- 02_lifecycle: create, connect, get_info, list, kill, TTL (timeout), envs and the envd access token;
-- pause and connect/resume cycles, connect never shortening the TTL, refreshes, auto-pause, metrics,
-- listing paused sandboxes, paging with limit 1, kill of a paused sandbox.
-- Fixtures: ctx.sandbox_factory (own sandbox per test), ctx.conn, ctx.run_id.
-- Markers: e2e_slow (TTL expiry, auto-pause at the TTL). Requires: pause, metrics (where used).
-- Protocol: docs/protocol/e2b-control-plane.md §2 (pagination, X-Next-Token only when more remain),
--           §3.2-3.4 (NewSandbox autoPause, Sandbox, SandboxDetail, list filters state/metadata,
--           kill 204/404, timeout, refreshes, pause 204/409, connect 200/201, resume 201/409,
--           metrics), §6.1 (errors), §7 (envd routing);
--           docs/protocol/envd-protocol.md §6.1 (X-Access-Token, plain HTTP 401).
-- User complaints covered: docs/protocol/anchors.md §C items 8 (connect shortened the TTL), 9 (repeated
-- pause/resume failed), 10 (kill of a paused sandbox), 12 (state=paused alone listed nothing).
local t = require("abx.test")
local sandbox = require("abx.sandbox")
local envd_health = require("lib.envd_health") -- scenarios/lib/envd_health.lua

local function find(list, id)
  for _, info in ipairs(list) do
    if info.sandbox_id == id then return info end
  end
  return nil
end

-- A metadata value no other test (or run) uses.
local function unique(ctx, what)
  return what .. "-" .. ctx.run_id .. "-" .. tostring(math.random(1, 1e9))
end

local function end_at(sbx)
  return sandbox.parse_time(sbx:get_info().end_at)
end

t.test("create returns a sandbox id and an envd version",
  { requires = { "envd" } }, function(ctx)
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

t.test("get_info shows the running state, the template and the metadata",
  { requires = { "e2b_api" } }, function(ctx)
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
  local value = "only-" .. ctx.run_id .. "-" .. tostring(math.random(1, 1e9))
  local sbx = ctx.sandbox_factory({ metadata = { abx_unique = value } })
  ctx.sandbox_factory({ metadata = { abx_unique = value .. "-other" } })
  local got = ctx.conn:list({ metadata = { abx_unique = value } })
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

-- two tests: every provider moves end_at later; only some move it earlier (ttl_shorten)
t.test("set_timeout moves end_at later", function(ctx)
  local sbx = ctx.sandbox_factory({ timeout = 120 })
  local before = end_at(sbx)
  sbx:set_timeout(900)
  local after = end_at(sbx)
  t.ok(after > before + 600, string.format("end_at moved by %.0f s, expected ~780", after - before))
end)

t.test("set_timeout moves end_at earlier", { requires = { "ttl_shorten" } }, function(ctx)
  local sbx = ctx.sandbox_factory({ timeout = 900 })
  local before = end_at(sbx)
  sbx:set_timeout(60)
  local shorter = end_at(sbx)
  t.ok(shorter < before - 600, string.format("set_timeout may shorten the TTL: end_at moved by "
    .. "%.0f s, expected ~-840", shorter - before))
end)

t.test("a sandbox is gone after its TTL expires",
  { markers = { "e2e_slow" }, requires = { "short_ttl" }, timeout = 90 }, function(ctx)
  local sbx = ctx.sandbox_factory({ timeout = 3 })
  t.eventually(function()
    t.raises("SandboxNotFound", function() ctx.conn:get_info(sbx.id) end)
  end, { timeout = 45, interval = 1 })
  t.eq(sbx:kill(), false)
end)

t.test("envs given at create are visible to commands", { requires = { "env_vars" } }, function(ctx)
  local sbx = ctx.sandbox_factory({ envs = { ABX_CREATE_VAR = "from-create" } })
  t.eq(sbx.commands:run("printf '%s\\n' \"$ABX_CREATE_VAR\"").stdout, "from-create\n")
end)

t.test("a secure sandbox rejects envd calls without the right access token", { requires = { "access_token" } },
  function(ctx)
  local sbx = ctx.sandbox_factory({ secure = true })
  t.ok(sbx.secure, "a secure sandbox comes with an envdAccessToken")
  t.eq(sbx.commands:run("echo ok").stdout, "ok\n")
  local wrong = sbx:with({ access_token = "wrong-token" })
  local err = t.raises("Authentication", function() wrong.commands:run("echo no") end)
  t.eq(err.status, 401)
  t.raises("Authentication", function() sbx:with({ access_token = false }).files:list("/") end)
end)

t.test("pause and connect three times in a row keep the files and each connect resumes the sandbox",
  { requires = { "pause", "connect_resume" }, timeout = 240 }, function(ctx)
  local sbx = ctx.sandbox_factory({ timeout = 300 })
  for cycle = 1, 3 do
    sbx.files:write("/home/user/cycle-" .. cycle, "written before pause " .. cycle)
    t.eq(sbx:pause(), true, "pause in cycle " .. cycle)
    t.eq(sbx:get_info().state, "paused", "state after pause in cycle " .. cycle)
    t.eq(sbx:is_running(), false, "envd answers while paused (cycle " .. cycle .. ")")
    t.eq(sbx:pause(), false, "a second pause in cycle " .. cycle .. " returns false (409)")
    sbx:connect({ timeout = 300 })
    t.eq(sbx.resumed, true, "connect resumed the paused sandbox in cycle " .. cycle)
    t.eq(sbx:get_info().state, "running", "state after connect in cycle " .. cycle)
    for k = 1, cycle do
      t.eq(sbx.files:read("/home/user/cycle-" .. k), "written before pause " .. k,
        "file of cycle " .. k .. " after resume " .. cycle)
    end
  end
  t.eq(sbx.commands:run("echo still-usable").stdout, "still-usable\n")
end)

t.test("list with state paused alone returns the paused sandbox and not the running one",
  { requires = { "pause" } }, function(ctx)
  local tag = unique(ctx, "paused-list")
  local paused = ctx.sandbox_factory({ metadata = { abx_case = tag } })
  local running = ctx.sandbox_factory({ metadata = { abx_case = tag } })
  t.eq(paused:pause(), true)
  -- state=paused alone, no other filter (anchors §C item 12)
  local all_paused = ctx.conn:list({ state = { "paused" } })
  local info = find(all_paused, paused.id)
  t.ok(info, "the paused sandbox is in list(state={paused})")
  t.eq(info.state, "paused")
  t.eq(info.metadata.abx_case, tag)
  t.ok(not find(all_paused, running.id), "a running sandbox is in list(state={paused})")
  for _, it in ipairs(all_paused) do t.eq(it.state, "paused", "state of " .. it.sandbox_id) end
  -- with the metadata filter: exactly one each way, both without a state filter
  local p = ctx.conn:list({ state = { "paused" }, metadata = { abx_case = tag } })
  t.eq(#p, 1)
  t.eq(p[1].sandbox_id, paused.id)
  local r = ctx.conn:list({ state = { "running" }, metadata = { abx_case = tag } })
  t.eq(#r, 1)
  t.eq(r[1].sandbox_id, running.id)
  t.eq(#ctx.conn:list({ metadata = { abx_case = tag } }), 2, "no state filter lists running and paused")
end)

-- A create answers once the sandbox serves: envd's health, asked right after the create through
-- the edge commands take (sbx:http retries nothing), is 204, not a gateway's 502 (a create that
-- answers before envd is ready fails a client's first call; docs/mutants.md,
-- create-before-ready). The engine's retries would hide that from every other test. Up to 4
-- probes are sent back to back (scenarios/lib/envd_health.lua: a booting sandbox refuses all).
t.test("a new sandbox's envd answers at once: health is 204 right after the create",
  { requires = { "envd" } }, function(ctx)
  local sbx = ctx.sandbox_factory({})
  local last, answers = envd_health.probe(sbx)
  t.eq(last.status, 204, "GET /health on envd's port right after the create, back to back: " .. answers)
end)

-- A second check of the state filter (CubeSandbox#177: ignored): one sandbox moves between the
-- running and the paused lists as it is paused and connected again.
t.test("a paused sandbox leaves the running list for the paused one, and connect moves it back",
  { requires = { "pause", "connect_resume" } }, function(ctx)
  local tag = unique(ctx, "state-move")
  local sbx = ctx.sandbox_factory({ metadata = { abx_case = tag } })
  local function listed(state)
    local out = {}
    for _, it in ipairs(ctx.conn:list({ state = { state }, metadata = { abx_case = tag } })) do
      out[#out + 1] = it.sandbox_id
    end
    return table.concat(out, ",")
  end
  t.eq(listed("running"), sbx.id, "running, before the pause")
  t.eq(listed("paused"), "", "paused, before the pause")
  t.eq(sbx:pause(), true)
  t.eq(listed("running"), "", "running, once paused")
  t.eq(listed("paused"), sbx.id, "paused, once paused")
  sbx:connect({})
  t.eq(sbx.resumed, true, "connect resumed it")
  t.eq(listed("running"), sbx.id, "running, after connect")
  t.eq(listed("paused"), "", "paused, after connect")
end)

-- Connect keeps the later of the two ends (openkruise/agents#304: connect shortened it), checked
-- on every provider that connects, also one that cannot shorten a TTL at all.
t.test("connect with a shorter timeout keeps a running sandbox's later end_at",
  { requires = { "connect_resume" } }, function(ctx)
  local sbx = ctx.sandbox_factory({ timeout = 600 })
  local before = end_at(sbx)
  for _, timeout in ipairs({ 60, 120 }) do -- 60 s: the lowest TTL of every flavour (opensandbox)
    ctx.conn:connect(sbx.id, { timeout = timeout })
    local after = end_at(sbx)
    t.ok(after >= before - 1, string.format("connect(timeout = %d) moved end_at back by %.0f s",
      timeout, before - after))
  end
end)

t.test("connect never shortens the TTL while set_timeout can",
  { requires = { "connect_resume", "ttl_shorten" } }, function(ctx)
  local sbx = ctx.sandbox_factory({ timeout = 600 })
  local before = end_at(sbx)
  local again = ctx.conn:connect(sbx.id, { timeout = 60 })
  t.eq(again.resumed, false, "connect to a running sandbox answers 200, not resumed")
  local after_short = end_at(sbx)
  t.ok(after_short >= before - 1, string.format(
    "connect with a shorter timeout moved end_at back by %.0f s", before - after_short))
  ctx.conn:connect(sbx.id, { timeout = 1200 })
  local extended = end_at(sbx)
  t.ok(extended > before + 300, string.format(
    "connect with a longer timeout should extend end_at (moved %.0f s, expected ~600)", extended - before))
  sbx:set_timeout(60)
  local shortened = end_at(sbx)
  t.ok(shortened < extended - 600, string.format(
    "set_timeout(60) should shorten end_at (moved %.0f s)", shortened - extended))
end)

t.test("refresh extends the TTL but never shortens it", { requires = { "refresh" } }, function(ctx)
  local sbx = ctx.sandbox_factory({ timeout = 120 })
  local before = end_at(sbx)
  sbx:refresh(600)
  local extended = end_at(sbx)
  t.ok(extended > before + 300, string.format("refresh(600) moved end_at by %.0f s", extended - before))
  sbx:refresh(20)
  t.ok(end_at(sbx) >= extended - 1, "refresh(20) shortened the TTL")
end)

t.test("kill of a paused sandbox returns true and the sandbox is gone", { requires = { "pause" } },
  function(ctx)
  local tag = unique(ctx, "kill-paused")
  local sbx = ctx.sandbox_factory({ metadata = { abx_case = tag } })
  t.eq(sbx:pause(), true)
  t.eq(sbx:kill(), true)
  t.raises("SandboxNotFound", function() sbx:get_info() end)
  t.eq(#ctx.conn:list({ metadata = { abx_case = tag } }), 0, "the killed sandbox is still listed")
  t.raises("SandboxNotFound", function() ctx.conn:connect(sbx.id, { timeout = 60 }) end)
  t.eq(sbx:kill(), false)
end)

t.test("paging with limit 1 through next_token visits every tagged sandbox exactly once",
  { timeout = 400 }, function(ctx)
  local tag = unique(ctx, "paging")
  local want = {}
  for _ = 1, 3 do
    want[ctx.sandbox_factory({ metadata = { abx_case = tag } }).id] = true
  end
  local seen, pages, token = {}, 0, nil
  repeat
    local items
    items, token = ctx.conn:list_page({ metadata = { abx_case = tag }, limit = 1, next_token = token })
    pages = pages + 1
    t.ok(#items <= 1, "a page of limit 1 had " .. #items .. " items")
    for _, it in ipairs(items) do
      t.ok(want[it.sandbox_id], "page " .. pages .. " listed a sandbox not tagged " .. tag)
      t.ok(not seen[it.sandbox_id], it.sandbox_id .. " was listed twice")
      seen[it.sandbox_id] = true
    end
    t.ok(pages <= 10, "more than 10 pages for 3 sandboxes")
  until not token
  for id in pairs(want) do t.ok(seen[id], id .. " was never listed") end
  t.eq(pages, 3, "pages for 3 sandboxes with limit 1 (X-Next-Token only when more remain)")
end)

t.test("the deprecated resume resumes a paused sandbox and is a Conflict on a running one",
  { requires = { "pause" } }, function(ctx)
  local sbx = ctx.sandbox_factory({ timeout = 300 })
  sbx.files:write("/home/user/resume.txt", "kept")
  local err = t.raises("Conflict", function() ctx.conn:resume(sbx.id, { timeout = 120 }) end)
  t.eq(err.status, 409)
  t.eq(sbx:pause(), true)
  local resumed = ctx.conn:resume(sbx.id, { timeout = 120 })
  t.eq(resumed.id, sbx.id)
  t.eq(resumed.resumed, true)
  t.eq(resumed.files:read("/home/user/resume.txt"), "kept")
  t.eq(sbx:get_info().state, "running")
end)

t.test("pause, get_metrics and connect of an unknown sandbox raise SandboxNotFound",
  { requires = { "pause", "metrics" } }, function(ctx)
  local sbx = ctx.sandbox_factory({ timeout = 120 })
  sbx:kill()
  t.eq(t.raises("SandboxNotFound", function() sbx:pause() end).status, 404)
  t.eq(t.raises("SandboxNotFound", function() sbx:get_metrics() end).status, 404)
  t.eq(t.raises("SandboxNotFound", function() ctx.conn:connect(sbx.id) end).status, 404)
end)

t.test("refresh of an unknown sandbox raises SandboxNotFound", { requires = { "refresh" } },
  function(ctx)
  local sbx = ctx.sandbox_factory({ timeout = 120 })
  sbx:kill()
  t.eq(t.raises("SandboxNotFound", function() sbx:refresh(30) end).status, 404)
end)

-- The newest sample of a running sandbox's metrics, around now.
local function last_metric(ctx)
  local sbx = ctx.sandbox_factory({ timeout = 120 })
  local now = os.time()
  local m = sbx:get_metrics({ start = now - 60, ["end"] = now + 60 })
  t.ok(#m >= 1, "no metrics for a running sandbox")
  local last = m[#m]
  t.ok(math.abs(last.timestamp_unix - now) < 120, "timestamp_unix far from now: " .. tostring(last.timestamp_unix))
  return last
end

t.test("metrics report the CPU and memory of a running sandbox", { requires = { "metrics" } },
  function(ctx)
  local last = last_metric(ctx)
  t.ok(last.cpu_count >= 1, "cpu_count")
  t.ok(last.cpu_used_pct >= 0 and last.cpu_used_pct <= 100, "cpu_used_pct " .. tostring(last.cpu_used_pct))
  t.ok(last.mem_used > 0 and last.mem_total >= last.mem_used, "memory " .. last.mem_used .. "/" .. last.mem_total)
end)

t.test("metrics report the disk of a running sandbox", { requires = { "metrics", "metrics_disk" } },
  function(ctx)
  local last = last_metric(ctx)
  t.ok(last.disk_total > 0 and last.disk_used >= 0 and last.disk_used <= last.disk_total, "disk")
end)

t.test("an auto_pause sandbox is paused, not killed, at its TTL and connect resumes it",
  { markers = { "e2e_slow" }, requires = { "pause", "short_ttl", "connect_resume" }, timeout = 120 },
  function(ctx)
  local sbx = ctx.sandbox_factory({ timeout = 120, auto_pause = true })
  sbx.files:write("/home/user/auto.txt", "auto-paused")
  sbx:set_timeout(2) -- the TTL runs out now, after the file is written
  t.eventually(function()
    t.eq(ctx.conn:get_info(sbx.id).state, "paused")
  end, { timeout = 60, interval = 1 })
  sbx:connect({ timeout = 120 })
  t.eq(sbx.resumed, true)
  t.eq(sbx.files:read("/home/user/auto.txt"), "auto-paused")
end)

