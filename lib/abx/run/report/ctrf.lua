-- abx.run.report.ctrf: `--ctrf FILE` (abxlua run, abxlua merge-reports), the run as CTRF JSON, the
-- Common Test Report Format many CI dashboards read (https://ctrf.io; the schema
-- tests/reports/ctrf.schema.json follows https://github.com/ctrf-io/ctrf schema/ctrf.schema.json):
--   { reportFormat = "CTRF", specVersion = "0.0.0", generatedBy = "abxlua",
--     results = { tool = { name = "abxlua", version },
--       summary = { tests, passed, failed, skipped, pending, other, flaky, suites, start, stop,
--                   duration },                                   (times in ms since the epoch)
--       tests = [{ name = node id, status, rawStatus = abxlua's outcome, duration (ms), start,
--                  stop, message, trace, filePath, line, suite = [file], tags = markers,
--                  retries, flaky, retryAttempts, stdout, threadId = worker, extra }],
--       environment = { appName = provider, commit, testEnvironment = endpoint },
--       extra = { run_id, selection, shard, merged, jobs, interrupted, skip_reason, cleanup } } }
-- Input: the JSON report's table (abx.run.report.json.document, or a decoded and merged one:
-- abx.run.merge), so a run and a merge write the same CTRF.
-- Status mapping (CTRF has passed, failed, skipped, pending, other):
--   passed -> passed; failed -> failed; skipped -> skipped;
--   xpassed -> failed: a strict XPASS fails the run, and the console and JUnit count it failed;
--   xfailed -> other, with rawStatus "xfailed" and extra.known_issue: the test ran and failed the
--     way its known issue says, so it is neither a pass nor a failure of the run, and it did run,
--     which "skipped" (CTRF: not executed) would deny; "other" is CTRF's status for outcomes
--     outside the four, and rawStatus keeps ours;
--   a test with a teardown error -> failed (the run fails: counts.errors), rawStatus keeps its
--     outcome and extra.teardown_errors the errors;
--   a file that failed to collect -> a test named after the file, failed, rawStatus "error".
-- `specVersion` 0.0.0: the version CTRF's root object documents
-- (ctrf-io/ctrf:docs/specification/root.md). Every string was masked by the JSON report's
-- writer; the file is masked whole once more when written.
local common = require("abx.run.report.common")
local json = require("abx.json")

local M = {}

local NULL = json.null
local array = json.array

local function val(v) if v == NULL then return nil end return v end

local function ms(seconds) return math.floor((seconds or 0) * 1000 + 0.5) end

local STATUS = { passed = "passed", failed = "failed", skipped = "skipped", xpassed = "failed",
  xfailed = "other" }

