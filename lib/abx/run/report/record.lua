-- abx.run.report.record: a run record (the table abx.run.runner returns, which the JUnit, TAP and
-- evidence writers read) rebuilt from a JSON report's table (abx.run.report.json.document, or the
-- decoded JSON of tests/reports/report.schema.json, e.g. a merged one: abx.run.merge), so that
-- `abxlua merge-reports` writes those formats with the writers `abxlua run` uses.
-- What the JSON does not hold is absent from the record: a test's captured stderr (the JSON's
-- `output` becomes the captured stdout), the host name (the writers take this machine's).
-- Timestamps: started_at / finished_at back to seconds since the epoch (whole seconds, as the
-- JSON has them).
local json = require("abx.json")

local M = {}

local NULL = json.null

local function val(v) if v == NULL then return nil end return v end

-- Seconds since the epoch of "YYYY-MM-DDTHH:MM:SSZ" (abx.run.merge.utc_seconds).
local function epoch(iso)
  return require("abx.run.merge").utc_seconds(iso)
end

-- The failure of the runner's result shape from a JSON error {kind, status, message, traceback}.
local function failure(e)
  e = val(e)
  if type(e) ~= "table" then return nil end
  return { kind = e.kind, message = e.message, traceback = val(e.traceback),
    error = { status = val(e.status) } }
end

local function list(t)
  local out = {}
  for i, v in ipairs(val(t) or {}) do out[i] = v end
  return out
end

local function teardown_errors(t)
  local out = list(t)
  if #out == 0 then return nil end
  return out
end

local function result(t)
  local reruns = {}
  for i, a in ipairs(val(t.reruns) or {}) do
    reruns[i] = { failure = failure(a.error), duration = a.duration,
      teardown_errors = teardown_errors(a.teardown_errors) }
  end
  local output = val(t.output)
  return {
    test = { id = t.id, file = t.file, name = t.name, line = val(t.line), markers = list(t.markers),
      opts = { known_issue = val(t.known_issue), raises = val(t.raises) } },
    outcome = t.outcome, duration = t.duration, reason = val(t.reason),
    failure = failure(t.error), teardown_errors = teardown_errors(t.teardown_errors),
    sandboxes = list(t.sandboxes), reruns = #reruns > 0 and reruns or nil,
    thresholds = val(t.thresholds), measurements = val(t.measurements),
    captured = type(output) == "string" and output ~= "" and
      { stdout = output, stderr = "", dropped_stdout = 0, dropped_stderr = 0 } or nil,
  }
end

---The run record of a JSON report's table.
---@param doc table a report (format abxlua-report/1), decoded or as abx.run.report.json builds it
---@return table record { run_id, provider, endpoint, engine_version, git_commit, started_at,
---  finished_at, duration, selection, jobs, total, interrupted, skip_reason, counts, retries, cleanup,
---  collection_errors, results }
function M.from_document(doc)
  local sel = val(doc.selection) or {}
  local results = {}
  for i, t in ipairs(doc.tests or {}) do results[i] = result(t) end
  local cleanup = val(doc.cleanup)
  return {
    run_id = val(doc.run_id), provider = val(doc.provider), endpoint = val(doc.endpoint),
    engine_version = val(doc.engine_version), git_commit = val(doc.git_commit),
    started_at = epoch(doc.started_at), finished_at = epoch(doc.finished_at),
    duration = doc.duration, jobs = val(doc.jobs), total = doc.total,
    selection = { k = val(sel.k), m = val(sel.m), profile = val(sel.profile),
      shard = val(sel.shard), paths = list(sel.paths) },
    interrupted = doc.interrupted == true, skip_reason = val(doc.skip_reason),
    counts = val(doc.counts) or {},
    cleanup = type(cleanup) == "table" and { created = cleanup.created, tracked = cleanup.tracked,
      swept = cleanup.swept, errors = list(cleanup.errors), alive = list(cleanup.alive) } or nil,
    retries = math.tointeger(doc.retries) or 0,
    collection_errors = list(doc.collection_errors), results = results,
  }
end

return M
