-- abx.bench.stats: the statistics of a benchmark's samples, as `abxlua bench` reports them.
--
-- A sample is { ok = boolean, ms = number (ok samples only), error = string (failed ones) }: a
-- failed sample counts against the success rate and never as a time.
-- Percentiles: linear interpolation between the two nearest ranks (numpy's default "linear"
-- method, Hyndman and Fan's definition 7), over the ok samples' times.
-- Score: ComputeSDK's composite (github.com/computesdk/benchmarks, METHODOLOGY.md and README
-- "How We Score", as of 2026-05-05): each of the median, p95 and p99 of time to interactive
-- scores 100 x (1 - v / 10 s), at least 0; the composite is 60 % median + 25 % p95 + 15 % p99,
-- times the success rate (0..1). 0 when no sample succeeded.
local M = {}

-- The time (ms) at which ComputeSDK's per-statistic score reaches 0.
M.SCORE_CEILING_MS = 10000

---The p-th percentile (0..100) of a sorted array of numbers; nil for an empty one.
---@param sorted number[]
---@param p number
---@return number|nil
function M.percentile(sorted, p)
  local n = #sorted
  if n == 0 then return nil end
  local h = (n - 1) * p / 100 + 1
  local lo = math.floor(h)
  if lo >= n then return sorted[n] end
  return sorted[lo] + (h - lo) * (sorted[lo + 1] - sorted[lo])
end

local function score_of(v)
  if not v then return 0 end
  return math.max(0, 100 * (1 - v / M.SCORE_CEILING_MS))
end

---ComputeSDK's composite score of a summary (its p50, p95, p99 in ms and its success rate).
---@param s table a summary (M.summary)
---@return number 0..100
function M.score(s)
  if s.ok == 0 then return 0 end
  return (0.60 * score_of(s.p50) + 0.25 * score_of(s.p95) + 0.15 * score_of(s.p99)) * s.success
end

---The summary of samples: { count, ok, failed, success (0..1), min, p50, p95, p99, max, mean
---(ms; nil without an ok sample), score, errors (the distinct error texts, first 5, with their
---counts) }.
---@param samples table[] { ok, ms?, error? }
---@return table
function M.summary(samples)
  local times, errors, seen = {}, {}, {}
  for _, s in ipairs(samples) do
    if s.ok then
      times[#times + 1] = s.ms
    else
      local e = tostring(s.error or "failed")
      if seen[e] then
        seen[e].count = seen[e].count + 1
      elseif #errors < 5 then
        seen[e] = { error = e, count = 1 }
        errors[#errors + 1] = seen[e]
      end
    end
  end
  table.sort(times)
  local sum = 0
  for _, v in ipairs(times) do sum = sum + v end
  local r = { count = #samples, ok = #times, failed = #samples - #times,
    success = #samples > 0 and #times / #samples or 0,
    min = times[1], p50 = M.percentile(times, 50), p95 = M.percentile(times, 95),
    p99 = M.percentile(times, 99), max = times[#times], mean = #times > 0 and sum / #times or nil,
    errors = errors }
  r.score = M.score(r)
  return r
end

return M