-- Output text as CTRF's list of lines (nil when there is none).
local function lines(text)
  if type(text) ~= "string" or text == "" then return nil end
  local out = array()
  for line in (text:gsub("\n$", "") .. "\n"):gmatch("([^\n]*)\n") do out[#out + 1] = line end
  return out
end

local function attempts(t, status)
  local out = array()
  for i, a in ipairs(val(t.reruns) or {}) do
    local e = val(a.error) or {}
    out[i] = { attempt = i, status = "failed", duration = ms(a.duration),
      message = e.message, trace = val(e.traceback) }
  end
  if #out == 0 then return nil end
  out[#out + 1] = { attempt = #out + 1, status = status }
  return out
end

local function extra_of(t)
  local e = {}
  e.known_issue, e.raises, e.reason = val(t.known_issue), val(t.raises), val(t.reason)
  local err = val(t.error)
  if type(err) == "table" then e.error_kind, e.http_status = err.kind, val(err.status) end
  if #(val(t.teardown_errors) or {}) > 0 then e.teardown_errors = t.teardown_errors end
  if #(val(t.sandboxes) or {}) > 0 then e.sandboxes = t.sandboxes end
  e.reproducer = val(t.reproducer)
  local th, measured = common.threshold_lines(t) -- abx.run.measure
  if #th > 0 then e.thresholds = th end
  if #measured > 0 then e.measurements = measured end
  if next(e) == nil then return nil end
  return e
end

-- One CTRF test of a JSON test entry; `start` is the run's start in ms since the epoch.
local function test(t, start)
  local td = #(val(t.teardown_errors) or {}) > 0
  local status = STATUS[t.outcome] or "other"
  if td then status = "failed" end
  local err = val(t.error)
  local message = type(err) == "table" and err.message or nil
  if t.outcome == "xpassed" then message = val(t.reason) end
  if not message and td then message = "teardown (" .. t.teardown_errors[1].phase .. "): "
      .. t.teardown_errors[1].message end
  local reruns = #(val(t.reruns) or {})
  local out = {
    name = t.id, status = status, rawStatus = t.outcome, duration = ms(t.duration),
    message = message, trace = type(err) == "table" and val(err.traceback) or nil,
    filePath = t.file, line = val(t.line), suite = array({ t.file }), tags = array(),
    retries = reruns, flaky = reruns > 0 and t.outcome == "passed",
    retryAttempts = attempts(t, status), stdout = lines(val(t.output)),
    threadId = math.type(val(t.worker)) == "integer" and tostring(t.worker) or nil,
    extra = extra_of(t),
  }
  for _, m in ipairs(val(t.markers) or {}) do out.tags[#out.tags + 1] = m end
  if type(val(t.started)) == "number" then
    out.start = start + ms(t.started)
    out.stop = out.start + out.duration
  end
  return out
end

---The CTRF document (a table for abx.json.encode) of a JSON report's table.
---@param doc table the JSON report (abx.run.report.json.document or a decoded, merged one)
---@return table
function M.document(doc)
  local start = require("abx.run.merge").utc_seconds(doc.started_at) * 1000
  local tests = array()
  local summary = { tests = 0, passed = 0, failed = 0, skipped = 0, pending = 0, other = 0,
    flaky = 0 }
  local suites = {}
  for _, ce in ipairs(val(doc.collection_errors) or {}) do
    tests[#tests + 1] = { name = ce.path, status = "failed", rawStatus = "error", duration = 0,
      message = common.first_line(ce.error), trace = ce.error, filePath = ce.path,
      suite = array({ ce.path }), extra = { collection_error = true } }
  end
  for _, t in ipairs(doc.tests or {}) do tests[#tests + 1] = test(t, start) end
  for _, t in ipairs(tests) do
    summary.tests = summary.tests + 1
    summary[t.status] = summary[t.status] + 1
    if t.flaky then summary.flaky = summary.flaky + 1 end
    suites[t.filePath] = true
  end
  for _ in pairs(suites) do summary.suites = (summary.suites or 0) + 1 end
  summary.suites = summary.suites or 0
  summary.start = start
  summary.duration = ms(doc.duration)
  summary.stop = math.max(start + summary.duration,
    require("abx.run.merge").utc_seconds(doc.finished_at) * 1000)
  local env = { appName = val(doc.provider), commit = val(doc.git_commit),
    testEnvironment = val(doc.endpoint) }
  local extra = { run_id = val(doc.run_id), selection = doc.selection, shard = val(doc.shard),
    merged = val(doc.merged), jobs = val(doc.jobs), interrupted = doc.interrupted == true,
    skip_reason = val(doc.skip_reason), cleanup = val(doc.cleanup) }
  return {
    reportFormat = "CTRF", specVersion = "0.0.0", generatedBy = "abxlua",
    results = { tool = { name = "abxlua", version = val(doc.engine_version) }, summary = summary,
      tests = tests, environment = next(env) and env or nil, extra = extra },
  }
end

---Writes the CTRF report of a JSON report's table to `path`.
---Raises: InvalidArgument when the file cannot be written.
---@param path string
---@param doc table the JSON report (abx.run.report.json.document or a merged one)
function M.write(path, doc)
  common.write_file("CTRF report", path,
    json.encode(M.document(doc), { clean = common.utf8_clean }) .. "\n")
end

return M
