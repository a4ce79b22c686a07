-- abx.run.templates: the template folders a run selected (abx.run.collect marks their scripts'
-- tests with `recipe`). Before their tests, the run deploys each recipe (abx.run.template_build:
-- skipped when unchanged), `defaults.build_jobs` builds at a time; a test of a template waits
-- for its template, a failed build fails its tests with the build's error and log tail (the other
-- templates still run), a provider without templates_build skips them. On the local platform a
-- build holds one of the run's max_sandboxes slots (it runs in a sandbox). At the end: one table
-- line per template (build time or "cached", sandbox create-to-ready time, result counts).
--
--   local templates = require("abx.run.templates")
--   local reg = templates.new(run, out, tests)      -- run: { conn, provider, capabilities, defaults }
--   reg:start()                                     -- spawns the build tasks
--   local e = reg:await(name)                       -- parks until that template's build ended
--   -- e.state: "ready" | "failed" | "skipped"; e.error (abx.error), e.reason (skip reason)
--   reg:count(result); reg:table()
local core = require("abx.core")
local tb = require("abx.run.template_build")

local M = {}

local Reg = {}
Reg.__index = Reg

---@param run table the runner's run state (conn, provider, capabilities, defaults, verbose)
---@param out table the console (abx.run.console)
---@param tests table[] the collected tests
---@return table reg
function M.new(run, out, tests)
  local self = setmetatable({ run = run, out = out, entries = {}, order = {} }, Reg)
  for _, t in ipairs(tests) do
    local r = t.recipe
    if r and not self.entries[r.name] then
      self.entries[r.name] = { recipe = r, state = "pending", waiters = {},
        counts = { passed = 0, failed = 0, skipped = 0, xfailed = 0, xpassed = 0 } }
      self.order[#self.order + 1] = r.name
    end
  end
  return self
end

---Whether the run deploys a template of this name.
function Reg:builds(name) return self.entries[name] ~= nil end

local function finish(e, state)
  e.state = state
  e.finished = core.now()
  for _, task in ipairs(e.waiters) do core.unpark(task) end
  e.waiters = {}
end

-- A prebuilt template (recipe `prebuilt: true`): nothing is built; it is ready when the provider
-- has a template of that name (the SDK's alias rule, abx.client.template exists), else its tests
-- are skipped naming it.
local function check_prebuilt(self, e)
  local run, name = self.run, e.recipe.name
  e.state, e.started = "building", core.now()
  local ok, has = pcall(require("abx.client.template").exists, run.conn, name)
  if not ok then
    e.error = core.is_error(has) and has or core.new_error("Internal", 0, tostring(has))
    self.out:line(string.format("%s: cannot look up the prebuilt template: %s", name, tostring(e.error)))
    return finish(e, "failed")
  end
  if not has then
    e.reason = string.format("provider %s has no template %s (prebuilt: the folder's recipe builds "
      .. "nothing)", run.provider, name)
    return finish(e, "skipped")
  end
  e.result = { status = "prebuilt", seconds = core.now() - e.started }
  finish(e, "ready")
end

local function build_one(self, e)
  local run, r = self.run, e.recipe
  if r.prebuilt then return check_prebuilt(self, e) end
  -- a recipe built from another recipe of this run waits for that one (self.order has it first)
  local base = r.build.fromTemplate and self.entries[r.build.fromTemplate]
  if e.cycle or base then
    local d = not e.cycle and self:await(r.build.fromTemplate)
    if e.cycle or d.state ~= "ready" then
      e.error = core.new_error("InvalidArgument", 0, e.cycle or string.format("template %s is built "
        .. "from %s, whose deploy %s", r.name, r.build.fromTemplate,
        d.state == "failed" and "failed" or "was skipped"))
      self.out:line(string.format("%s: build FAILED: %s", r.name, tostring(e.error)))
      return finish(e, "failed")
    end
  end
  e.state, e.started = "building", core.now()
  -- the local platform builds in a sandbox on this machine: the build holds one of the run's
  -- max_sandboxes slots while it runs
  local slot = run.provider_kind == "local" and run.tracker and run.tracker:begin_build(r.name)
  local ok, res = core.guard(require("abx.run.limits").phase_opts("template build",
    "build_timeout", run, true), function(err) return err end, tb.build, run.conn, r, {
      deploy = true, verbose = run.verbose, provider = run.provider,
      record_dir = tb.record_dir(core.state_dir(), run.provider),
      out = function(line) self.out:line(line) end })
  if slot then run.tracker:end_build(slot) end
  if ok then
    e.result = res
    finish(e, "ready")
  else
    e.error = core.is_error(res) and res or core.new_error("Internal", 0, tostring(res))
    self.out:line(string.format("%s: build FAILED: %s", r.name, tostring(e.error)))
    finish(e, "failed")
  end
end

---Spawns the builds (at most defaults.build_jobs at once). A provider without templates_build
---skips every template with that reason.
function Reg:start()
  if #self.order == 0 then return end
  local run = self.run
  if not run.capabilities.templates_build then
    local prebuilt = {}
    for _, name in ipairs(self.order) do
      local e = self.entries[name]
      if e.recipe.prebuilt then
        prebuilt[#prebuilt + 1] = e
      else
        e.reason = string.format("provider %s lacks capability templates_build (template %s is not "
          .. "built)", run.provider, name)
        finish(e, "skipped")
      end
    end
    for _, e in ipairs(prebuilt) do core.spawn(function() check_prebuilt(self, e) end) end
    return
  end
  -- a recipe `from:` another recipe of this run comes after it (a cycle fails its members)
  local sorted, mark = {}, {}
  local function visit(name, path)
    local e = self.entries[name]
    if mark[name] == "done" then return end
    if mark[name] == "active" then
      local from_i = 1
      for i, n in ipairs(path) do if n == name then from_i = i end end
      local loop = table.concat(path, " -> ", from_i) .. " -> " .. name
      for i = from_i, #path do
        self.entries[path[i]].cycle = "templates built from each other: " .. loop
      end
      return
    end
    mark[name] = "active"
    path[#path + 1] = name
    local from = e.recipe.build and e.recipe.build.fromTemplate
    if from and self.entries[from] then visit(from, path) end
    path[#path] = nil
    mark[name] = "done"
    sorted[#sorted + 1] = name
  end
  for _, name in ipairs(self.order) do visit(name, {}) end
  local queue = sorted
  local next_i = 1
  local function worker()
    while next_i <= #queue do
      local e = self.entries[queue[next_i]]
      next_i = next_i + 1
      build_one(self, e)
    end
  end
  for _ = 1, math.min(run.defaults.build_jobs, #self.order) do core.spawn(worker) end
end

---Parks the current task until template `name`'s build has ended; returns its entry (nil when
---the run does not build it).
---@param name string
---@return table|nil entry
function Reg:await(name)
  local e = self.entries[name]
  if not e then return nil end
  while e.state == "pending" or e.state == "building" do
    e.waiters[#e.waiters + 1] = core.current()
    core.park()
  end
  return e
end

---The failure a test of a failed template gets: the build's error and its log tail.
---@return string
function M.failure_message(e)
  local msg = tostring(e.error)
  local tail = e.error.log_tail
  if tail and #tail > 0 then
    msg = msg .. "\n    build log (last " .. #tail .. " lines):\n      " .. table.concat(tail, "\n      ")
  end
  return msg
end

---Counts a test's outcome under its template.
function Reg:count(result)
  local r = result.test.recipe
  local e = r and self.entries[r.name]
  if e then e.counts[result.outcome] = (e.counts[result.outcome] or 0) + 1 end
end

---Notes how long a template's sandbox took from create to ready (the first one counts).
function Reg:ready_time(name, seconds)
  local e = self.entries[name]
  if e and not e.ready_seconds then e.ready_seconds = seconds end
end

---Prints the table: one line per template, then the most sandboxes alive at once.
function Reg:table(tracker)
  if #self.order == 0 then return end
  local out = self.out
  out:line("")
  out:line("=== templates ===")
  out:line(string.format("%-22s %-16s %-9s %s", "TEMPLATE", "BUILD", "READY", "RESULT"))
  for _, name in ipairs(self.order) do
    local e = self.entries[name]
    local build
    if e.state == "ready" then
      if e.result.status == "prebuilt" then
        build = "prebuilt"
      elseif e.result.status == "cached" then
        build = "cached"
      elseif e.result.all_cached then
        build = string.format("cached (%.1fs)", e.result.seconds) -- rebuilt from cached layers
      else
        build = string.format("%.1fs", e.result.seconds)
      end
    elseif e.state == "failed" then
      build = "FAILED"
    elseif e.state == "skipped" then
      build = "skipped"
    else
      build = "not run"
    end
    local c = e.counts
    local result = string.format("%d passed, %d failed, %d skipped", c.passed,
      c.failed + c.xpassed, c.skipped + c.xfailed)
    out:line(string.format("%-22s %-16s %-9s %s", name, build,
      e.ready_seconds and string.format("%.2fs", e.ready_seconds) or "-", result))
  end
  if tracker then
    out:line(string.format("sandboxes alive at once: at most %d (max_sandboxes %d%s)",
      tracker.peak_alive, tracker.max, self.run.provider_kind == "local"
        and "; a local template build counts as one" or ""))
  end
end

return M
