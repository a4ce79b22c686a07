-- abx.run.report.json: `--json FILE`, the run record as JSON (tests/reports/report.schema.json):
-- { format = "abxlua-report/1", run_id, provider, endpoint, engine_version, git_commit,
--   started_at, finished_at (ISO-8601 UTC), duration (s), selection {k, m, profile, paths, shard,
--   hash, items}, shard {index, total} | null, merged {...} | null (abx.run.merge), jobs, total,
--   interrupted, skip_reason, counts {passed, failed, skipped, xfailed, xpassed,
--   errors}, retries, cleanup {created, tracked, swept, errors[], alive[]} | null,
--   collection_errors [{path, error}],
--   tests [{id, file, name, line, markers[], known_issue, raises, outcome, duration, reason,
--           error {kind, status, message, traceback} | null, teardown_errors [{phase, message}],
--           sandboxes[], reruns [{duration, error, teardown_errors}], output, started, worker,
--           trace [exchange] | null, trace_dropped, reproducer, measurements [{name, count, ok,
--           failed, rate, min, med, avg, max, p90, p95, p99, wall_s, errors, samples}] | null,
--           thresholds [{measurement, expr, value, ok, source}] | null}],
--   sandboxes [{id, template, test, created, killed}] }
-- output: the captured stdout then stderr (abx.run.capture, bounded as JUnit's system-out);
-- started: s since the run's start; worker: the -j slot 1..jobs; trace: the test's HTTP exchanges
-- (abx.run.trace, --trace; trace_dropped: those left out between the first and the last kept);
-- reproducer: the curl line of the exchange its error came from (abx.run.reproducer). The top
-- level's sandboxes: every sandbox the tests made, its test and life (s since the run's start).
-- `reruns` (--reruns N): the earlier attempts of a flaky test that failed, oldest first; the
-- test's own fields are its last attempt's (duration: of every attempt); counts.rerun sums them.
-- `failed` counts xpassed tests too (an XPASS fails the run), as on the console.
-- `retries`: the requests the run's client sent again (a gateway's bare 502/503/504, a 429, a
-- transport failure; abx.client.api_call). cleanup.alive: the sandboxes the list by tag still
-- showed after the cleanup's kills (each also counted in cleanup.errors: the run failed).
-- selection.hash / selection.items: the identity of the selection before --shard (sha256 hex of
-- its sorted item ids, and their number: abx.run.suite), the same in every shard of one run;
-- `shard`: this run's --shard K/N as numbers, null without --shard; `merged`: null in a run's own
-- report, set by `abxlua merge-reports` (abx.run.merge).
local cjson = require("cjson")
local common = require("abx.run.report.common")
local capture = require("abx.run.capture")

local M = {}

local NULL = cjson.null
local mask = common.mask

-- Encoding is abx.json's (empty arrays stay `[]`, objects have sorted keys, so reports diff
-- well); every string is made valid UTF-8 first (common.utf8_clean), since test output is bytes.
local json = require("abx.json")
local array = json.array
local ENCODE_OPTS = { clean = common.utf8_clean }

local function opt(v) if v == nil then return NULL end return v end

---Marks a table as a JSON array for M.encode (an empty one stays `[]`). Returns it.
M.array = array

---JSON text of a value as the reports encode it: objects with sorted keys, tables marked with
---M.array as arrays, strings made valid UTF-8. Raises: nothing.
---@param v any
---@return string
function M.encode(v)
  return json.encode(v, ENCODE_OPTS)
end

local function body_doc(b)
  if not b then return NULL end
  return { length = b.length or 0, text = opt(b.text and mask(b.text)), sha256 = opt(b.sha256),
    truncated = b.truncated and true or false }
end

local function headers_doc(h)
  local out = {}
  for k, v in pairs(h or {}) do out[mask(k)] = mask(v) end
  return out
end

