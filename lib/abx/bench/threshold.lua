-- abx.bench.threshold: pass/fail criteria on a benchmark's statistics, k6's way: an expression
-- `METRIC OP VALUE` (k6's thresholds, grafana/k6 docs "Thresholds": `p(95)<500`), where METRIC
-- names one statistic of `abxlua bench`'s result and a crossed threshold fails the bench with
-- exit code 99 (k6's ThresholdsHaveFailed, errext/exitcodes.go).
--
-- Metrics (times in milliseconds, rates 0..1, scores 0..100):
--   success                      the success rate of every time-to-interactive sample
--   tti.<mode>.<stat>            mode: sequential, staggered, burst; stat: min, p50, p95, p99,
--                                max, mean, success, score, wall (the mode's whole run)
--   ops.<op>.<stat>              op: abx.bench.ops.NAMES; stat: min, p50, p95, max, mean, success
-- Operators: <, <=, >, >=, ==, !=. VALUE is a plain number (no unit: ms for times, as k6's).
-- A metric the bench measured no value for (no successful sample, an operation the provider
-- lacks) crosses its threshold: it cannot be shown to hold.
local M = {}

M.MODES = { "sequential", "staggered", "burst" }
M.TTI_STATS = { "min", "p50", "p95", "p99", "max", "mean", "success", "score", "wall" }
M.OP_STATS = { "min", "p50", "p95", "max", "mean", "success" }
local OPS = { "<=", ">=", "==", "!=", "<", ">" }

-- The operators, longest first (so "<=" is not read as "<").
M.OPERATORS = OPS

---Splits "LHS OP VALUE" (spaces ignored) at its first operator: the left side, the operator, the
---value's text and its number (nil unless the text is a plain number: no unit). Nothing when the
---text has no operator. abxlua bench's thresholds and t.test's (abx.run.measure) share it.
---@param expr string
---@return string|nil lhs, string|nil op, string|nil value, number|nil limit
function M.split(expr)
  local s = expr:gsub("%s+", "")
  for _, o in ipairs(OPS) do
    local at = s:find(o, 1, true)
    if at then
      local value = s:sub(at + #o)
      return s:sub(1, at - 1), o, value, not value:find("[^%d.eE+-]") and tonumber(value) or nil
    end
  end
  return nil
end

local function member(list, v)
  for _, x in ipairs(list) do if x == v then return true end end
  return false
end

local function usage(expr, why)
  error({ threshold_usage = string.format("--threshold '%s': %s", expr, why) }, 0)
end

-- The metric's parts, or a usage error naming the valid ones.
local function check_metric(expr, metric, op_names)
  if metric == "success" then return { "success" } end
  local parts = {}
  for p in metric:gmatch("[^.]+") do parts[#parts + 1] = p end
  local kind = parts[1]
  if kind == "tti" then
    if #parts ~= 3 or not member(M.MODES, parts[2]) then
      usage(expr, "tti metrics are tti.<mode>.<stat> with mode one of " .. table.concat(M.MODES, ", "))
    end
    if not member(M.TTI_STATS, parts[3]) then
      usage(expr, "unknown statistic '" .. parts[3] .. "' (valid: " .. table.concat(M.TTI_STATS, ", ") .. ")")
    end
  elseif kind == "ops" then
    if #parts ~= 3 or not member(op_names, parts[2]) then
      usage(expr, "ops metrics are ops.<operation>.<stat> with operation one of "
        .. table.concat(op_names, ", "))
    end
    if not member(M.OP_STATS, parts[3]) then
      usage(expr, "unknown statistic '" .. parts[3] .. "' (valid: " .. table.concat(M.OP_STATS, ", ") .. ")")
    end
  else
    usage(expr, "unknown metric '" .. metric .. "' (valid: success, tti.<mode>.<stat>, "
      .. "ops.<operation>.<stat>)")
  end
  return parts
end

---Parses one threshold expression.
---@param expr string e.g. "tti.sequential.p95<200"
---@param op_names string[] the operations a metric may name (abx.bench.ops.NAMES)
---@return table|nil threshold { expr, metric, parts, op, limit }
---@return string|nil error a usage error naming the input and the valid forms
function M.parse(expr, op_names)
  local ok, r = pcall(function()
    local metric, op, value, limit = M.split(expr)
    if not op then usage(expr, "no operator (write METRIC OP VALUE, OP one of " .. table.concat(OPS, " ") .. ")") end
    if not limit then
      usage(expr, "'" .. value .. "' is not a number (times are milliseconds, rates 0..1)")
    end
    return { expr = expr, metric = metric, parts = check_metric(expr, metric, op_names), op = op,
      limit = limit }
  end)
  if ok then return r end
  if type(r) == "table" and r.threshold_usage then return nil, r.threshold_usage end
  error(r, 0)
end

local COMPARE = {
  ["<"] = function(a, b) return a < b end, ["<="] = function(a, b) return a <= b end,
  [">"] = function(a, b) return a > b end, [">="] = function(a, b) return a >= b end,
  ["=="] = function(a, b) return a == b end, ["!="] = function(a, b) return a ~= b end,
}

---Whether `v OP limit` holds; false when v is nil (nothing measured).
---@param v number|nil
---@param op string one of M.OPERATORS
---@param limit number
---@return boolean
function M.holds(v, op, limit) return v ~= nil and COMPARE[op](v, limit) end

---The value a threshold's metric has in a bench result (abx.bench.run's), or nil.
---@param result table
---@param th table a parsed threshold
---@return number|nil
function M.value(result, th)
  local p = th.parts
  if p[1] == "success" then return result.success end
  local group = p[1] == "tti" and result.tti or result.ops
  local s = group and group[p[2]]
  return s and s[p[3]]
end

---Evaluates the thresholds on a result: each gets { expr, metric, op, limit, value, ok, source }.
---@param result table
---@param list table[] parsed thresholds (with `source`)
---@return table[] evaluated
---@return boolean all_ok
function M.evaluate(result, list)
  local out, all = {}, true
  for _, th in ipairs(list) do
    local v = M.value(result, th)
    local ok = M.holds(v, th.op, th.limit)
    all = all and ok
    out[#out + 1] = { expr = th.expr, metric = th.metric, op = th.op, limit = th.limit, value = v,
      ok = ok, source = th.source or "--threshold" }
  end
  return out, all
end

---The line of one evaluated threshold: "ok|CROSSED  EXPR (value V; from SOURCE)".
---@param e table an evaluated threshold
---@return string
function M.line(e)
  local v = e.value == nil and "no value: nothing of it was measured successfully"
    or ("value " .. string.format("%.6g", e.value))
  return string.format("%-8s %s (%s; from %s)", e.ok and "ok" or "CROSSED", e.expr, v, e.source)
end

return M
