-- Runner case (issue 23 item 5): abx.run.keep and the tracker on fake sandboxes, no platform
-- needed: the tags a create gets, the TTL kept sandboxes get (capped by the provider's ttl.max),
-- a kept sandbox frees its slot and is skipped by the final sweep, a sandbox that cannot be kept
-- is killed with the reason.
-- Expected: 3 passed, exit 0.
local t = require("abx.test")
local keep = require("abx.run.keep")
local Tracker = require("abx.run.tracker")

local function fake(id, conn, fail)
  local sbx = { id = id, conn = conn, kills = 0 }
  function sbx:set_timeout(s)
    if fail then error("set_timeout refused", 0) end
    self.ttl = s
  end
  function sbx:kill() self.kills = self.kills + 1; return true end
  return sbx
end

local function run_with(tracker, ttl)
  return { tracker = tracker, keep = { ttl = ttl, kept = {} } }
end

t.test("every create of a keep run carries abx-kept=1 and the test's node id", function()
  t.eq(keep.metadata({ test = true, name = "a.lua::x" }), { ["abx-kept"] = "1", ["abx-test"] = "a.lua::x" })
  t.eq(keep.metadata(nil), { ["abx-kept"] = "1" }, "a create outside a test: the tag alone")
  local tr = Tracker.new(2, "unit")
  tr.keep_metadata = keep.metadata
  local hooks = tr:hooks(function() return tr:owner("a.lua::y", 1, "test") end)
  t.eq(hooks.before_create({}), { ["abx-kept"] = "1", ["abx-test"] = "a.lua::y" })
  t.eq(Tracker.new(2, "unit"):hooks(function() return nil end).before_create({}), nil,
    "without --keep-failed a create gets nothing")
end)

t.test("kept: TTL set (capped by ttl.max), slot freed, not swept", function()
  local tr = Tracker.new(2, "unit")
  local owner = tr:owner("a.lua::z", 1, "test")
  tr:acquire(owner)
  local a = fake("sbxa", { ttl = { max = 120 } })
  tr:track(a, owner)
  local run = run_with(tr, 1800)
  t.eq(keep.keep(run, { a }, "a.lua::z"), {})
  t.eq(a.ttl, 120, "the provider's ttl.max caps the keep TTL")
  t.eq(a.kills, 0)
  t.eq(tr.live, 0, "its slot is free")
  t.eq(run.keep.kept, { { id = "sbxa", test = "a.lua::z", capped = 120 } })
  local killed = {}
  -- the list by tag (what is killed is no longer listed: the cleanup's check lists again)
  local conn = { list = function()
      local out = { { sandbox_id = "sbxa", metadata = { e2e = "unit" } } }
      if #killed == 0 then out[2] = { sandbox_id = "stray", metadata = { e2e = "unit" } } end
      return out
    end,
    kill = function(_, id) killed[#killed + 1] = id; return true end }
  local report = tr:cleanup(conn)
  t.eq(killed, { "stray" }, "the sweep by tag kills the stray one, not the kept one")
  t.eq(report.swept, 1)
  t.eq(report.errors, {}, "the kept one still listed is no cleanup failure")
  local lines = keep.summary(run, { serve_pid = 4242 })
  t.eq(lines[1], "kept 1 sandbox(es) of failed tests for 1800 s (metadata abx-kept=1):")
  t.eq(lines[2], "  sbxa  a.lua::z  (TTL 120 s: the provider's ttl.max)")
  t.eq(lines[3], "    reach it: abxlua sandbox exec sbxa -- 'ls -la ~'")
  t.match(lines[5], "pid 4242%): `kill 4242` stops it")
end)

t.test("a sandbox that cannot be kept is killed, with the reason", function()
  local tr = Tracker.new(2, "unit")
  local owner = tr:owner("a.lua::w", 1, "test")
  tr:acquire(owner)
  local b = fake("sbxb", {}, true)
  tr:track(b, owner)
  local errs = keep.keep(run_with(tr, 600), { b }, "a.lua::w")
  t.eq(#errs, 1)
  t.eq(errs[1].phase, "keep sbxb")
  t.eq(errs[1].message, "set_timeout refused")
  t.eq(b.kills, 1)
end)
