-- abx.run.shard: --shard K/N, the part of a selection one CI job runs. The items of a selection
-- are its tests and the files that failed to collect (each one item named by its path); the
-- shards of one selection are disjoint and together make the whole, whatever the split:
--   by count (default): the items sorted by id are dealt round-robin; sizes differ by at most one;
--   by duration (--shard-durations FILE, a previous run's --json report, repeatable): longest
--     first, each item to the shard with the least recorded time so far (then the fewest items,
--     then the lowest K), so the shards take about the same time; an item the reports do not
--     know counts as their mean duration (1 s when they hold none).
-- Every shard computes the same split from the same selection and reports, so no job needs to
-- know another's.
local cjson = require("cjson")

local M = {}

---Parses "K/N". Returns k, n, or nil and a usage error.
function M.parse(text)
  local k, n = tostring(text):match("^%s*(%d+)%s*/%s*(%d+)%s*$")
  k, n = tonumber(k), tonumber(n)
  if not k or n < 1 or k < 1 or k > n then
    return nil, "--shard must be K/N with 1 <= K <= N (e.g. 2/3), got " .. tostring(text)
  end
  return k, n
end

---Reads the durations of previous --json reports (abx.run.report.json, format abxlua-report/1).
---@param paths string[]
---@return table|nil { [id] = seconds }
---@return string|nil usage error naming the option and the file
function M.load_durations(paths)
  local out = {}
  for _, path in ipairs(paths) do
    local f, err = io.open(path, "rb")
    if not f then return nil, "--shard-durations: cannot read " .. tostring(err) end
    local text = f:read("a")
    f:close()
    local ok, doc = pcall(cjson.decode, text)
    if not ok or type(doc) ~= "table" or doc.format ~= "abxlua-report/1" or type(doc.tests) ~= "table" then
      return nil, string.format("--shard-durations %s: not an abxlua --json report (format "
        .. "abxlua-report/1 with tests[])", path)
    end
    for i, t in ipairs(doc.tests) do
      if type(t) ~= "table" or type(t.id) ~= "string" or type(t.duration) ~= "number"
          or t.duration < 0 then
        return nil, string.format("--shard-durations %s: tests[%d] has no id and duration", path, i)
      end
      out[t.id] = t.duration
    end
  end
  return out
end

-- The shard (1..n) of each item: by count, or by duration when `durations` is given.
local function assign(items, n, durations)
  local of = {}
  if not durations then
    table.sort(items, function(a, b) return a.id < b.id end)
    for i, item in ipairs(items) do of[item] = (i - 1) % n + 1 end
    return of
  end
  local sum, known = 0, 0
  for _, d in pairs(durations) do sum, known = sum + d, known + 1 end
  local mean = known > 0 and sum / known or 1
  for _, item in ipairs(items) do item.cost = durations[item.id] or mean end
  table.sort(items, function(a, b)
    if a.cost ~= b.cost then return a.cost > b.cost end
    return a.id < b.id
  end)
  local load, count = {}, {}
  for k = 1, n do load[k], count[k] = 0, 0 end
  for _, item in ipairs(items) do
    local best = 1
    for k = 2, n do
      if load[k] < load[best] or (load[k] == load[best] and count[k] < count[best]) then best = k end
    end
    of[item] = best
    load[best], count[best] = load[best] + item.cost, count[best] + 1
  end
  return of
end

---Keeps shard k of n of `files` (after the selection), in place. A collection error is reported
---by its own shard only.
---@param files table[] collected files (abx.run.collect), tests already selected
---@param k integer
---@param n integer
---@param durations? table { [id] = seconds } (M.load_durations): split by duration
---@return integer items in the whole selection (tests and collection errors)
function M.apply(files, k, n, durations)
  local items = {}
  for _, f in ipairs(files) do
    if f.error then items[#items + 1] = { id = f.path, file = f } end
    for _, t in ipairs(f.tests) do items[#items + 1] = { id = t.id, test = t } end
  end
  local total = #items
  local of = assign(items, n, durations)
  local keep, keep_error = {}, {}
  for _, item in ipairs(items) do
    if of[item] == k then
      if item.test then keep[item.test] = true else keep_error[item.file] = true end
    end
  end
  for _, f in ipairs(files) do
    if f.error and not keep_error[f] then f.error = nil end
    local kept = {}
    for _, t in ipairs(f.tests) do
      if keep[t] then kept[#kept + 1] = t end
    end
    f.tests = kept
  end
  return total
end

---Adds --shard, --shard-strict and --shard-durations to an argparse command (run, list).
function M.add_options(cmd)
  cmd:option("--shard", "Run only part K of N of the selected tests (K/N, 1 <= K <= N): the "
    .. "shards of one selection are disjoint and together make the whole. An empty shard "
    .. "exits 0.")
  cmd:flag("--shard-strict", "An empty shard exits 5 (nothing collected) instead of 0.")
    :target("shard_strict")
  cmd:option("--shard-durations", "Balance the shards by the durations of a previous --json "
    .. "report FILE (repeatable: one per shard of that run) instead of by count.")
    :argname("FILE"):count("*"):target("shard_durations")
  return cmd
end

return M
