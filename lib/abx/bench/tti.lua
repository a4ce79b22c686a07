-- abx.bench.tti: time to interactive (TTI) in ComputeSDK's three modes (github.com/computesdk/
-- benchmarks METHODOLOGY.md, as of 2026-05-05): a sample is the wall time from the create call
-- until the first command in the new sandbox succeeded (exit code 0); the sandbox is then killed,
-- untimed.
--   sequential  one sandbox at a time: created, tested and killed before the next begins
--   staggered   sample i starts i x stagger_ms after the first (200 ms in ComputeSDK's runs), so
--               the load ramps up
--   burst       every sample starts at once
-- A sample that fails (create refused, the command's exit code not 0, its deadline passed) is a
-- failed sample with its error: it counts against the success rate, never as a time.
-- Segments (`abxlua bench --segment K/N`, k6-operator's execution segments): segment K runs the
-- samples i (1..n) with (i - 1) % N == K - 1, each at its place in the whole schedule (a
-- staggered sample i still starts (i - 1) x stagger_ms after the mode's start), so N machines
-- started together run the whole benchmark; sequential then means one sandbox at a time on each.
local core = require("abx.core")
local stats = require("abx.bench.stats")

local M = {}

---A failed sample's or iteration's error as text: "Kind: message" for an abx error.
---@param e any
---@return string
function M.error_text(e)
  if core.is_error(e) then return e.kind .. ": " .. tostring(e.message) end
  return tostring(e)
end
local handler = M.error_text

-- Kills a sample's sandbox, untimed; a failure is kept for the cleanup line (the tracker's sweep
-- kills what is left).
local function kill_quietly(b, sbx)
  local ok, err = pcall(sbx.kill, sbx)
  if not ok then b.kill_errors[#b.kill_errors + 1] = handler(err) end
end

---One TTI sample on bench `b` ({conn, template, command, timeout, ttl, kill_errors}).
---@param b table
---@return table sample { ok, ms?, error? }
function M.sample(b)
  local sbx
  local t0 = core.now()
  local ok, v = core.guard(b.timeout, handler, function()
    sbx = b.conn:create({ template = b.template, timeout = b.ttl })
    local r = sbx.commands:run(b.command)
    if r.exit_code ~= 0 then
      error(string.format("the command `%s` exited %s: %s", b.command, tostring(r.exit_code),
        ((r.stderr or "") .. (r.error or "")):sub(1, 200)), 0)
    end
    return (core.now() - t0) * 1000
  end)
  if sbx then kill_quietly(b, sbx) end
  if ok then return { ok = true, ms = v } end
  return { ok = false, error = v }
end

---The sample indices (1..n) of segment k of `total` (abx.bench.tti's header).
---@param n integer
---@param k integer
---@param total integer
---@return integer[]
function M.indices(n, k, total)
  local out = {}
  for i = 1, n do
    if (i - 1) % total == k - 1 then out[#out + 1] = i end
  end
  return out
end

-- Runs fn(i) for each index i in tasks of their own, sample i started (i - 1) x gap seconds
-- after the first; yields until all have ended. Returns their results in the indices' order.
local function concurrent(indices, gap, fn)
  local results, left, waiter = {}, #indices, core.current()
  for j, i in ipairs(indices) do
    core.spawn(function()
      if gap > 0 and i > 1 then core.sleep((i - 1) * gap) end
      local ok, r = pcall(fn, i)
      results[j] = ok and r or { ok = false, error = handler(r) }
      left = left - 1
      if left == 0 then core.unpark(waiter) end
    end)
  end
  if left > 0 then core.park() end
  return results
end

---Runs one mode: n samples. Returns the summary (abx.bench.stats.summary) with `wall` (ms, the
---mode's whole run) and `samples`.
---@param b table the bench (M.sample's, plus n, stagger_ms and segment {index, total} or nil)
---@param mode string "sequential", "staggered" or "burst"
---@param progress fun(text: string)
---@return table
function M.run_mode(b, mode, progress)
  local samples
  local t0 = core.now()
  local seg = b.segment or { index = 1, total = 1 }
  local indices = M.indices(b.n, seg.index, seg.total)
  if mode == "sequential" then
    samples = {}
    for j = 1, #indices do
      samples[j] = M.sample(b)
      if j % 10 == 0 and j < #indices then progress(string.format("%s: %d of %d", mode, j, #indices)) end
    end
  elseif mode == "staggered" then
    samples = concurrent(indices, b.stagger_ms / 1000, function() return M.sample(b) end)
  elseif mode == "burst" then
    samples = concurrent(indices, 0, function() return M.sample(b) end)
  else
    error("abx.bench.tti: unknown mode " .. tostring(mode))
  end
  local s = stats.summary(samples)
  s.wall = (core.now() - t0) * 1000
  s.samples = samples
  return s
end

return M
