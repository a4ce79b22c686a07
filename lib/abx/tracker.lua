-- abx.tracker: every sandbox the run creates, the bound on live sandboxes, and the final cleanup
-- (kill what is tracked, then sweep by the e2e=<run id> tag and kill what remains).
local core = require("abx.core")

local Tracker = {}
Tracker.__index = Tracker

---@param max_live integer live sandboxes allowed at once
---@param run_id string
function Tracker.new(max_live, run_id)
  return setmetatable({ max = max_live, live = 0, waiters = {}, alive = {}, run_id = run_id,
    created = 0 }, Tracker)
end

-- A freed slot is handed to the oldest waiter directly (release does not lower `live`), so a
-- test that just started cannot take it first and starve the waiter. A waiter whose test gave up
-- (deadline, interrupt) is marked cancelled and skipped.
function Tracker:acquire()
  local pending = {}
  for _, w in ipairs(self.waiters) do
    if not w.cancelled then pending[#pending + 1] = w end
  end
  self.waiters = pending
  if self.live < self.max and #self.waiters == 0 then
    self.live = self.live + 1
    return
  end
  local entry = { task = core.current() }
  self.waiters[#self.waiters + 1] = entry
  local ok, err = pcall(core.park) -- resumed by release(), which passes its slot on
  if not ok then
    entry.cancelled = true
    error(err, 0)
  end
end

function Tracker:release()
  while #self.waiters > 0 do
    local w = table.remove(self.waiters, 1)
    if not w.cancelled and core.unpark(w.task) then return end -- the slot passes to w
  end
  self.live = self.live - 1
end

---Creates a sandbox within the live bound and tracks it.
---Raises: whatever conn:create raises (the slot is given back first)
function Tracker:create(conn, opts)
  self:acquire()
  local ok, sbx = pcall(conn.create, conn, opts)
  if not ok then
    self:release()
    error(sbx, 0)
  end
  self.alive[sbx.id] = sbx
  self.created = self.created + 1
  return sbx
end

---Kills a tracked sandbox (idempotent) and frees its slot.
---Raises: what sbx:kill raises (the sandbox stays tracked for the final cleanup)
function Tracker:kill(sbx)
  if not self.alive[sbx.id] then return false end
  local r = sbx:kill()
  self.alive[sbx.id] = nil
  self:release()
  return r
end

---Kills everything still tracked, then lists by tag and kills what remains.
---@return table { tracked = n killed from the tracker, swept = n found by the tag, errors = {...} }
function Tracker:cleanup(conn)
  local report = { tracked = 0, swept = 0, errors = {} }
  for id, sbx in pairs(self.alive) do
    local ok, r = pcall(sbx.kill, sbx)
    if ok then
      if r then report.tracked = report.tracked + 1 end
      self.alive[id] = nil
    else
      report.errors[#report.errors + 1] = tostring(r)
    end
  end
  if conn then
    local ok, items = pcall(conn.list, conn, { metadata = { e2e = self.run_id } })
    if ok then
      for _, info in ipairs(items) do
        local kok, r = pcall(conn.kill, conn, info.sandbox_id)
        if kok and r then report.swept = report.swept + 1 end
        if not kok then report.errors[#report.errors + 1] = tostring(r) end
      end
    else
      report.errors[#report.errors + 1] = "sweep: " .. tostring(items)
    end
  end
  return report
end

return Tracker
