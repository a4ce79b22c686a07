-- Runner case: abx.tracker's slot rules on fake sandboxes (issue 9, item 3), no platform needed.
-- Expected: 5 passed, exit 0.
local t = require("abx.test")
local core = require("abx.core")
local Tracker = require("abx.tracker")

-- a fake sandbox whose kill counts, and goes through the hooks like Connection:kill
local function fake(tr, hooks, owner_box, id)
  local opts = {}
  hooks.before_create(opts)
  local sbx = { id = id, kills = 0 }
  function sbx:kill() self.kills = self.kills + 1; hooks.killed(self.id); return true end
  hooks.created(sbx, opts)
  return sbx
end

local function setup(max)
  local tr = Tracker.new(max, "unit")
  local box = {}
  local hooks = tr:hooks(function() return box[core.current()] end)
  return tr, hooks, box
end

t.test("a killed sandbox frees its slot once and is not killed again", function()
  local tr, hooks, box = setup(2)
  box[core.current()] = tr:owner("t1", 1)
  local a = fake(tr, hooks, box, "a")
  t.eq(tr.live, 1)
  t.eq(a:kill(), true)
  t.eq(tr.live, 0)
  t.eq(tr:kill(a), false) -- teardown: no second DELETE
  t.eq(a.kills, 1)
  hooks.killed("a") -- a late 404 or kill of the same id frees nothing more
  t.eq(tr.live, 0)
end)

t.test("a 404 (TTL expiry) frees the slot", function()
  local tr, hooks, box = setup(1)
  box[core.current()] = tr:owner("t1", 1)
  fake(tr, hooks, box, "x")
  hooks.gone("x")
  t.eq(tr.live, 0)
  fake(tr, hooks, box, "y") -- would wait forever if the slot were still taken
  t.eq(tr.live, 1)
end)

t.test("a failed create gives its slot back", function()
  local tr, hooks, box = setup(1)
  box[core.current()] = tr:owner("t1", 1)
  local opts = {}
  hooks.before_create(opts)
  hooks.create_failed(opts)
  t.eq(tr.live, 0)
end)

t.test("a claim is taken whole; holders are served before tests that hold none", function()
  local tr, hooks, box = setup(3)
  local log = {}
  local me = core.current()
  local pending = 3
  local function done() pending = pending - 1; if pending == 0 then core.unpark(me) end end
  -- A holds 2 and asks for a third while B (holds none, claim 3) waits: A goes first
  core.spawn(function()
    box[core.current()] = tr:owner("A", 1)
    local s1 = fake(tr, hooks, box, "a1")
    local s2 = fake(tr, hooks, box, "a2")
    core.sleep(0.05)
    log[#log + 1] = "A asks"
    local s3 = fake(tr, hooks, box, "a3")
    log[#log + 1] = "A got 3"
    s1:kill(); s2:kill(); s3:kill()
    done()
  end)
  core.spawn(function()
    core.sleep(0.01)
    box[core.current()] = tr:owner("B", 3)
    log[#log + 1] = "B asks"
    fake(tr, hooks, box, "b1") -- takes its claim of 3 at once
    log[#log + 1] = "B got claim"
    t.eq(tr.live, 3)
    fake(tr, hooks, box, "b2"); fake(tr, hooks, box, "b3") -- from the claim: no wait
    done()
  end)
  -- C holds 1 and releases it later, so that A can proceed
  core.spawn(function()
    box[core.current()] = tr:owner("C", 1)
    local c = fake(tr, hooks, box, "c1")
    core.sleep(0.1)
    c:kill()
    done()
  end)
  core.park()
  t.eq(table.concat(log, ", "), "B asks, A asks, A got 3, B got claim")
end)

t.test("a closed cycle fails the newest waiter at once instead of hanging", function()
  local tr, hooks, box = setup(2)
  local me = core.current()
  local errs, pending = {}, 2
  for i, name in ipairs({ "P", "Q" }) do
    core.spawn(function()
      box[core.current()] = tr:owner(name, 1)
      local s = fake(tr, hooks, box, name .. "1")
      core.sleep(0.02 * i) -- P asks for a second one first; Q's ask closes the cycle
      local ok, e = pcall(fake, tr, hooks, box, name .. "2")
      if not ok then errs[#errs + 1] = name .. ":" .. e.kind end
      if ok then core.sleep(0.01) end
      s:kill()
      pending = pending - 1
      if pending == 0 then core.unpark(me) end
    end)
  end
  local t0 = core.now()
  core.park()
  t.eq(table.concat(errs, ","), "Q:InvalidArgument")
  t.ok(core.now() - t0 < 1, "the cycle was broken at once")
end)
