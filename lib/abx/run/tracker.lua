-- abx.run.tracker: everything the run creates (sandboxes, snapshots, volumes), the bound on live
-- sandboxes, and the final cleanup (delete what is tracked, then sweep by the e2e=<run id> tag).
--
-- Slots. At most `max` sandboxes are alive at once. A slot is taken before POST /sandboxes
-- (hooks.before_create) and given back exactly once: when the sandbox is killed by anyone
-- (sbx:kill(), conn:kill(id), the tracker; hooks.killed), when the platform answers 404 for it
-- (TTL expiry; hooks.gone), or when the create fails (hooks.create_failed). Each test is an
-- "owner" with a claim (its `sandboxes` option, default 1): its first sandbox takes the whole
-- claim at once, so a test never waits while holding slots within its claim.
--
-- Deadlock. Waiters are served in order: owners that already hold slots first (oldest first),
-- then the others (oldest first); the head of that order is served before anyone behind it
-- (no starvation). A test that would hold more than `max` live sandboxes fails at once. A test
-- beyond its claim can only deadlock with other such tests: when every owner that holds slots
-- is waiting for more, nothing can ever free one, so the waiter that closed the cycle fails at
-- once with InvalidArgument naming the `sandboxes` option, instead of waiting for its deadline.
local core = require("abx.core")

local Tracker = {}
Tracker.__index = Tracker

---@param max_live integer live sandboxes allowed at once
---@param run_id string
function Tracker.new(max_live, run_id)
  return setmetatable({ max = max_live, live = 0, waiters = {}, alive = {}, run_id = run_id,
    created = 0, snapshots = {}, volumes = {}, owners = {}, seq = 0, alive_n = 0, peak_alive = 0,
    timeline = {}, lives = {} }, Tracker)
end

