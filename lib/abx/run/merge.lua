-- abx.run.merge: `abxlua merge-reports`: the JSON reports of the shards of one run
-- (`abxlua run --shard K/N --json F`, abx.run.report.json) read back and merged into the report
-- of one run, in the same shape (tests/reports/report.schema.json), so every writer can take it.
--
-- What may be merged (each refusal raises InvalidArgument naming the files and the fix):
--   every input is an abxlua report (format abxlua-report/1, not itself a merged report) carrying
--   selection.hash (written by an abxlua that has merge-reports);
--   one engine: the same engine_version and git_commit;
--   one run's selection: the same provider, -k, -m, --profile, paths and selection identity
--   (selection.hash and selection.items: the sorted item ids before --shard, abx.run.suite);
--   one N: every report is a shard K/N of the same N (a report without --shard is 1/1);
--   each K once; every K of 1..N present (or --allow-partial: the missing K are listed in
--   `merged.missing`);
--   the shards are disjoint and, when complete, hold the whole selection (shards balanced with
--   different --shard-durations files are not).
-- How (the merged report is one run):
--   counts, total, retries, cleanup (created, tracked, swept; errors and alive concatenated) are
--   sums; jobs is the sum
--   (the shards ran side by side); interrupted if any shard was; started_at the earliest,
--   finished_at the latest, duration the longest shard's (the wall time of shards run at once);
--   tests and collection_errors are concatenated (shards in K order) and sorted by file; within a
--   file, tests keep that order (a shard's own order is the collection's; so one report merged
--   alone keeps its order and its JUnit and TAP are the run's);
--   times counted from a shard's start (tests[].started, tests[].trace[].start,
--   sandboxes[].created / killed) are moved to the merged start (the shard's started_at minus the
--   earliest, in whole seconds as started_at has them); tests[].worker gets the shard's
--   worker_offset (the jobs of the shards before it), so workers stay distinct on one timeline;
--   run_id and endpoint (each shard has its own local platform) are the distinct values joined
--   by ", "; selection is the shards' with shard null; shard is null; merged lists the shards
--   (K, file, run_id, times, jobs, worker_offset), N and the missing K.
--   A top-level field this file does not know is kept when every shard has the same value, and
--   refused when they differ (so nothing is dropped or picked silently).
local core = require("abx.core")
local json = require("abx.json")

local M = {}

local NULL = json.null
local FORMAT = "abxlua-report/1"

local function refuse(fmt, ...)
  core.error("InvalidArgument", 0, string.format(fmt, ...))
end

local function val(v) if v == NULL then return nil end return v end

-- The top-level fields merged below; any other is kept only when equal in every shard.
local KNOWN = {
  format = true, run_id = true, provider = true, endpoint = true, engine_version = true,
  git_commit = true, started_at = true, finished_at = true, duration = true, selection = true,
  shard = true, merged = true, jobs = true, total = true, interrupted = true, skip_reason = true,
  counts = true, cleanup = true, collection_errors = true, tests = true, sandboxes = true,
  exit_code = true, retries = true,
}

