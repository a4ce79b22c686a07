-- abx.run.measure: t.measure (a load inside a test, k6's executors in small) and the thresholds of
-- a test (k6's `thresholds`, grafana/k6 docs "Thresholds"), evaluated when the test body returns.
--
--   local stats = t.measure("create", function(i) ctx.sandbox_factory({}) end,
--     { iterations = 20, concurrency = 4 })        -- or duration = S, rate = R (starts per second)
--   t.test("...", { thresholds = { "p(95)<500", "rate<0.01" } }, function(ctx) ... end)
--
-- A measurement runs fn(i) for i = 1..iterations (or until `duration` seconds have passed since it
-- began), at most `concurrency` at once (default 1); with `rate`, iteration i starts no earlier
-- than (i - 1) / rate seconds after the first (k6's constant-arrival-rate, without dropping: a
-- start that finds every worker busy waits). An fn that raises is a failed iteration (its error
-- kept), counted in `rate` and never as a time; the test's own deadline or an interrupt ends the
-- measurement and is raised again.
-- Statistics (milliseconds): count, ok, failed, rate (failed / count: k6's rate of a failure
-- metric), min, med, avg, max, p90, p95, p99 (abx.bench.stats: linear interpolation), errors (the
-- distinct ones, first 5) and samples (each iteration's ms, or false when it failed).
-- Thresholds: `STAT OP VALUE` (split and compared as abxlua bench's, abx.bench.threshold), STAT
-- one of p(N) (0 <= N <= 100), med, avg, min, max, count, rate; OP <, <=, >, >=, ==, !=; VALUE a
-- number (ms for times). A list applies to every
-- measurement of the test; a map { [measurement name] = list } to the one it names. A crossed
-- threshold, one whose measurement the test never made, or one over a statistic without a value
-- (no successful iteration) fails the test with kind Threshold, naming the value, the threshold
-- and its source (file:line of the test); the run exits 99 when thresholds alone failed.
local core = require("abx.core")
local stats = require("abx.bench.stats")
local bench_threshold = require("abx.bench.threshold")
local tti = require("abx.bench.tti")

local M = {}

M.STATS = { "p(N)", "med", "avg", "min", "max", "count", "rate" }

-- task -> { [name] = stats, order = {names} }: the measurements of the test running in that task
local by_task = setmetatable({}, { __mode = "k" })

---Parses one threshold. Returns { expr, stat, p?, op, limit } or nil and a message naming the
---valid forms.
---@param expr string
---@return table|nil
---@return string|nil
function M.parse(expr)
  if type(expr) ~= "string" then return nil, "a threshold must be a string like \"p(95)<500\"" end
  local stat, op, value, limit = bench_threshold.split(expr)
  if not op then
    return nil, string.format("threshold %q has no operator (write STAT OP VALUE, e.g. p(95)<500; "
      .. "OP one of %s)", expr, table.concat(bench_threshold.OPERATORS, " "))
  end
  if not limit then
    return nil, string.format("threshold %q: '%s' is not a number (times are ms)", expr, value)
  end
  local p = stat:match("^p%(([%d.]+)%)$")
  if p then
    p = tonumber(p)
    if not p or p < 0 or p > 100 then
      return nil, string.format("threshold %q: p(N) needs 0 <= N <= 100", expr)
    end
    return { expr = expr, stat = stat, p = p, op = op, limit = limit }
  end
  for _, k in ipairs(M.STATS) do
    if k == stat then return { expr = expr, stat = stat, op = op, limit = limit } end
  end
  return nil, string.format("threshold %q: unknown statistic '%s' (valid: %s)", expr, stat,
    table.concat(M.STATS, ", "))
end

---Checks a test's `thresholds` option: a list of expressions, or a map of measurement names to
---lists. Returns the parsed form { all = {...}, named = { [name] = {...} } } or nil and a message.
---@param v table
---@return table|nil
---@return string|nil
function M.check_option(v)
  local out = { all = {}, named = {} }
  local function list(into, t, where)
    if type(t) ~= "table" then return where .. " must be a list of thresholds" end
    for i, e in ipairs(t) do
      local th, err = M.parse(e)
      if not th then return err end
      into[i] = th
    end
    return nil
  end
  local err = list(out.all, v, "thresholds") -- the list part (every measurement)
  if err then return nil, err end
  for k in pairs(v) do
    if math.type(k) == "integer" then
      if k < 1 or k > #v then return nil, "thresholds: the list part must be a sequence" end
    elseif type(k) ~= "string" then
      return nil, "thresholds: keys must be measurement names"
    else
      out.named[k] = {}
      err = list(out.named[k], v[k], "thresholds." .. k)
      if err then return nil, err end
    end
  end
  return out
end


-- The test's own deadline or an interrupt: not an iteration's failure.
local function fatal(e)
  return core.is_error(e) and (e.kind == "Interrupted"
    or (e.kind == "Timeout" and tostring(e.message):find("deadline passed", 1, true) ~= nil))
end

local function check_opts(name, opts)
  if type(name) ~= "string" or name == "" then
    error("t.measure: the first argument must be the measurement's name (a non-empty string)", 3)
  end
  local known = { iterations = true, duration = true, concurrency = true, rate = true }
  for k in pairs(opts) do
    if not known[k] then
      error(string.format("t.measure(%q): unknown option %q (known: concurrency, duration, "
        .. "iterations, rate)", name, tostring(k)), 3)
    end
  end
  local function positive(k, whole)
    local v = opts[k]
    if v ~= nil and (type(v) ~= "number" or v <= 0 or (whole and math.type(v) ~= "integer")) then
      error(string.format("t.measure(%q): %s must be a %s > 0", name, k, whole and "whole number"
        or "number"), 3)
    end
  end
  positive("iterations", true); positive("duration"); positive("concurrency", true); positive("rate")
  if not opts.iterations and not opts.duration then
    error(string.format("t.measure(%q): give iterations = N or duration = S", name), 3)
  end
end

---t.measure: runs fn under load and returns its statistics (see the header). Records them on the
---running test for its thresholds and reports.
---@param name string
---@param fn fun(i: integer)
---@param opts {iterations?: integer, duration?: number, concurrency?: integer, rate?: number}
---@return table stats
function M.measure(name, fn, opts)
  opts = opts or {}
  check_opts(name, opts)
  if type(fn) ~= "function" then error(string.format("t.measure(%q): fn must be a function", name), 2) end
  local samples, next_i, t0, stop = {}, 1, core.now(), nil
  local deadline = opts.duration and t0 + opts.duration
  local function take()
    if stop or (opts.iterations and next_i > opts.iterations) then return nil end
    local start = opts.rate and t0 + (next_i - 1) / opts.rate or core.now()
    if deadline and start >= deadline then return nil end
    next_i = next_i + 1
    return next_i - 1, start
  end
  local function worker()
    while true do
      local i, start = take()
      if not i then return end
      if start > core.now() then core.sleep(start - core.now()) end
      local s0 = core.now()
      local ok, err = pcall(fn, i)
      if ok then
        samples[i] = { ok = true, ms = (core.now() - s0) * 1000 }
      elseif fatal(err) then
        stop = stop or err
        return
      else
        samples[i] = { ok = false, error = tti.error_text(err) }
      end
    end
  end
  local workers, me = opts.concurrency or 1, core.current()
  local left = workers - 1
  for _ = 2, workers do
    core.spawn(function()
      worker()
      left = left - 1
      if left == 0 then core.unpark(me) end
    end)
  end
  worker()
  if left > 0 then core.park() end
  if stop then error(stop, 0) end
  local list = {}
  for i = 1, next_i - 1 do list[#list + 1] = samples[i] end
  local s = stats.summary(list)
  local times = {}
  for _, x in ipairs(list) do if x.ok then times[#times + 1] = x.ms end end
  table.sort(times)
  local r = { name = name, count = s.count, ok = s.ok, failed = s.failed,
    rate = s.count > 0 and s.failed / s.count or 0, min = s.min, med = s.p50, avg = s.mean,
    max = s.max, p90 = stats.percentile(times, 90), p95 = s.p95, p99 = s.p99, errors = s.errors,
    samples = {}, wall_s = core.now() - t0 }
  for i, x in ipairs(list) do r.samples[i] = x.ok and x.ms or false end
  local rec = by_task[me]
  if rec then
    if not rec[name] then rec.order[#rec.order + 1] = name end
    rec[name] = r
  end
  return r
end

---The runner: the test running in `task` starts (its measurements are recorded from now).
function M.begin(task) by_task[task] = { order = {} } end

---The measurements of the test in `task` so far, kept (for its thresholds).
function M.peek(task) return by_task[task] end

---The runner: the measurements of the test in `task` ({ [name] = stats, order = {names} }), and
---forgets them.
function M.take(task)
  local rec = by_task[task]
  by_task[task] = nil
  return rec
end

local function value_of(m, th)
  if th.p then
    local times = {}
    for _, x in ipairs(m.samples) do if x then times[#times + 1] = x end end
    table.sort(times)
    return stats.percentile(times, th.p)
  end
  return m[th.stat]
end

---Evaluates a test's parsed thresholds on its measurements. Returns the evaluated list
---({ measurement, expr, value, ok, source }) and whether all held.
---@param parsed table abx.run.measure.check_option's
---@param rec table|nil M.take's
---@param source string where the thresholds are declared (file:line)
---@return table[]
---@return boolean
function M.evaluate(parsed, rec, source)
  local out, all = {}, true
  local function one(mname, th)
    local m = rec and rec[mname]
    local v = m and value_of(m, th)
    local ok = bench_threshold.holds(v, th.op, th.limit)
    all = all and ok
    out[#out + 1] = { measurement = mname, expr = th.expr, value = v, ok = ok, source = source,
      missing = m == nil }
  end
  for _, mname in ipairs(rec and rec.order or {}) do
    for _, th in ipairs(parsed.all) do one(mname, th) end
  end
  if #parsed.all > 0 and not (rec and #rec.order > 0) then
    for _, th in ipairs(parsed.all) do one("(none)", th) end
  end
  local names = {}
  for n in pairs(parsed.named) do names[#names + 1] = n end
  table.sort(names)
  for _, n in ipairs(names) do
    for _, th in ipairs(parsed.named[n]) do one(n, th) end
  end
  return out, all
end

---The text of a crossed threshold, for the test's failure.
---@param e table an evaluated threshold
---@return string
function M.describe(e)
  if e.missing then
    return string.format("threshold %s: the test made no measurement %s (t.measure) (from %s)",
      e.expr, e.measurement == "(none)" and "at all" or ("named " .. e.measurement), e.source)
  end
  return string.format("threshold %s crossed by measurement %s: %s (from %s)", e.expr,
    e.measurement, e.value == nil and "no value (no iteration succeeded)"
      or string.format("%s = %.6g", e.expr:match("^%s*([^<>=!]+)"), e.value), e.source)
end

return M
