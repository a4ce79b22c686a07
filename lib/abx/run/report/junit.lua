-- abx.run.report.junit: `--junit FILE`, a JUnit XML report as Jenkins, GitLab and pytest's junitxml
-- write it (tests/reports/junit.xsd describes what is written):
--   <testsuites name tests failures errors skipped time timestamp>
--     <testsuite name=FILE tests failures errors skipped time timestamp hostname>  (one per file)
--       <properties> provider, endpoint, run_id, selection, engine_version, git_commit, shard,
--                    interrupted </properties>
--       <testcase classname="tests.runner.x" name="test name" file line time>
--         <failure message type="Kind">traceback</failure>        failed
--         <failure message type="XPASS">...</failure>              xpassed (strict)
--         <skipped message="reason"/>                              skipped
--         <skipped type="xfail" message="xfail: KI-...: title"/>   xfailed
--         <rerunFailure message type><stackTrace/></rerunFailure>  failed earlier attempts (--reruns)
--                                                                    of a test that failed every time
--         <flakyFailure message type><stackTrace/></flakyFailure>  failed attempts of a test that
--                                                                    then passed (Maven Surefire's
--                                                                    rerun elements)
--         <error message type="teardown">...</error>               a teardown error
--         <properties> threshold, measurement (a test with thresholds or t.measure) </properties>
--         <system-out>captured stdout, then "sandboxes: id ...", then the trace and reproducer
--                     (common.trace_text: --trace, abx.run.trace)</system-out>
--         <system-err>captured stderr</system-err>              (abx.run.capture; masked)
--       </testcase>
--     A file that failed to collect is a suite with one testcase named after the file, holding an
--     <error type="collection">.
-- Counting follows pytest: failures = failed + xpassed testcases, errors = testcases with an
-- <error>, skipped = skipped + xfailed; tests = testcases.
-- Shards: every suite carries the property shard="K/N"; testcase identities (classname, name)
-- are unique within a run and disjoint between shards, so shard reports merge by concatenation.
local common = require("abx.run.report.common")
local capture = require("abx.run.capture")

local M = {}

-- XML 1.0 allows \t \n \r and code points from 0x20 up; other C0 controls (and DEL) are
-- dropped; invalid UTF-8 becomes U+FFFD, so the document stays well-formed.
local function clean(s)
  return common.utf8_clean((s:gsub("[%z\1-\8\11\12\14-\31\127]", "")))
end

