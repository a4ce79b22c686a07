-- abx.bench.output: what `abxlua bench` prints and writes.
--   M.tables(result)        the TTI table (a row per mode) and the operations table
--   M.document(result)      the JSON document of --json (M.VERSION; samples included, so a later
--                           tool can recompute any statistic)
--   M.compare(old, new)     the lines of --compare: each statistic of the earlier result beside
--                           this one's, with the change in percent
-- Times are milliseconds, rates 0..1 (printed as percentages), scores 0..100.
local json = require("abx.json")

local M = {}

M.VERSION = 1

local function ms(v)
  if v == nil then return "-" end
  if v >= 1000 then return string.format("%.2fs", v / 1000) end
  return string.format("%.1fms", v)
end

local function pct(v) return v and string.format("%.0f%%", v * 100) or "-" end

---The lines of the result's tables.
---@param r table a bench result (abx.run.cmd.bench)
---@return string[]
function M.tables(r)
  local out = {}
  if next(r.tti) then
    out[#out + 1] = string.format("time to interactive (create until `%s` succeeded), %d samples "
      .. "a mode%s, template %s:", r.command, r.n, r.segment and string.format(" (segment %d/%d: "
      .. "its share)", r.segment.index, r.segment.total) or "", r.template)
    out[#out + 1] = string.format("  %-11s %9s %9s %9s %9s %9s %8s %6s %9s", "mode", "min", "p50",
      "p95", "p99", "max", "success", "score", "wall")
    for _, mode in ipairs(r.modes) do
      local s = r.tti[mode]
      out[#out + 1] = string.format("  %-11s %9s %9s %9s %9s %9s %8s %6.1f %9s", mode, ms(s.min),
        ms(s.p50), ms(s.p95), ms(s.p99), ms(s.max), pct(s.success), s.score, ms(s.wall))
      for _, e in ipairs(s.errors) do
        out[#out + 1] = string.format("    %d failed: %s", e.count, e.error:match("[^\n]*"))
      end
    end
  end
  if r.ops then
    out[#out + 1] = string.format("operations on a sandbox of %s, %d samples each:", r.template,
      r.iterations)
    out[#out + 1] = string.format("  %-11s %9s %9s %8s", "operation", "p50", "p95", "success")
    for _, name in ipairs(r.op_names) do
      local s = r.ops[name]
      if s.skipped then
        out[#out + 1] = string.format("  %-11s skipped: %s", name, s.skipped)
      else
        out[#out + 1] = string.format("  %-11s %9s %9s %8s", name, ms(s.p50), ms(s.p95), pct(s.success))
        for _, e in ipairs(s.errors) do
          out[#out + 1] = string.format("    %d failed: %s", e.count, e.error:match("[^\n]*"))
        end
      end
    end
  end
  return out
end

---The --json document of a result.
---@param r table
---@return string
function M.document(r)
  local doc = { version = M.VERSION, kind = "abxlua-bench", provider = r.provider,
    flavor = r.flavor or json.null, template = r.template, command = r.command, n = r.n,
    stagger_ms = r.stagger_ms, iterations = r.ops and r.iterations or json.null,
    modes = r.modes, run_id = r.run_id, started_at = r.started_at, success = r.success,
    tti = r.tti, ops = r.ops or json.null, thresholds = r.thresholds or json.array(),
    threshold_exprs = json.array(r.threshold_exprs or {}), segment = r.segment or json.null,
    merged = r.merged or json.null }
  return json.encode(doc)
end

-- { label, value in old, value in new, kind } for every statistic both results have.
local function pairs_of(old, new)
  local rows = {}
  local function add(label, a, b, kind)
    if type(a) == "number" and type(b) == "number" then rows[#rows + 1] = { label, a, b, kind } end
  end
  for _, mode in ipairs(new.modes or {}) do
    local a, b = (old.tti or {})[mode], new.tti[mode]
    if a and b then
      for _, st in ipairs({ "p50", "p95", "p99" }) do add("tti." .. mode .. "." .. st, a[st], b[st], "ms") end
      add("tti." .. mode .. ".success", a.success, b.success, "rate")
      add("tti." .. mode .. ".score", a.score, b.score, "score")
    end
  end
  for _, name in ipairs(new.op_names or {}) do
    local a, b = (old.ops or {})[name], (new.ops or {})[name]
    if type(a) == "table" and type(b) == "table" then
      for _, st in ipairs({ "p50", "p95" }) do add("ops." .. name .. "." .. st, a[st], b[st], "ms") end
    end
  end
  return rows
end

local function show(v, kind)
  if kind == "ms" then return ms(v) end
  if kind == "rate" then return pct(v) end
  return string.format("%.1f", v)
end

---The lines of --compare: the earlier result's statistics beside this one's.
---@param old table the earlier --json document (decoded)
---@param new table this bench's result
---@param old_name string the file it came from
---@return string[]
function M.compare(old, new, old_name)
  local rows = pairs_of(old, new)
  local out = { string.format("compared with %s (%s, provider %s, template %s):", old_name,
    tostring(old.started_at), tostring(old.provider), tostring(old.template)) }
  if #rows == 0 then
    out[#out + 1] = "  no statistic in common (other modes or operations)"
    return out
  end
  out[#out + 1] = string.format("  %-26s %10s %10s %9s", "statistic", "before", "now", "change")
  for _, r in ipairs(rows) do
    local change = r[2] ~= 0 and string.format("%+.1f%%", (r[3] - r[2]) / r[2] * 100) or "-"
    out[#out + 1] = string.format("  %-26s %10s %10s %9s", r[1], show(r[2], r[4]), show(r[3], r[4]), change)
  end
  return out
end

return M