---The report files named by `inputs`: each FILE as given, each DIR as its *.json files (not
---recursive), sorted.
---Raises: InvalidArgument for a path that does not exist or a directory without *.json files.
---@param inputs string[]
---@return string[]
function M.files(inputs)
  local out = {}
  for _, path in ipairs(inputs) do
    if core.isdir(path) then
      local names = core.readdir(path) or {}
      local n = 0
      for _, name in ipairs(names) do
        local full = path:gsub("/+$", "") .. "/" .. name
        if name:match("%.json$") and not core.isdir(full) then
          out[#out + 1] = full
          n = n + 1
        end
      end
      if n == 0 then refuse("%s: the directory holds no *.json report", path) end
    elseif core.exists(path) then
      out[#out + 1] = path
    else
      refuse("%s: no such file or directory", path)
    end
  end
  return out
end

---Reads one shard report.
---Raises: InvalidArgument naming the file when it cannot be read, is not an abxlua JSON report,
---is already a merged report, or predates selection.hash.
---@param path string
---@return table the decoded report (empty arrays kept: abx.json.decode_keep_arrays)
function M.load(path)
  local f, err = io.open(path, "rb")
  if not f then refuse("%s: cannot read: %s", path, tostring(err)) end
  local text = f:read("a")
  f:close()
  local doc, derr = json.decode_keep_arrays(text)
  if type(doc) ~= "table" or doc.format ~= FORMAT or type(doc.tests) ~= "table"
      or type(doc.counts) ~= "table" or type(doc.selection) ~= "table" then
    refuse("%s: not an abxlua report (the JSON of `abxlua run --json FILE`, format %s)%s", path,
      FORMAT, derr and (": " .. derr) or "")
  end
  if val(doc.merged) then
    refuse("%s: already a merged report; merge the reports of the shards themselves", path)
  end
  if type(doc.selection.hash) ~= "string" then
    refuse("%s: the report has no selection.hash (written by an older abxlua); run the shards "
      .. "again with this abxlua", path)
  end
  return doc
end

-- K and N of a report (a run without --shard is 1/1).
local function shard_of(doc)
  local s = val(doc.shard)
  if type(s) == "table" then return s.index, s.total end
  return 1, 1
end

-- The selection of a report in words, for the refusals.
local function selection_words(doc)
  local sel = doc.selection
  local parts = {}
  if val(sel.k) then parts[#parts + 1] = string.format("-k %q", sel.k) end
  if val(sel.m) then parts[#parts + 1] = string.format("-m %q", sel.m) end
  if val(sel.profile) then parts[#parts + 1] = "--profile " .. sel.profile end
  parts[#parts + 1] = table.concat(sel.paths or {}, " ")
  return string.format("provider %s, %s, %s items, hash %s", tostring(val(doc.provider)),
    table.concat(parts, " "), tostring(val(sel.items)), tostring(sel.hash):sub(1, 12))
end

local function same(a, b) return json.encode(a) == json.encode(b) end

-- Refuses inputs that are not the shards of one run.
local function check_one_run(docs, paths)
  local first = docs[1]
  for i = 2, #docs do
    local d = docs[i]
    if val(d.engine_version) ~= val(first.engine_version) or val(d.git_commit) ~= val(first.git_commit) then
      refuse("%s (abxlua %s, commit %s) and %s (abxlua %s, commit %s) come from different "
        .. "engine versions; run every shard with one build", paths[1],
        tostring(val(first.engine_version)), tostring(val(first.git_commit)), paths[i],
        tostring(val(d.engine_version)), tostring(val(d.git_commit)))
    end
    local s, f = d.selection, first.selection
    if val(d.provider) ~= val(first.provider) or val(s.k) ~= val(f.k) or val(s.m) ~= val(f.m)
        or val(s.profile) ~= val(f.profile) or not same(s.paths, f.paths) or s.hash ~= f.hash
        or val(s.items) ~= val(f.items) then
      refuse("%s and %s are not shards of one run: their selections differ (%s: %s; %s: %s); "
        .. "merge the reports of one `abxlua run ... --shard K/N` command", paths[1], paths[i],
        paths[1], selection_words(first), paths[i], selection_words(d))
    end
  end
end

-- Checks K/N of every input; returns N and the missing K (sorted).
local function check_shards(docs, paths, allow_partial)
  local _, n = shard_of(docs[1])
  local by_k = {}
  for i, d in ipairs(docs) do
    local k, dn = shard_of(d)
    if dn ~= n then
      refuse("%s is shard %d/%d but %s is shard %d/%d: shards of one run share N", paths[1],
        (shard_of(docs[1])), n, paths[i], k, dn)
    end
    if by_k[k] then refuse("shard %d/%d is given twice: %s and %s", k, n, by_k[k], paths[i]) end
    by_k[k] = paths[i]
  end
  local missing, have = json.array(), {}
  for k = 1, n do
    if by_k[k] then have[#have + 1] = string.format("%d/%d (%s)", k, n, by_k[k])
    else missing[#missing + 1] = k end
  end
  if #missing > 0 and not allow_partial then
    local ks = {}
    for _, k in ipairs(missing) do ks[#ks + 1] = k .. "/" .. n end
    refuse("shard%s %s missing (given: %s); give every shard's report, or --allow-partial to "
      .. "merge these", #missing > 1 and "s" or "", table.concat(ks, ", "), table.concat(have, ", "))
  end
  return n, missing
end

-- Refuses shards that overlap, or that (all given) do not hold the whole selection.
local function check_disjoint(docs, paths, complete)
  local seen, held = {}, 0
  for i, d in ipairs(docs) do
    for _, t in ipairs(d.tests) do
      if seen[t.id] then
        refuse("test %s is in %s and in %s: the shards were split differently (give every "
          .. "shard the same --shard-durations files, or none)", tostring(t.id), seen[t.id], paths[i])
      end
      seen[t.id] = paths[i]
    end
    held = held + (d.total or 0) + #(d.collection_errors or {})
  end
  local items = val(docs[1].selection.items)
  if complete and items and held ~= items then
    refuse("the shards hold %d of the selection's %d items: they were split differently (give "
      .. "every shard the same --shard-durations files, or none)", held, items)
  end
end

-- Seconds since the epoch of an ISO-8601 UTC time "YYYY-MM-DDTHH:MM:SSZ" (days from the civil
-- date, so no time zone is involved).
local function utc_seconds(iso)
  local y, mo, d, h, mi, s = tostring(iso):match("^(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)Z$")
  if not y then return 0 end
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  if mo <= 2 then y = y - 1 end
  local era = (y >= 0 and y or y - 399) // 400
  local yoe = y - era * 400
  local doy = (153 * (mo + (mo > 2 and -3 or 9)) + 2) // 5 + d - 1
  local doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
  local days = era * 146097 + doe - 719468
  return days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(s)
end
M.utc_seconds = utc_seconds

-- Moves a test entry's run-relative times by `offset` seconds and its worker by `workers`.
local function shift_test(t, offset, workers)
  if type(t.started) == "number" then t.started = t.started + offset end
  if math.type(t.worker) == "integer" then t.worker = t.worker + workers end
  if type(t.trace) == "table" then
    for _, x in ipairs(t.trace) do
      if type(x) == "table" and type(x.start) == "number" then x.start = x.start + offset end
    end
  end
end

local function shift_sandbox(s, offset)
  if type(s.created) == "number" then s.created = s.created + offset end
  if type(s.killed) == "number" then s.killed = s.killed + offset end
end

-- The distinct non-null values of `field`, joined by ", " (null when none).
local function joined(docs, field)
  local out, seen = {}, {}
  for _, d in ipairs(docs) do
    local v = val(d[field])
    if v ~= nil and not seen[v] then seen[v], out[#out + 1] = true, tostring(v) end
  end
  if #out == 0 then return NULL end
  return table.concat(out, ", ")
end

-- The run's exit code from the shards' (abxlua run's codes: abx.run.cli).
local function exit_code(docs)
  local codes = {}
  for _, d in ipairs(docs) do
    local c = val(d.exit_code)
    if math.type(c) == "integer" then codes[c] = true end
  end
  if next(codes) == nil then return NULL end
  for _, c in ipairs({ 2, 3, 4, 1, 0 }) do if codes[c] then return c end end
  return 5
end

local function merge_cleanup(docs)
  local out
  for _, d in ipairs(docs) do
    local c = val(d.cleanup)
    if type(c) == "table" then
      out = out or { created = 0, tracked = 0, swept = 0, errors = json.array(),
        alive = json.array() }
      out.created = out.created + (c.created or 0)
      out.tracked = out.tracked + (c.tracked or 0)
      out.swept = out.swept + (c.swept or 0)
      for _, e in ipairs(c.errors or {}) do out.errors[#out.errors + 1] = e end
      for _, id in ipairs(val(c.alive) or {}) do out.alive[#out.alive + 1] = id end
    end
  end
  return out or NULL
end

local function skip_reason(docs, paths)
  local first = val(docs[1].skip_reason)
  local all_same = true
  for _, d in ipairs(docs) do
    if val(d.skip_reason) ~= first then all_same = false end
  end
  if all_same then return first == nil and NULL or first end
  local parts = {}
  for i, d in ipairs(docs) do
    if val(d.skip_reason) then parts[#parts + 1] = paths[i] .. ": " .. d.skip_reason end
  end
  return table.concat(parts, "; ")
end

-- The fields merge-reports does not know: kept when equal in every shard, else refused.
local function unknown_fields(docs, paths, out)
  for key, v in pairs(docs[1]) do
    if not KNOWN[key] then
      for i = 2, #docs do
        if not same(docs[i][key], v) then
          refuse("%s and %s differ in the field %q, which this abxlua cannot merge (it merges: "
            .. "counts, tests, collection_errors, cleanup, sandboxes, times); merge them with the "
            .. "abxlua that wrote them", paths[1], paths[i], key)
        end
      end
      out[key] = v
    end
  end
  for i = 2, #docs do
    for key in pairs(docs[i]) do
      if not KNOWN[key] and docs[1][key] == nil then
        refuse("%s has the field %q and %s has not; merge reports of one abxlua", paths[i], key, paths[1])
      end
    end
  end
end

-- Sorts `tests` by file path, keeping the order they come in within a file (table.sort is not
-- stable: the position is the tie-break).
local function sort_by_file(tests)
  local pos = {}
  for i, t in ipairs(tests) do pos[t] = i end
  table.sort(tests, function(a, b)
    if a.file ~= b.file then return tostring(a.file) < tostring(b.file) end
    return pos[a] < pos[b]
  end)
end

---Checks that `docs` are the shards of one run and merges them (see the file's header).
---Raises: InvalidArgument naming the files for inputs that are not the shards of one run.
---@param docs table[] decoded reports (M.load)
---@param paths string[] their files, in the same order
---@param opts? { allow_partial: boolean }
---@return table the merged report (the JSON report's shape, for abx.run.report.json.encode)
function M.merge(docs, paths, opts)
  opts = opts or {}
  if #docs == 0 then refuse("no report to merge") end
  check_one_run(docs, paths)
  local n, missing = check_shards(docs, paths, opts.allow_partial)
  check_disjoint(docs, paths, #missing == 0)
  local order = {}
  for i = 1, #docs do order[i] = i end
  table.sort(order, function(a, b) return (shard_of(docs[a])) < (shard_of(docs[b])) end)
  local start, finish, longest = nil, nil, 0
  for _, d in ipairs(docs) do
    if not start or d.started_at < start then start = d.started_at end
    if not finish or d.finished_at > finish then finish = d.finished_at end
    longest = math.max(longest, d.duration or 0)
  end
  local out = {}
  unknown_fields(docs, paths, out)
  local counts, tests, ces, sandboxes = {}, json.array(), json.array(), nil
  local shards, jobs, workers, total, interrupted = json.array(), nil, 0, 0, false
  for _, i in ipairs(order) do
    local d = docs[i]
    local offset = utc_seconds(d.started_at) - utc_seconds(start)
    for key, c in pairs(d.counts) do counts[key] = (counts[key] or 0) + c end
    for _, t in ipairs(d.tests) do
      shift_test(t, offset, workers)
      tests[#tests + 1] = t
    end
    for _, ce in ipairs(d.collection_errors or {}) do ces[#ces + 1] = ce end
    if type(d.sandboxes) == "table" then
      sandboxes = sandboxes or json.array()
      for _, s in ipairs(d.sandboxes) do
        shift_sandbox(s, offset)
        sandboxes[#sandboxes + 1] = s
      end
    end
    shards[#shards + 1] = { index = (shard_of(d)), file = paths[i], run_id = d.run_id,
      started_at = d.started_at, finished_at = d.finished_at, duration = d.duration or 0,
      jobs = d.jobs, worker_offset = workers }
    if math.type(val(d.jobs)) == "integer" then
      jobs = (jobs or 0) + d.jobs
      workers = workers + d.jobs
    end
    total = total + (d.total or 0)
    interrupted = interrupted or d.interrupted == true
  end
  sort_by_file(tests)
  table.sort(ces, function(a, b) return tostring(a.path) < tostring(b.path) end)
  local sel = {}
  for k, v in pairs(docs[1].selection) do sel[k] = v end
  sel.shard = NULL
  out.format, out.run_id, out.provider = FORMAT, joined(docs, "run_id"), docs[1].provider
  out.endpoint, out.engine_version = joined(docs, "endpoint"), docs[1].engine_version
  out.git_commit, out.started_at, out.finished_at = docs[1].git_commit, start, finish
  out.duration, out.selection, out.shard = longest, sel, NULL
  out.merged = { total = n, missing = missing, shards = shards }
  out.jobs, out.total, out.interrupted = jobs or NULL, total, interrupted
  out.skip_reason, out.counts, out.cleanup = skip_reason(docs, paths), counts, merge_cleanup(docs)
  local retries = 0
  for _, d in ipairs(docs) do retries = retries + (math.tointeger(val(d.retries)) or 0) end
  out.retries = retries
  out.collection_errors, out.tests = ces, tests
  out.sandboxes = sandboxes
  if docs[1].exit_code ~= nil then out.exit_code = exit_code(docs) end
  return out
end

---Reads and merges the reports named by `inputs` (FILEs and DIRs, M.files).
---Raises: InvalidArgument as M.files, M.load and M.merge do.
---@param inputs string[]
---@param opts? { allow_partial: boolean }
---@return table merged report, string[] the files read
function M.run(inputs, opts)
  local paths = M.files(inputs)
  local docs = {}
  for i, p in ipairs(paths) do docs[i] = M.load(p) end
  return M.merge(docs, paths, opts), paths
end

return M