local ESC = { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&apos;" }
local ATTR_WS = { ["\t"] = "&#9;", ["\n"] = "&#10;", ["\r"] = "&#13;" }

---Escapes text content (masked first).
function M.text(s)
  if s == nil then return "" end
  return (clean(common.mask(s)):gsub("[&<>\"']", ESC):gsub("\r", "&#13;"))
end

---Escapes an attribute value (masked first); tabs and newlines survive as character references.
function M.attr(s)
  if s == nil then return "" end
  return (clean(common.mask(s)):gsub("[&<>\"']", ESC):gsub("[\t\n\r]", ATTR_WS))
end

---"tests/runner/outcomes_basic.lua" -> "tests.runner.outcomes_basic"
function M.classname(file)
  return (file:gsub("%.lua$", ""):gsub("/", "."))
end

local function secs(d) return string.format("%.3f", d or 0) end

local function tag(name, attrs)
  local parts = { "<" .. name }
  for _, kv in ipairs(attrs) do
    if kv[2] ~= nil then parts[#parts + 1] = string.format('%s="%s"', kv[1], M.attr(kv[2])) end
  end
  return table.concat(parts, " ")
end

local function properties(record, out, indent)
  local sel = record.selection or {}
  local props = {
    { "provider", record.provider }, { "endpoint", record.endpoint },
    { "run_id", record.run_id }, { "selection", common.selection_text(sel) },
    { "engine_version", record.engine_version }, { "git_commit", record.git_commit },
    { "shard", sel.shard }, { "interrupted", record.interrupted and "true" or nil },
    { "skip_reason", record.skip_reason },
  }
  out[#out + 1] = indent .. "<properties>"
  for _, p in ipairs(props) do
    if p[2] ~= nil then
      out[#out + 1] = indent .. "  " .. tag("property", { { "name", p[1] }, { "value", p[2] } }) .. "/>"
    end
  end
  out[#out + 1] = indent .. "</properties>"
end

-- The elements inside one <testcase>, and what it counts as.
local function testcase(r, out)
  local t = r.test
  local counts = { failures = 0, errors = 0, skipped = 0 }
  local body = {}
  -- the test's thresholds and measurements (abx.run.measure) as testcase properties, where
  -- pytest's record_property puts them
  local th, ms = common.threshold_lines(r)
  if #th + #ms > 0 then
    body[#body + 1] = "<properties>"
    for _, pair in ipairs({ { "threshold", th }, { "measurement", ms } }) do
      for _, l in ipairs(pair[2]) do
        body[#body + 1] = tag("property", { { "name", pair[1] }, { "value", l } }) .. "/>"
      end
    end
    body[#body + 1] = "</properties>"
  end
  if r.outcome == "failed" then
    local f = common.failure(r) or { kind = "Error", message = "?" }
    body[#body + 1] = tag("failure", { { "message", f.message }, { "type", f.kind } }) .. ">"
      .. M.text(f.message .. (f.traceback and ("\n" .. f.traceback) or "")) .. "</failure>"
    counts.failures = 1
  elseif r.outcome == "xpassed" then
    body[#body + 1] = tag("failure", { { "message", r.reason }, { "type", "XPASS" } }) .. ">"
      .. M.text(r.reason) .. "</failure>"
    counts.failures = 1
  elseif r.outcome == "skipped" then
    body[#body + 1] = tag("skipped", { { "message", r.reason or "skipped" } }) .. "/>"
    counts.skipped = 1
  elseif r.outcome == "xfailed" then
    local f = common.failure(r)
    body[#body + 1] = tag("skipped", { { "type", "xfail" },
      { "message", "xfail: " .. (r.reason or t.opts.known_issue or "") } }) .. ">"
      .. M.text(f and f.message or "") .. "</skipped>"
    counts.skipped = 1
  end
  local rerun_tag = r.outcome == "failed" and "rerunFailure" or "flakyFailure"
  for _, a in ipairs(r.reruns or {}) do
    local f = common.failure(a) or { kind = "Error", message = "?" }
    body[#body + 1] = tag(rerun_tag, { { "message", f.message }, { "type", f.kind } }) .. "><stackTrace>"
      .. M.text(f.message .. (f.traceback and ("\n" .. f.traceback) or "")) .. "</stackTrace></"
      .. rerun_tag .. ">"
  end
  for _, e in ipairs(r.teardown_errors or {}) do
    body[#body + 1] = tag("error", { { "message", common.first_line(common.mask(e.message)) },
      { "type", "teardown" } }) .. ">" .. M.text("teardown (" .. tostring(e.phase) .. "): "
      .. e.message) .. "</error>"
    counts.errors = 1
  end
  -- the test's captured output (abx.run.capture; masked by M.text), then the sandboxes it made
  local sysout = capture.text(r.captured, "stdout") or ""
  if r.sandboxes and #r.sandboxes > 0 then
    sysout = sysout .. "sandboxes: " .. table.concat(r.sandboxes, " ")
  end
  -- the test's HTTP exchanges and its failure's reproducer (--trace, abx.run.trace), compact
  local tr = common.trace_text(r)
  if tr then sysout = sysout .. (sysout ~= "" and "\n" or "") .. tr end
  if sysout ~= "" then body[#body + 1] = "<system-out>" .. M.text(sysout) .. "</system-out>" end
  local syserr = capture.text(r.captured, "stderr")
  if syserr then body[#body + 1] = "<system-err>" .. M.text(syserr) .. "</system-err>" end
  local open = tag("testcase", { { "classname", M.classname(t.file) }, { "name", t.name },
    { "file", t.file }, { "line", t.line }, { "time", secs(r.duration) } })
  if #body == 0 then
    out[#out + 1] = "    " .. open .. "/>"
  else
    out[#out + 1] = "    " .. open .. ">"
    for _, b in ipairs(body) do out[#out + 1] = "      " .. b end
    out[#out + 1] = "    </testcase>"
  end
  return counts
end

---Renders the report of a run record (abx.run.runner) as a string.
function M.render(record)
  local host = common.hostname()
  local stamp = common.iso_utc(record.started_at)
  local suites = {}
  local total = { tests = 0, failures = 0, errors = 0, skipped = 0 }
  local function add_suite(name, cases, time)
    local c = { tests = #cases, failures = 0, errors = 0, skipped = 0 }
    local lines = {}
    for _, case in ipairs(cases) do
      local k = case(lines)
      c.failures, c.errors, c.skipped = c.failures + k.failures, c.errors + k.errors, c.skipped + k.skipped
    end
    for key, v in pairs(c) do total[key] = total[key] + v end
    local head = {}
    head[1] = "  " .. tag("testsuite", { { "name", name }, { "tests", c.tests },
      { "failures", c.failures }, { "errors", c.errors }, { "skipped", c.skipped },
      { "time", secs(time) }, { "timestamp", stamp }, { "hostname", host } }) .. ">"
    properties(record, head, "    ")
    suites[#suites + 1] = table.concat(head, "\n") .. "\n" .. table.concat(lines, "\n")
      .. (#lines > 0 and "\n" or "") .. "  </testsuite>"
  end
  for _, ce in ipairs(record.collection_errors or {}) do
    add_suite(ce.path, { function(out)
      local msg = common.mask(ce.error)
      out[#out + 1] = "    " .. tag("testcase", { { "classname", M.classname(ce.path) },
        { "name", ce.path }, { "file", ce.path }, { "time", secs(0) } }) .. ">"
      out[#out + 1] = "      " .. tag("error", { { "message", common.first_line(msg) },
        { "type", "collection" } }) .. ">" .. M.text(msg) .. "</error>"
      out[#out + 1] = "    </testcase>"
      return { failures = 0, errors = 1, skipped = 0 }
    end }, 0)
  end
  for _, g in ipairs(common.by_file(record)) do
    local cases, time = {}, 0
    for _, r in ipairs(g.results) do
      time = time + (r.duration or 0)
      cases[#cases + 1] = function(out) return testcase(r, out) end
    end
    add_suite(g.file, cases, time)
  end
  local name = "abxlua" .. (record.selection and record.selection.shard
    and (" shard " .. record.selection.shard) or "")
  local root = tag("testsuites", { { "name", name }, { "tests", total.tests },
    { "failures", total.failures }, { "errors", total.errors }, { "skipped", total.skipped },
    { "time", secs(record.duration) }, { "timestamp", stamp } }) .. ">"
  local parts = { '<?xml version="1.0" encoding="UTF-8"?>', root }
  if record.interrupted then
    parts[#parts + 1] = "  <!-- the run was interrupted: tests that did not start are absent -->"
  end
  for _, s in ipairs(suites) do parts[#parts + 1] = s end
  parts[#parts + 1] = "</testsuites>\n"
  return table.concat(parts, "\n")
end

---Writes the JUnit report of `record` to `path`.
---Raises: InvalidArgument when the file cannot be written.
function M.write(path, record)
  common.write_file("JUnit report", path, M.render(record))
end

return M
