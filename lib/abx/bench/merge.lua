-- abx.bench.merge: the --json results of the segments of one benchmark (`abxlua bench --segment
-- K/N --json F` on N machines) joined into the result of the whole: every mode's and operation's
-- samples together, the statistics computed again from them (abx.bench.stats: the same numbers as
-- one machine taking every sample), a mode's wall time the longest segment's, and the thresholds
-- the segments were given evaluated on the whole (abx.bench.threshold).
-- Segments of one benchmark agree on provider, template, command, -n, --stagger-ms,
-- --iterations, the modes, the thresholds and N; each index 1..N appears once. Anything else is
-- an InvalidArgument naming the files (exit 4), as for the shards of a run (abx.run.merge).
local core = require("abx.core")
local json = require("abx.json")
local stats = require("abx.bench.stats")
local threshold = require("abx.bench.threshold")
local ops = require("abx.bench.ops")

local M = {}

-- The fields every segment of one benchmark has alike.
local SAME = { "provider", "flavor", "template", "command", "n", "stagger_ms", "iterations" }

local function refuse(fmt, ...)
  core.error("InvalidArgument", 0, string.format(fmt, ...))
end

local function same_list(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end

local function plain(v) if v == json.null then return nil end return v end

---Whether `doc` (a decoded --json file) is an `abxlua bench` result.
function M.is_bench(doc)
  return type(doc) == "table" and doc.kind == "abxlua-bench"
end

-- Checks that the documents are the segments of one benchmark; returns them by index.
local function check(docs, files, allow_partial)
  local first, by_index = docs[1], {}
  local total = first.segment and first.segment ~= json.null and first.segment.total
  if not total then refuse("%s is not a segment (abxlua bench --segment K/N)", files[1]) end
  for i, d in ipairs(docs) do
    local seg = plain(d.segment)
    if not seg then refuse("%s is not a segment (abxlua bench --segment K/N)", files[i]) end
    if seg.total ~= total then
      refuse("%s is segment %d/%d, %s of %d segments", files[i], seg.index, seg.total, files[1], total)
    end
    for _, k in ipairs(SAME) do
      if plain(d[k]) ~= plain(first[k]) then
        refuse("%s and %s are not segments of one benchmark: %s %s vs %s", files[1], files[i], k,
          tostring(plain(first[k])), tostring(plain(d[k])))
      end
    end
    if not same_list(d.modes, first.modes) or not same_list(d.threshold_exprs or {}, first.threshold_exprs or {}) then
      refuse("%s and %s are not segments of one benchmark: their modes or thresholds differ", files[1], files[i])
    end
    if by_index[seg.index] then
      refuse("segment %d/%d is given twice: %s and %s", seg.index, total, by_index[seg.index].file, files[i])
    end
    by_index[seg.index] = { doc = d, file = files[i] }
  end
  local missing = {}
  for k = 1, total do if not by_index[k] then missing[#missing + 1] = tostring(k) end end
  if #missing > 0 and not allow_partial then
    refuse("segments missing: %s of %d (--allow-partial merges anyway)", table.concat(missing, ", "), total)
  end
  return by_index, total, missing
end

-- The summary of the joined samples of one mode or operation across segments (nil: none has it).
local function join(parts, with_wall)
  local samples, wall, skipped = {}, 0, nil
  for _, s in ipairs(parts) do
    if s.skipped then skipped = s.skipped end
    for _, x in ipairs(s.samples or {}) do samples[#samples + 1] = x end
    wall = math.max(wall, s.wall or 0)
  end
  if #samples == 0 then return skipped and { skipped = skipped } or nil end
  local sum = stats.summary(samples)
  sum.samples, sum.errors = json.array(samples), json.array(sum.errors)
  if with_wall then sum.wall = wall else sum.score = nil end
  return sum
end

---Joins the segments' documents into one result (the shape abx.bench.output takes).
---@param docs table[] decoded --json documents
---@param files string[] their paths, for messages
---@param opts? {allow_partial?: boolean}
---@return table result, table[] evaluated thresholds, boolean held
---Raises: InvalidArgument naming the files
function M.run(docs, files, opts)
  local by_index, total, missing = check(docs, files, (opts or {}).allow_partial)
  local first = docs[1]
  local r = { provider = first.provider, flavor = plain(first.flavor), template = first.template,
    command = first.command, n = first.n, stagger_ms = first.stagger_ms,
    iterations = plain(first.iterations), modes = first.modes, op_names = ops.NAMES,
    run_id = first.run_id, started_at = first.started_at, tti = {},
    threshold_exprs = first.threshold_exprs or {} }
  local present = {}
  for k = 1, total do if by_index[k] then present[#present + 1] = by_index[k] end end
  local ok_n, all_n = 0, 0
  for _, mode in ipairs(r.modes) do
    local parts = {}
    for _, p in ipairs(present) do parts[#parts + 1] = (p.doc.tti or {})[mode] or {} end
    r.tti[mode] = join(parts, true) or stats.summary({})
    ok_n, all_n = ok_n + r.tti[mode].ok, all_n + r.tti[mode].count
  end
  r.success = all_n > 0 and ok_n / all_n or 0
  if r.iterations then
    r.ops = {}
    for _, name in ipairs(ops.NAMES) do
      local parts = {}
      for _, p in ipairs(present) do
        local o = plain(p.doc.ops)
        if o and o[name] then parts[#parts + 1] = o[name] end
      end
      r.ops[name] = join(parts, false) or { skipped = "not run in any segment" }
    end
  end
  local list = {}
  for _, e in ipairs(r.threshold_exprs) do
    local th, err = threshold.parse(e, ops.NAMES)
    if not th then refuse("%s: %s", files[1], err) end
    th.source = "--threshold (segments)"
    list[#list + 1] = th
  end
  local evaluated, held = threshold.evaluate(r, list)
  r.thresholds = json.array(evaluated)
  r.merged = { total = total, files = json.array(files), missing = json.array(missing) }
  return r, evaluated, held
end

return M