---A new owner of slots (one per test, one per file- or run-scoped fixture, one per template
---build). Raises: InvalidArgument when `claim` exceeds the bound.
---@param name string the test's id, for messages
---@param claim? integer sandboxes the test may hold at once without waiting in between (default 1)
---@param kind? string "test" (a running test: counted by the deadlock check while scoped fixtures
---  hold slots), "file" or "run" (a scoped fixture's: no task of its own), nil otherwise
---@return table owner
function Tracker:owner(name, claim, kind)
  claim = claim or 1
  if claim > self.max then
    core.error("InvalidArgument", 0, string.format("%s declares sandboxes = %d, more than "
      .. "max_sandboxes = %d: it could never run", name, claim, self.max))
  end
  self.seq = self.seq + 1
  local o = { name = name, claim = claim, held = 0, reserved = 0, seq = self.seq, waiting = false,
    test = kind == "test" or nil, scope = (kind == "file" or kind == "run") and kind or nil }
  self.owners[o] = true
  return o
end

local function free(self) return self.max - self.live end

-- The waiters in service order: holders first, then the rest, each oldest first.
local function ordered(self)
  local live = {}
  for _, w in ipairs(self.waiters) do
    if not w.done then live[#live + 1] = w end
  end
  self.waiters = live
  local order = {}
  for _, w in ipairs(live) do order[#order + 1] = w end
  table.sort(order, function(a, b)
    local ha, hb = a.owner.held > 0, b.owner.held > 0
    if ha ~= hb then return ha end
    return a.n_seq < b.n_seq
  end)
  return order
end

-- Every owner that holds a slot waits for more and none can be served: the cycle is closed.
-- A file- or run-scoped fixture's owner (`scope` set, abx.run.fixtures) is no task: its slots
-- come back only when a test ends (the scope's last), so while one holds slots every test owner
-- counts, those holding none too: when all of them wait, nothing can end and free a slot.
local function deadlocked(self, head)
  if head and head.n <= free(self) then return false end
  local scoped = false
  for o in pairs(self.owners) do
    if o.scope and o.held + o.reserved > 0 then scoped = true end
  end
  local any = false
  for o in pairs(self.owners) do
    if not o.scope and (o.held + o.reserved > 0 or (scoped and o.test)) then
      if not o.waiting then return false end
      any = true
    end
  end
  return any
end

-- Serves a waiter; false when its task no longer waits (it gave up: deadline, interrupt). The
-- requester itself (served while it is still queuing) is not parked: it finds `granted` set.
local function grant(self, w)
  w.done = true
  w.owner.waiting = false
  self.live = self.live + w.n
  w.owner.held = w.owner.held + 1
  w.owner.reserved = w.owner.reserved + w.n - 1
  if w.task == core.current() then
    w.granted = true
    return true
  end
  return core.unpark(w.task, true)
end

local function refuse(w, err)
  w.done = true
  w.owner.waiting = false
  if w.task == core.current() then w.err = err else core.unpark(w.task, false, err) end
end

-- Hands free slots to waiters in order; breaks a closed cycle by failing its newest member.
local function dispatch(self)
  while true do
    local order = ordered(self)
    local head = order[1]
    if not head then return end
    if head.n <= free(self) then
      if not grant(self, head) then -- its task gave up meanwhile: take the slots back
        self.live = self.live - head.n
        head.owner.held = head.owner.held - 1
        head.owner.reserved = head.owner.reserved - (head.n - 1)
      end
    elseif deadlocked(self, head) then
      local newest = order[1]
      for _, w in ipairs(order) do
        if w.owner.held > 0 and w.n_seq > newest.n_seq then newest = w end
      end
      local scoped = {}
      for o in pairs(self.owners) do
        if o.scope and o.held > 0 then scoped[#scoped + 1] = o.name end
      end
      table.sort(scoped)
      if #scoped > 0 then
        refuse(newest, core.new_error("InvalidArgument", 0, string.format(
          "%s needs another sandbox while every slot (max_sandboxes = %d) is held by scoped "
          .. "fixtures (%s) and by tests that each wait for more: raise max_sandboxes, or run "
          .. "fewer tests at once (-j)", newest.owner.name, self.max,
          table.concat(scoped, "; "))))
      else
        refuse(newest, core.new_error("InvalidArgument", 0, string.format(
          "%s needs another sandbox while every slot (max_sandboxes = %d) is held by tests that "
          .. "each wait for more: declare how many it holds at once with the test option "
          .. "`sandboxes = N` (then it takes them together), or kill one first",
          newest.owner.name, self.max)))
      end
    else
      return
    end
  end
end

---Takes one slot for `owner`, waiting in order when none is free (see the file header).
---Raises: InvalidArgument (more than max at once, or a closed cycle), Timeout / Interrupted
---(the test's deadline while waiting; the wait is withdrawn).
function Tracker:acquire(owner)
  if owner.reserved > 0 then -- the rest of its claim, taken with its first sandbox
    owner.reserved = owner.reserved - 1
    owner.held = owner.held + 1
    return
  end
  if owner.held + 1 > self.max then
    core.error("InvalidArgument", 0, string.format("%s would hold %d live sandboxes, more than "
      .. "max_sandboxes = %d: kill one first", owner.name, owner.held + 1, self.max))
  end
  local n = owner.held == 0 and owner.claim or 1
  self.seq = self.seq + 1
  local entry = { task = core.current(), owner = owner, n = n, n_seq = self.seq }
  local order = ordered(self)
  local first = order[1]
  local ahead = first and (owner.held == 0 or first.owner.held > 0)
  if not ahead and n <= free(self) then
    self.live = self.live + n
    owner.held = owner.held + 1
    owner.reserved = owner.reserved + n - 1
    return
  end
  self.waiters[#self.waiters + 1] = entry
  owner.waiting = true
  dispatch(self)
  if entry.granted then return end
  if entry.err then error(entry.err, 0) end
  local ok, granted, err = pcall(core.park) -- resumed by dispatch: true, or false and an error
  if not ok then
    entry.done = true
    owner.waiting = false
    error(granted, 0)
  end
  if not granted then error(err, 0) end
end

---Gives one of `owner`'s slots back and serves the waiters.
function Tracker:release(owner)
  if owner and owner.held > 0 then owner.held = owner.held - 1 end
  self.live = self.live - 1
  dispatch(self)
end

---The test ended: the unused rest of its claim goes back. Its sandboxes are killed (and their
---slots freed) by the teardown before this.
function Tracker:finish(owner)
  if owner.reserved > 0 then
    self.live = self.live - owner.reserved
    owner.reserved = 0
  end
  self.owners[owner] = nil
  dispatch(self)
end

---hooks.created: the sandbox holds the slot `owner` took for it.
function Tracker:track(sbx, owner)
  if not self.alive[sbx.id] then
    -- live sandboxes the run knows of, and the most at any moment (the template table shows it)
    self.alive_n = self.alive_n + 1
    self:_peak()
  end
  self.alive[sbx.id] = { sbx = sbx, owner = owner, seq = self.created }
  self.created = self.created + 1
  -- the sandbox's life for the reports' timeline: { id, template, test (node id, nil outside a
  -- test), created, killed (core.now(); nil while alive) }
  local life = { id = sbx.id, template = sbx.template_id, test = owner and owner.node_id,
    created = core.now() }
  self.timeline[#self.timeline + 1] = life
  self.lives[sbx.id] = life
  if owner then
    owner.ids = owner.ids or {}
    owner.ids[#owner.ids + 1] = sbx.id
  end
end

-- The sandbox `id` no longer exists: its life in the timeline ends now.
function Tracker:_ended(id)
  local life = self.lives[id]
  if life and not life.killed then life.killed = core.now() end
end

function Tracker:_peak()
  local n = self.alive_n + (self.building or 0)
  if n > self.peak_alive then self.peak_alive = n end
end

---A template build on a platform that runs it in a sandbox of the same machine (the local one):
---it holds one slot from `begin_build` to `end_build`, counted among the live sandboxes.
---Yields while every slot is taken. Returns the owner to give to end_build.
---@param name string
---@return table owner
function Tracker:begin_build(name)
  local o = self:owner("template build " .. name, 1)
  self:acquire(o)
  self.building = (self.building or 0) + 1
  self:_peak()
  return o
end

---@param owner table from begin_build
function Tracker:end_build(owner)
  self.building = self.building - 1
  self:release(owner)
  self:finish(owner)
end

---The live sandboxes `owner` created, oldest first.
---@return table[] sandboxes
function Tracker:owned(owner)
  local list = {}
  for _, a in pairs(self.alive) do
    if a.owner == owner then list[#list + 1] = a end
  end
  table.sort(list, function(x, y) return x.seq < y.seq end)
  for i, a in ipairs(list) do list[i] = a.sbx end
  return list
end

---hooks.killed / hooks.gone: the sandbox no longer exists; frees its slot once. Returns whether
---it was tracked.
function Tracker:forget(id)
  local a = self.alive[id]
  if not a then return false end
  self.alive[id] = nil
  self:_ended(id)
  self.alive_n = self.alive_n - 1
  self:release(a.owner)
  if a.owner and a.owner.temporary and a.owner.held == 0 then self.owners[a.owner] = nil end
  return true
end

---Kills a tracked sandbox (idempotent: false without a request when it is already gone).
---Raises: what sbx:kill raises (the sandbox stays tracked for the final cleanup)
function Tracker:kill(sbx)
  if not self.alive[sbx.id] then return false end
  local r = sbx:kill() -- hooks.killed frees the slot
  self:forget(sbx.id)
  return r
end

---A failed test's sandbox kept alive (abx.run.keep): it leaves the tracker like a killed one
---(its slot is free, the final cleanup does not kill it) and the sweep by tag skips it.
---@param id string
function Tracker:keep(id)
  self.kept = self.kept or {}
  self.kept[id] = true
  self:forget(id)
end

---hooks.snapshot_created / hooks.volume_created: deleted at the end of the run.
function Tracker:track_snapshot(info) self.snapshots[info.snapshot_id] = info end
function Tracker:track_volume(info)
  self.volumes[info.volume_id] = info
  self.volumes_used = true
end
function Tracker:forget_snapshot(id) self.snapshots[id] = nil end
function Tracker:forget_volume(id) self.volumes[id] = nil end
---hooks.api_key_created: a managed API key the run made, deleted at the end when still there.
function Tracker:track_api_key(info)
  self.api_keys = self.api_keys or {}
  self.api_keys[info.id] = true
end
function Tracker:forget_api_key(id) if self.api_keys then self.api_keys[id] = nil end end

---The connection hooks that route every create, kill and 404 of `conn` through this tracker.
---`owner_of()` returns the owner of the running task (nil: a task outside any test, which gets
---an owner of its own per sandbox).
function Tracker:hooks(owner_of)
  local pending = {} -- the create in flight of each task: opts table -> owner
  local function current_owner()
    local o = owner_of()
    if not o then
      o = self:owner("a task outside a test", 1)
      o.temporary = true
    end
    return o
  end
  return {
    -- returns the metadata the create adds (abx.run.keep's tags under --keep-failed) or nil
    before_create = function(opts)
      local o = current_owner()
      self:acquire(o)
      o.create_started = core.now() -- the request starts now: create-to-ready excludes the wait
      pending[opts] = o
      if self.keep_metadata then return self.keep_metadata(o) end
    end,
    create_failed = function(opts)
      local o = pending[opts]
      pending[opts] = nil
      if o then self:release(o) end
    end,
    created = function(sbx, opts)
      local o = pending[opts]
      pending[opts] = nil
      self:track(sbx, o)
    end,
    killed = function(id) self:forget(id) end,
    gone = function(id) self:forget(id) end,
    snapshot_created = function(info) self:track_snapshot(info) end,
    snapshot_deleted = function(id) self:forget_snapshot(id) end,
    volume_created = function(info) self:track_volume(info) end,
    volume_deleted = function(id) self:forget_volume(id) end,
    api_key_created = function(info) self:track_api_key(info) end,
    api_key_deleted = function(id) self:forget_api_key(id) end,
  }
end

-- Deletes every tracked resource of one kind with `del(id)`; counts into report[field].
local function delete_all(set, del, report, field)
  for id in pairs(set) do
    local ok, r = pcall(del, id)
    if ok then
      if r then report[field] = report[field] + 1 end
      set[id] = nil
    else
      report.errors[#report.errors + 1] = tostring(r)
    end
  end
end

-- The waits before listing by tag once more while a sandbox the cleanup killed is still listed
-- (a platform may take a moment to drop a killed sandbox from its list); then what is left is a
-- failure. Seconds; a test may shorten them.
Tracker.VERIFY_WAITS = { 1, 2 }
-- At most this many ids are named in the cleanup's line and error.
Tracker.ALIVE_NAMED = 5

---The cleanup's error for sandboxes still listed after it: their number, the tag and a few ids.
---@param ids string[]
---@param run_id string
---@return string
function Tracker.alive_text(ids, run_id)
  local shown = {}
  for i = 1, math.min(#ids, Tracker.ALIVE_NAMED) do shown[i] = ids[i] end
  local more = #ids > #shown and string.format(" (and %d more)", #ids - #shown) or ""
  return string.format("%d sandboxes still alive after the cleanup (listed by tag e2e=%s): %s%s",
    #ids, run_id, table.concat(shown, ", "), more)
end

-- Whether a listed sandbox carries this run's tag: a platform that ignores the metadata filter
-- (agent-sandbox PR#11) lists every sandbox, and the sweep must never kill another run's.
local function tagged(self, info)
  return type(info.metadata) == "table" and info.metadata.e2e == self.run_id
end

-- The cleanup checks itself: a kill answered 204 that killed nothing (openkruise/agents#535)
-- must not read as done. Lists by tag again (after VERIFY_WAITS while something is listed);
-- sandboxes still listed, other than kept ones, are report.alive and an error (the run fails).
local function verify(self, conn, report)
  local ids
  for attempt = 0, #Tracker.VERIFY_WAITS do
    if attempt > 0 then core.sleep(Tracker.VERIFY_WAITS[attempt]) end
    local ok, items = pcall(conn.list, conn, { metadata = { e2e = self.run_id } })
    if not ok then
      report.errors[#report.errors + 1] = "cleanup check (list by tag): " .. tostring(items)
      return
    end
    ids = {}
    for _, info in ipairs(items) do
      if tagged(self, info) and not (self.kept and self.kept[info.sandbox_id]) then
        ids[#ids + 1] = info.sandbox_id
      end
    end
    if #ids == 0 then return end
  end
  table.sort(ids)
  report.alive = ids
  report.alive_error = Tracker.alive_text(ids, self.run_id)
  report.errors[#report.errors + 1] = report.alive_error
end

---Kills everything still tracked and lists sandboxes by tag and kills what remains (only those
---that carry the tag: a sandbox the list gives without it is an error, never killed), then lists
---by tag once more: what is still there is `alive` and an error (a kill answered but not done);
---then deletes the tracked snapshots, volumes and managed API keys, and the volumes whose name
---carries the run id.
---@return table { tracked, swept, snapshots, volumes, api_keys, alive = {ids}, alive_error =
---  (its text in errors) | nil, errors = {...} }
function Tracker:cleanup(conn)
  local report = { tracked = 0, swept = 0, snapshots = 0, volumes = 0, api_keys = 0, errors = {},
    alive = {} }
  for id, a in pairs(self.alive) do
    local ok, r = pcall(a.sbx.kill, a.sbx)
    if ok then
      if r then report.tracked = report.tracked + 1 end
      self.alive[id] = nil
      self:_ended(id)
    else
      report.errors[#report.errors + 1] = tostring(r)
    end
  end
  if conn then
    local ok, items = pcall(conn.list, conn, { metadata = { e2e = self.run_id } })
    if ok then
      local foreign = 0
      for _, info in ipairs(items) do
        if not tagged(self, info) then
          foreign = foreign + 1 -- never another run's sandbox, whatever the list says
        elseif not (self.kept and self.kept[info.sandbox_id]) then -- a kept one is no leak
          local kok, r = pcall(conn.kill, conn, info.sandbox_id)
          if kok and r then report.swept = report.swept + 1 end
          if not kok then report.errors[#report.errors + 1] = tostring(r) end
        end
      end
      if foreign > 0 then
        report.errors[#report.errors + 1] = string.format("the list by tag e2e=%s also gave %d "
          .. "sandboxes without that tag (the platform ignores the metadata filter): not killed",
          self.run_id, foreign)
      end
      verify(self, conn, report)
    else
      report.errors[#report.errors + 1] = "sweep: " .. tostring(items)
    end
    -- snapshots after the sandboxes (a snapshot in use by a sandbox cannot be deleted)
    delete_all(self.snapshots, function(id) return conn:delete_snapshot(id) end, report, "snapshots")
    delete_all(self.volumes, function(id) return conn:delete_volume(id) end, report, "volumes")
    -- API keys after the sandboxes (the sweep above used the run's own key, never these)
    delete_all(self.api_keys or {}, function(id) return conn:delete_api_key(id) end, report, "api_keys")
    -- volumes have no metadata: one whose name carries the run id is the run's (the tag by name;
    -- listed only when the run used volumes, so a provider without them is never asked)
    if self.volumes_used then
      local lok, vols = pcall(conn.list_volumes, conn)
      if lok then
        local stray = {}
        for _, v in ipairs(vols) do
          if v.name:find(self.run_id, 1, true) then stray[v.volume_id] = v end
        end
        delete_all(stray, function(id) return conn:delete_volume(id) end, report, "volumes")
      else
        report.errors[#report.errors + 1] = "volume sweep: " .. tostring(vols)
      end
    end
  end
  return report
end

return Tracker
