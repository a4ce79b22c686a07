-- 11_managed_api_key: a managed team API key, end to end (the seed's test_managed_api_key). The
-- test creates a key with a name (the admin credential, conn.access_token), finds it listed with
-- a mask and never its value, runs a sandbox command and files lifecycle with it from an
-- isolated HOME (a child `abxlua run` through abx.run.process with env_clear and cwd: its
-- environment holds that key as its only credential, in an empty HOME and working directory, on
-- a config naming the platform as a remote provider), deletes it, and checks that the deleted
-- key is refused with Authentication (401) by the client and by a second isolated run, that it
-- is gone from the list, and that neither child run left a sandbox (by its tag).
-- Fixtures: ctx.conn, ctx.run_id, ctx.finally (the key is deleted at teardown if the test did not
-- get that far; the run's tracker deletes it too). Requires: api_keys (skipped where the routes
-- are not served: the Alibaba, ACS (OpenKruise), CubeSandbox and OpenSandbox flavours). On a remote
-- provider the admin credential comes from ABX_SANDBOX_ACCESS_TOKEN or E2B_ACCESS_TOKEN (and
-- ABX_SANDBOX_TEAM_ID); without it the test skips naming them. Markers: none.
-- Protocol: e2b-dev/infra spec/openapi.yml /api-keys (GET, POST NewTeamAPIKey -> 201
--           CreatedTeamAPIKey), /api-keys/{apiKeyID} (DELETE 204), TeamAPIKey,
--           IdentifierMaskingDetails; docs/protocol/e2b-control-plane.md §1.2 (X-API-Key), §6.1
--           (401 -> Authentication); platform/api/apikeys.h (the local platform's routes).
local t = require("abx.test")
local core = require("abx.core")
local cjson = require("cjson")
local process = require("abx.run.process")

-- The child's scenario: what the key must be able to do (files and commands through envd, the
-- lifecycle through the control plane), on the fixtures' tracked sandbox.
local CHILD_SCENARIO = [[
local t = require("abx.test")
t.test("command and files lifecycle on the managed key", function(ctx)
  local sbx = ctx.sandbox_factory({ timeout = 120 })
  local r = sbx.commands:run("echo managed-key")
  t.eq(r.exit_code, 0)
  t.eq(r.stdout, "managed-key\n")
  sbx.files:write("/tmp/managed.txt", "through the managed key\n")
  t.eq(sbx.files:read("/tmp/managed.txt"), "through the managed key\n")
  local listed = false
  for _, e in ipairs(sbx.files:list("/tmp")) do listed = listed or e.name == "managed.txt" end
  t.ok(listed, "the file is listed")
  sbx.files:remove("/tmp/managed.txt")
  t.eq(sbx.files:exists("/tmp/managed.txt"), false)
  t.eq(sbx:get_info().sandbox_id, sbx.id)
  t.eq(sbx:kill(), true)
end)
]]

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

-- A YAML double-quoted scalar.
local function yq(s) return cjson.encode(s) end

-- The child's config: the platform `conn` speaks to, as a remote provider with its semantics.
local function child_config(conn)
  local lines = { "provider: managed", "providers:", "  managed:", "    kind: remote",
    "    description: the platform under test, on a managed API key",
    "    api_url: " .. yq(conn.api_url), "    domain: " .. yq(conn.domain),
    "    envd_routing: " .. conn.envd_routing,
    "    route_version: " .. (conn.v2_routes and "v2" or "v1"),
    "    capabilities: [" .. (conn.v2_routes and "v2_routes" or "") .. "]" }
  if conn.envd_routing == "headers" then lines[#lines + 1] = "    envd_url: " .. yq(conn.envd_url) end
  if conn.ca_file then lines[#lines + 1] = "    ca_file: " .. yq(conn.ca_file) end
  return table.concat(lines, "\n") .. "\n"
end

-- A private scratch directory (mktemp -d: mode 0700, a name no other run has), removed at the
-- test's teardown.
local function scratch_dir(ctx)
  local tmp = core.getenv("TMPDIR")
  if not tmp or tmp:sub(1, 1) ~= "/" then tmp = "/tmp" end
  local r = process.run({ "mktemp", "-d", tmp .. "/abx-managed-key-XXXXXXXX" }, { timeout = 10 })
  t.eq(r.exit_code, 0, "mktemp -d: " .. r.stderr)
  local dir = r.stdout:gsub("\n$", "")
  ctx.finally(function() process.run({ "rm", "-rf", "--", dir }, { timeout = 30 }) end)
  return dir
end

-- Runs the child scenario in a fresh HOME and working directory with `key` as the only
-- credential (env_clear: nothing of this run's environment reaches it); returns the process
-- result, the decoded JSON report (nil when none was written) and the child's run id.
local function isolated_run(ctx, key, what)
  local home = scratch_dir(ctx)
  local cfgdir, scen = home .. "/config", home .. "/scenarios"
  t.eq(process.run({ "mkdir", cfgdir, scen }, { timeout = 10 }).exit_code, 0)
  write(cfgdir .. "/abxlua.yaml", child_config(ctx.conn))
  write(scen .. "/managed_key.lua", CHILD_SCENARIO)
  local run_id = ctx.run_id .. "-" .. what .. "-" .. core.random_hex(3)
  -- should the child be stopped before its own cleanup (a deadline, an interrupt), what it made
  -- carries its tag: this (admin) key sees the team's sandboxes and kills them
  ctx.finally(function()
    for _, info in ipairs(ctx.conn:list({ metadata = { e2e = run_id } })) do
      ctx.conn:kill(info.sandbox_id)
    end
  end)
  local env = { HOME = home, TMPDIR = home, PATH = "/usr/bin:/bin", LANG = "C.UTF-8",
    ABX_SANDBOX_API_KEY = key, E2E_RUN_ID = run_id, NO_COLOR = "1" }
  local r = process.run({ process.abxlua(), "run", "--config", cfgdir .. "/abxlua.yaml", "--json",
    home .. "/report.json", "-j", "1", scen .. "/managed_key.lua" },
    { env = env, env_clear = true, cwd = home, timeout = 120 })
  local text = core.exists(home .. "/report.json") and core.read_file(home .. "/report.json")
  local report = text and cjson.decode(text) or nil
  if text then t.ok(not text:find(key, 1, true), "the child's report holds the key") end
  return r, report, run_id
end

local function find(list, id)
  for _, k in ipairs(list) do if k.id == id then return k end end
  return nil
end

t.test("a managed API key runs a sandbox lifecycle from an isolated HOME and is refused once "
  .. "deleted", { requires = { "api_keys" }, sandboxes = 1, timeout = 240 }, function(ctx)
  if not ctx.conn.access_token then
    t.skip("the API-key routes need the admin credential: set ABX_SANDBOX_ACCESS_TOKEN (or "
      .. "E2B_ACCESS_TOKEN) and, for E2B's cloud, ABX_SANDBOX_TEAM_ID")
  end
  local name = "abx-" .. ctx.run_id .. "-" .. core.random_hex(4)
  local k = ctx.conn:create_api_key({ name = name })
  local deleted = false
  ctx.finally(function() if not deleted then ctx.conn:delete_api_key(k.id) end end)
  t.eq(k.name, name)
  t.match(k.key, "^e2b_%x+$")
  t.eq(k.mask.prefix .. k.mask.masked_value_prefix, k.key:sub(1, #k.mask.prefix + #k.mask.masked_value_prefix),
    "the mask's prefix is the key's")
  t.eq(k.mask.masked_value_suffix, k.key:sub(-#k.mask.masked_value_suffix), "the mask's suffix")
  t.eq(k.mask.value_length, #k.key - #k.mask.prefix, "the mask's valueLength")

  local listed = find(ctx.conn:list_api_keys(), k.id)
  t.ok(listed, "the new key is listed")
  t.eq(listed.name, name)
  t.eq(rawget(listed, "key"), nil, "a listing holds a key's value")

  -- the lifecycle, from an isolated HOME with the key as the only credential
  local r, report, child_id = isolated_run(ctx, k.key, "ok")
  t.eq(r.exit_code, 0, "the isolated run on the managed key: " .. r.stdout .. r.stderr)
  t.ok(report and report.counts and report.counts.passed == 1,
    "the isolated run's report: one test passed")
  t.eq(#ctx.conn:list({ metadata = { e2e = child_id } }), 0, "the isolated run left a sandbox")

  -- deletion: the key is refused from now on, by this client and by a fresh isolated run
  t.eq(ctx.conn:delete_api_key(k.id), true)
  deleted = true
  local err = t.raises("Authentication", function()
    ctx.conn:with({ api_key = k.key }):list_page({ limit = 1 })
  end)
  t.eq(err.status, 401)
  t.ok(not err.message:find(k.key, 1, true), "the refusal echoes the key")
  local again, _, again_id = isolated_run(ctx, k.key, "gone")
  t.neq(again.exit_code, 0, "an isolated run on the deleted key succeeded")
  t.match(again.stdout .. again.stderr, "refused the API key")
  t.eq(#ctx.conn:list({ metadata = { e2e = again_id } }), 0, "the refused run left a sandbox")
  t.eq(find(ctx.conn:list_api_keys(), k.id), nil, "the deleted key is still listed")
  t.eq(ctx.conn:delete_api_key(k.id), false, "a second delete")
end)
