-- 08_providers: every provider of the config, live: a round trip (create, command, file write and
-- read, kill) and a credential-refusal check with the refusal that provider gives, exactly.
-- Local flavours (`abxlua serve --flavor NAME`, one per remote entry's `flavor:`) always run,
-- each on its own platform started here with that entry's semantics (abx.run.flavor); a cloud
-- provider runs when its credentials are set and is skipped naming the missing variables.
-- The providers are those of the run's own config (abx.run.config.current: --config, ABX_CONFIG
-- or the one found), never a config file this scenario reads itself.
-- Fixtures: ctx.finally, ctx.run_id. Markers: none.
-- Protocol: docs/protocol/e2b-control-plane.md §1.2 (401 {code, message}), §8; docs/protocol/e2b-v2-and-peers.md
--           §4 (OpenSandbox: OPEN-SANDBOX-API-KEY, 401 {code, message}), §5 (CubeSandbox accepts
--           any API key; OpenKruise keeps E2B's refusal).
local t = require("abx.test")
local core = require("abx.core")
local config = require("abx.run.config")
local provider = require("abx.run.provider")
local flavor = require("abx.run.flavor")

local cfg = config.current()

-- The refusal of a wrong API key, per provider (by the flavour it speaks): the error kind and
-- status, the message where the wire fixes it, or `accepted` where the platform takes any key.
local REFUSAL = {
  ["e2b"] = { kind = "Authentication", status = 401 },
  ["alicloud-fc"] = { kind = "Authentication", status = 401 },
  ["alicloud-express"] = { kind = "Authentication", status = 401 },
  ["acs"] = { kind = "Authentication", status = 401 },
  ["cubesandbox"] = { accepted = true }, -- "any API key is accepted" (docs/protocol/e2b-v2-and-peers.md §5)
  ["opensandbox"] = { kind = "Authentication", status = 401 },
}
-- what the embedded platform says in its E2B flavours (platform/api/api.c, E2B's body)
local LOCAL_MESSAGE = "Invalid API key"

local WRONG_KEY = "e2b_0000000000000000000000000000000000000000"

-- create, a command, a file written and read back, kill: on `conn`.
local function round_trip(ctx, conn, label)
  local sbx = conn:create({ template = "base", timeout = 120 })
  local alive = true
  ctx.finally(function() if alive then pcall(sbx.kill, sbx) end end)
  local r = sbx.commands:run("echo round-trip-" .. label)
  t.eq(r.exit_code, 0)
  t.eq(r.stdout, "round-trip-" .. label .. "\n")
  local body = "08_providers " .. label .. " " .. core.random_hex(8)
  sbx.files:write("/tmp/abx-08-providers.txt", body)
  t.eq(sbx.files:read("/tmp/abx-08-providers.txt"), body)
  t.eq(sbx:kill(), true)
  alive = false
  t.eq(sbx:is_running(), false, label .. ": not running after kill")
end

-- The wrong key's answer on a list call: refused exactly as REFUSAL says, or accepted.
local function refusal(conn, name, local_flavour)
  local want = assert(REFUSAL[name], "no expected refusal for " .. name)
  local bad = conn:with({ api_key = WRONG_KEY })
  if want.accepted then
    t.eq(type(bad:list_page({ limit = 1 })), "table", name .. " takes any API key")
    return
  end
  local err = t.raises(want.kind, function() bad:list_page({ limit = 1 }) end)
  t.eq(err.status, want.status, name .. ": refusal status")
  if local_flavour and name ~= "opensandbox" then
    t.ok(err.message:find(LOCAL_MESSAGE, 1, true), name .. ": E2B's refusal message, got "
      .. err.message)
  end
  -- the wrong key must not have leaked into an answer or an error message
  t.ok(not err.message:find(WRONG_KEY, 1, true), "the key is not echoed")
end

for _, name in ipairs(flavor.NAMES) do
  t.test("local flavour " .. name .. ": round trip and a wrong API key's refusal",
    { sandboxes = 1, timeout = 180 }, function(ctx)
    local pname, p = config.provider(cfg, "local", name)
    local conn, info = provider.open(pname, p, { run_id = ctx.run_id, defaults = cfg.defaults })
    ctx.finally(function() info.stop(false) end)
    round_trip(ctx, conn, name)
    refusal(conn, name, true)
  end)
end

-- every remote provider of the config, in name order
local remotes = {}
for name, p in pairs(cfg.providers) do
  if type(p) == "table" and p.kind == "remote" then remotes[#remotes + 1] = name end
end
table.sort(remotes)

for _, name in ipairs(remotes) do
  t.test("cloud provider " .. name .. ": round trip and a wrong API key's refusal",
    { sandboxes = 1, timeout = 300 }, function(ctx)
    local p = cfg.providers[name]
    -- a ${region} with no region set is a reason to skip, named exactly (the config is fine)
    local ok, r = pcall(provider.resolve, name, p)
    if not ok then t.skip(string.format("provider %s: %s", name, r.message or tostring(r))) end
    if #r.missing > 0 then
      t.skip(string.format("provider %s: missing credentials [%s]", name, table.concat(r.missing, ", ")))
    end
    local conn, info = provider.open(name, p, { run_id = ctx.run_id, defaults = cfg.defaults })
    ctx.finally(function() info.stop() end)
    round_trip(ctx, conn, name)
    refusal(conn, p.flavor or "e2b", false)
  end)
end