-- One exchange of abx.run.trace as the schema has it (times relative to the run's start).
local function exchange_doc(e)
  local resp = NULL
  if e.response then
    resp = { headers = headers_doc(e.response.headers), body = body_doc(e.response.body) }
  end
  return { start = e.start or 0, duration = e.duration or 0, method = mask(e.method),
    url = mask(e.url), sandbox = opt(mask(e.sandbox)), attempt = e.attempt or 1,
    request = { headers = headers_doc(e.request and e.request.headers),
      body = body_doc(e.request and e.request.body) },
    status = opt(e.status), response = resp, error = opt(mask(e.error)) }
end

---The JSON list of a result's trace, or null (abx.run.trace left it out).
---@param r table a result of abx.run.runner
function M.trace_doc(r)
  if not r.trace then return NULL end
  local list = array()
  for _, e in ipairs(r.trace) do list[#list + 1] = exchange_doc(e) end
  return list
end

-- The captured output of a result: stdout, then stderr (masked), or null.
local function output_doc(r)
  local out, err = capture.text(r.captured, "stdout"), capture.text(r.captured, "stderr")
  if not out and not err then return NULL end
  return mask((out or "") .. (err or ""))
end


-- t.measure's statistics of a test (abx.run.measure), or null.
local function measurements_doc(r)
  if not r.measurements then return NULL end
  local out = array()
  for _, m in ipairs(r.measurements) do
    local samples, errors = array(), array()
    for i, v in ipairs(m.samples) do samples[i] = v end
    for i, e in ipairs(m.errors or {}) do errors[i] = { error = mask(e.error), count = e.count } end
    out[#out + 1] = { name = mask(m.name), count = m.count, ok = m.ok, failed = m.failed,
      rate = m.rate, min = opt(m.min), med = opt(m.med), avg = opt(m.avg), max = opt(m.max),
      p90 = opt(m.p90), p95 = opt(m.p95), p99 = opt(m.p99), wall_s = m.wall_s, errors = errors,
      samples = samples }
  end
  return out
end

-- The test's thresholds as evaluated, or null.
local function thresholds_doc(r)
  if not r.thresholds then return NULL end
  local out = array()
  for _, e in ipairs(r.thresholds) do
    out[#out + 1] = { measurement = mask(e.measurement), expr = mask(e.expr), value = opt(e.value),
      ok = e.ok, source = mask(e.source) }
  end
  return out
end

local function test_entry(r, origin)
  local t = r.test
  local markers = array()
  for _, m in ipairs(t.markers or {}) do markers[#markers + 1] = mask(m) end
  local f = common.failure(r)
  local tds = array()
  for _, e in ipairs(r.teardown_errors or {}) do
    tds[#tds + 1] = { phase = mask(e.phase), message = mask(e.message) }
  end
  local sbx = array()
  for _, id in ipairs(r.sandboxes or {}) do sbx[#sbx + 1] = mask(id) end
  local reruns = array()
  for _, a in ipairs(r.reruns or {}) do
    local af = common.failure(a) or { kind = "Error", message = "?" }
    local atds = array()
    for _, e in ipairs(a.teardown_errors or {}) do
      atds[#atds + 1] = { phase = mask(e.phase), message = mask(e.message) }
    end
    reruns[#reruns + 1] = { duration = a.duration or 0, teardown_errors = atds,
      error = { kind = af.kind, status = opt(af.status), message = af.message,
        traceback = opt(af.traceback) } }
  end
  return {
    id = mask(t.id), file = mask(t.file), name = mask(t.name), line = opt(t.line),
    markers = markers, known_issue = opt(mask(t.opts and t.opts.known_issue)),
    raises = opt(mask(t.opts and t.opts.raises)), outcome = r.outcome,
    duration = r.duration or 0, reason = opt(mask(r.reason)),
    error = f and { kind = f.kind, status = opt(f.status), message = f.message,
      traceback = opt(f.traceback) } or NULL,
    teardown_errors = tds, sandboxes = sbx, reruns = reruns,
    output = output_doc(r), started = math.max(0, (r.run_started or r.started or origin) - origin),
    worker = opt(r.worker), trace = M.trace_doc(r), trace_dropped = r.trace_dropped or 0,
    reproducer = opt(mask(r.reproducer)),
    measurements = measurements_doc(r), thresholds = thresholds_doc(r),
  }
end

-- {index = K, total = N} of a selection's shard "K/N" (abx.run.suite), or null.
local function shard_of(sel)
  local k, n = tostring(sel.shard or ""):match("^(%d+)/(%d+)$")
  if not k then return NULL end
  return { index = math.tointeger(tonumber(k)), total = math.tointeger(tonumber(n)) }
end

-- The top level's sandboxes: the tracker's timeline (abx.run.tracker), times relative to origin.
local function sandboxes_doc(record, origin)
  local list = array()
  for _, l in ipairs(record.timeline or {}) do
    list[#list + 1] = { id = mask(l.id), template = opt(mask(l.template)), test = opt(mask(l.test)),
      created = l.created - origin, killed = l.killed and (l.killed - origin) or NULL }
  end
  return list
end

---The JSON document (a Lua table for M.encode) of a run record.
function M.document(record)
  local sel = record.selection or {}
  local paths = array()
  for _, p in ipairs(sel.paths or {}) do paths[#paths + 1] = mask(p) end
  local tests = array()
  local origin = record.origin or 0
  for _, r in ipairs(record.results or {}) do tests[#tests + 1] = test_entry(r, origin) end
  local ces = array()
  for _, ce in ipairs(record.collection_errors or {}) do
    ces[#ces + 1] = { path = mask(ce.path), error = mask(ce.error) }
  end
  local c = record.counts or {}
  local cleanup = NULL
  if record.cleanup then
    local errs = array()
    for _, e in ipairs(record.cleanup.errors or {}) do errs[#errs + 1] = mask(e) end
    local alive = array()
    for _, id in ipairs(record.cleanup.alive or {}) do alive[#alive + 1] = mask(id) end
    cleanup = { created = record.cleanup.created or 0, tracked = record.cleanup.tracked or 0,
      swept = record.cleanup.swept or 0, errors = errs, alive = alive }
  end
  return {
    format = "abxlua-report/1",
    run_id = opt(mask(record.run_id)), provider = opt(mask(record.provider)),
    endpoint = opt(mask(record.endpoint)), engine_version = opt(mask(record.engine_version)),
    git_commit = opt(mask(record.git_commit)),
    started_at = common.iso_utc(record.started_at), finished_at = common.iso_utc(record.finished_at),
    duration = record.duration or 0,
    selection = { k = opt(mask(sel.k)), m = opt(mask(sel.m)), profile = opt(mask(sel.profile)),
      shard = opt(sel.shard), paths = paths, hash = opt(sel.hash), items = opt(sel.items) },
    shard = shard_of(sel), merged = NULL,
    jobs = opt(record.jobs), total = record.total or #tests,
    interrupted = record.interrupted and true or false, skip_reason = opt(mask(record.skip_reason)),
    counts = { passed = c.passed or 0, failed = c.failed or 0, skipped = c.skipped or 0,
      xfailed = c.xfailed or 0, xpassed = c.xpassed or 0, errors = c.errors or 0,
      rerun = c.rerun or 0 },
    retries = record.retries or 0,
    cleanup = cleanup, collection_errors = ces, tests = tests,
    sandboxes = sandboxes_doc(record, origin),
  }
end

---Writes the JSON report of `record` to `path`.
---Raises: InvalidArgument when the file cannot be written.
function M.write(path, record)
  common.write_file("JSON report", path, M.encode(M.document(record)) .. "\n")
end

return M
