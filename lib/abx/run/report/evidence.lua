-- abx.run.report.evidence: `--evidence DIR`, a verification record in Markdown, written to
-- DIR/<YYYY-MM-DD>-<topic>.md (topic from --evidence-topic, default e2e-run), modelled on the
-- hand-written records of the suite abxlua replaces: a header (date, result, engine, environment),
-- then the sections "What was verified", "Command run", "Results", "Known issues hit",
-- "Skipped", "Failures", "Cleanup", "Not verified". Secrets are masked; the endpoint is shown
-- masked, credentials never.
local common = require("abx.run.report.common")

local M = {}

local mask = common.mask

-- Markdown table cells: no pipes or newlines.
local function cell(s) return (mask(s):gsub("|", "\\|"):gsub("[\r\n]+", " ")) end

local function duration_text(s)
  s = s or 0
  if s < 60 then return string.format("%.2f s", s) end
  return string.format("%d min %d s", math.floor(s / 60), math.floor(s % 60))
end

---The verdict: PASSED, FAILED, INTERRUPTED, SKIPPED (nothing ran) or NOTHING COLLECTED.
function M.verdict(record)
  local c = record.counts or {}
  if record.interrupted then return "INTERRUPTED" end
  if (c.failed or 0) > 0 or (c.errors or 0) > 0
      or (record.cleanup and #(record.cleanup.errors or {}) > 0) then
    return "FAILED"
  end
  if #(record.results or {}) == 0 then return "NOTHING COLLECTED" end
  if (c.skipped or 0) == #record.results then return "SKIPPED" end
  return "PASSED"
end

local function counts_text(c)
  local s = string.format("%d passed, %d failed, %d skipped, %d xfailed", c.passed or 0,
    c.failed or 0, c.skipped or 0, c.xfailed or 0)
  if (c.xpassed or 0) > 0 then s = s .. string.format(" (%d of the failures XPASS(strict))", c.xpassed) end
  if (c.errors or 0) > 0 then s = s .. string.format(", %d errors", c.errors) end
  return s
end

-- The sections: each adds its lines to `add` (a line, "" when nil) from the record.

-- The header (date, result, engine, provider, host) and "What was verified".
local function header_section(add, record, opts, c)
  add("# Verification: " .. mask(opts.topic or "e2e-run"))
  add()
  add("Date: " .. os.date("!%Y-%m-%d %H:%M:%S UTC", math.floor(record.started_at or 0)))
  add("Result: " .. M.verdict(record) .. " (" .. counts_text(c) .. ")")
  if record.interrupted then
    add("The run was interrupted (SIGINT/SIGTERM): tests that had not started are not in this record.")
  end
  add("Engine: abxlua " .. mask(record.engine_version or "?") .. " at commit "
    .. mask(record.git_commit or "?"))
  add("Provider: " .. mask(record.provider or "?") .. ", endpoint " .. mask(record.endpoint or "none")
    .. " (credentials not recorded)")
  add("Run id: " .. mask(record.run_id or "?") .. " (sandboxes carry metadata e2e=<run id>)")
  add("Host: " .. mask(common.hostname()))
  add()
  add("## What was verified")
  add()
  add(string.format("%d tests selected by %s, run %s at a time.", record.total or 0,
    common.selection_text(record.selection), tostring(record.jobs or 1)))
  if record.skip_reason then add("Every test was skipped: " .. mask(record.skip_reason) .. ".") end
  add()
end

-- "Command run" and "Results" (the run's counts, then one row per test).
local function results_section(add, record, opts, c)
  add("## Command run")
  add()
  add("```")
  add(mask(opts.command or "abxlua run"))
  add("```")
  add()
  add("## Results")
  add()
  add("| Selection | Result | Duration |")
  add("|---|---|---|")
  add(string.format("| %s | %s | %s |", cell(common.selection_text(record.selection)),
    cell(counts_text(c)), duration_text(record.duration)))
  add()
  add("| Test | Outcome | Duration |")
  add("|---|---|---|")
  for _, r in ipairs(record.results or {}) do
    add(string.format("| `%s` | %s | %s |", cell(r.test.id), r.outcome, duration_text(r.duration)))
  end
  add()
end

-- "Known issues hit" and "Skipped".
local function known_issues_skipped_section(add, record)
  add("## Known issues hit")
  add()
  local any = false
  for _, r in ipairs(record.results or {}) do
    if r.outcome == "xfailed" or r.outcome == "xpassed" then
      any = true
      add(string.format("- `%s`: %s: %s", cell(r.test.id), r.outcome == "xfailed" and "xfailed"
        or "XPASS(strict), the run fails", cell(r.reason or r.test.opts.known_issue or "?")))
    end
  end
  if not any then add("None.") end
  add()
  add("## Skipped")
  add()
  any = false
  for _, r in ipairs(record.results or {}) do
    if r.outcome == "skipped" then
      any = true
      add(string.format("- `%s`: %s", cell(r.test.id), cell(r.reason or "skipped")))
    end
  end
  if not any then add("Nothing was skipped.") end
  add()
end

-- "Failures": collection errors, failed tests (with their reproducer), teardown errors.
local function failures_section(add, record)
  add("## Failures")
  add()
  local any = false
  for _, ce in ipairs(record.collection_errors or {}) do
    any = true
    add(string.format("- `%s` (collection error): %s", cell(ce.path), cell(ce.error)))
  end
  for _, r in ipairs(record.results or {}) do
    local f = common.failure(r)
    if r.outcome == "failed" and f then
      any = true
      add(string.format("- `%s` (line %s): %s", cell(r.test.id), tostring(r.test.line or "?"),
        cell(common.failure_line(f))))
      -- the HTTP exchange the error came from, replayable (--trace, abx.run.reproducer)
      if r.reproducer then
        add("  reproduce: `` " .. (mask(r.reproducer):gsub("[\r\n]+", " ")) .. " ``")
      end
    end
    for _, e in ipairs(r.teardown_errors or {}) do
      any = true
      add(string.format("- `%s` (teardown error, %s): %s", cell(r.test.id), cell(e.phase),
        cell(common.first_line(e.message))))
    end
  end
  if not any then add("None.") end
  add()
end

-- "Cleanup" and "Not verified" (tests that did not start or were skipped).
local function cleanup_section(add, record)
  add("## Cleanup")
  add()
  local cl = record.cleanup
  if cl then
    add(string.format("%d sandboxes created; %d killed at the end (tracked); %d found by tag "
      .. "e2e=%s and killed.", cl.created or 0, cl.tracked or 0, cl.swept or 0, mask(record.run_id or "?")))
    if #(cl.errors or {}) == 0 then
      add("No cleanup error.")
    else
      for _, e in ipairs(cl.errors) do add("- cleanup error: " .. cell(e)) end
    end
  else
    add("No cleanup ran (no sandbox could have been created).")
  end
  add()
  add("## Not verified")
  add()
  local nv = {}
  local ran = #(record.results or {})
  if (record.total or 0) > ran then
    nv[#nv + 1] = string.format("- %d of %d selected tests did not start%s.", record.total - ran,
      record.total, record.interrupted and " (interrupted)" or " (stopped after the first failure)")
  end
  for _, r in ipairs(record.results or {}) do
    if r.outcome == "skipped" then nv[#nv + 1] = "- `" .. cell(r.test.id) .. "` (skipped, see above)." end
  end
  if #nv == 0 then add("Everything selected ran.") else for _, l in ipairs(nv) do add(l) end end
end

---Renders the record as Markdown.
---@param record table the run record (abx.run.runner)
---@param opts table|nil { topic, command }
function M.render(record, opts)
  opts = opts or {}
  local c = record.counts or {}
  local out = {}
  local function add(s) out[#out + 1] = s or "" end
  header_section(add, record, opts, c)
  results_section(add, record, opts, c)
  known_issues_skipped_section(add, record)
  failures_section(add, record)
  cleanup_section(add, record)
  return table.concat(out, "\n") .. "\n"
end

---The file name of the record: <YYYY-MM-DD>-<topic>.md (the run's start date, UTC).
function M.file_name(record, topic)
  return os.date("!%Y-%m-%d", math.floor(record.started_at or 0)) .. "-" .. (topic or "e2e-run") .. ".md"
end

---Writes DIR/<date>-<topic>.md; creates DIR when missing. Returns the path written.
---Raises: InvalidArgument when the directory or the file cannot be written.
---@param dir string
---@param record table
---@param opts table|nil { topic, command }
function M.write(dir, record, opts)
  opts = opts or {}
  common.mkdir_p(dir)
  local path = dir:gsub("/+$", "") .. "/" .. M.file_name(record, opts.topic)
  common.write_file("evidence record", path, M.render(record, opts))
  return path
end

return M
