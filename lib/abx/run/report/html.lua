-- abx.run.report.html: `--html FILE`, one self-contained HTML page of a run (docs/reports/html.md).
-- Input: the table the JSON report encodes (abx.run.report.json.document; the decoded JSON of
-- tests/reports/report.schema.json, format abxlua-report/1), so a merged JSON renders the same way.
-- Fields newer than a report (output, started, worker, trace, reproducer, sandboxes) are shown
-- when present and left out when absent or null (cjson.null and nil are both "absent").
-- The page: summary and exit status, filters (outcome, text), tests grouped by file (failures as
-- <details> that open on a click: message with its diff, traceback, output, trace, reproducer),
-- a timeline per worker (abx.run.report.html_timeline), the templates table, cleanup.
-- Rendered here, in Lua, through one escape function (M.escape); the inline script
-- (abx.run.report.html_assets) only filters, opens and copies. Nothing is loaded from anywhere.
-- Limits: a text field shows at most html_util.TEXT_MAX bytes (the rest is counted), less once the
-- page's budget (html_util.PAGE_BUDGET) is spent; a trace shows its last TRACE_MAX exchanges.
local core = require("abx.core")
local common = require("abx.run.report.common")
local util = require("abx.run.report.html_util")
local assets = require("abx.run.report.html_assets")
local timeline = require("abx.run.report.html_timeline")
local trace = require("abx.run.report.html_trace")

local M = {}

local TRACE_MAX = 50
local OUTCOMES = { "failed", "error", "xpassed", "passed", "skipped", "xfailed", "rerun" }

local esc, get, bound, seconds, pre = util.escape, util.get, util.bound, util.seconds, util.pre

---The one escape function of the page (abx.run.report.html_util.escape): masked, valid UTF-8,
---no control characters, & < > " ' as entities.
M.escape = util.escape

-- A message as <pre>: the lines of a unified diff (abx.run.diff: --- expected, +++ actual, @@)
-- are coloured.
local function message_pre(msg)
  local out, in_diff = {}, false
  for line in (bound(msg) .. "\n"):gmatch("([^\n]*)\n") do
    local bare = line:match("^%s*(.*)$")
    if bare == "--- expected" then in_diff = true end
    local cls = nil
    if in_diff then
      if bare:match("^@@") then cls = "hunk"
      elseif bare:match("^%-") then cls = "del"
      elseif bare:match("^%+") then cls = "ins" end
    end
    out[#out + 1] = cls and ('<span class="' .. cls .. '">' .. esc(line) .. "</span>") or esc(line)
  end
  return '<pre class="message">' .. table.concat(out, "\n") .. "</pre>"
end

-- The exit status abxlua gave for this report (lib/abx/run/runner.lua, M.run): 2 interrupted,
-- 1 failures/errors/cleanup errors, 5 nothing collected, else 0. `exit_code` wins when present.
function M.exit_status(report)
  local given = get(report.exit_code)
  if math.type(given) == "integer" then return given end
  local c = report.counts or {}
  if report.interrupted == true then return 2 end
  local cleanup_errs = get(report.cleanup) and #(report.cleanup.errors or {}) or 0
  if (c.failed or 0) > 0 or (c.errors or 0) > 0 or cleanup_errs > 0 then return 1 end
  if (report.total or 0) == 0 and #(report.tests or {}) == 0 then return 5 end
  return 0
end

local function summary(report)
  local c, h = report.counts or {}, {}
  local code = M.exit_status(report)
  h[#h + 1] = '<h1>abxlua run report</h1><div class="summary">'
  h[#h + 1] = string.format('<p class="exit %s" id="exit-status">exit status %d (%s)</p>',
    code == 0 and "exit0" or "exitn", code, ({ [0] = "all good", "failures or errors",
      "interrupted", "internal error", "usage error", "nothing collected" })[code] or "?")
  h[#h + 1] = '<p class="counts">'
  for _, k in ipairs({ "passed", "failed", "skipped", "xfailed", "xpassed", "errors", "rerun" }) do
    local n = tonumber(c[k]) or 0
    if n > 0 or k == "passed" or k == "failed" then
      h[#h + 1] = string.format('<span class="o-%s" id="count-%s">%d %s</span>',
        k == "errors" and "error" or k, k, n, k)
    end
  end
  h[#h + 1] = "</p>"
  local sel = report.selection or {}
  local meta = {
    { "provider", report.provider }, { "endpoint", report.endpoint },
    { "tests", report.total }, { "duration", seconds(report.duration) },
    { "jobs", report.jobs }, { "started", report.started_at }, { "finished", report.finished_at },
    { "run id", report.run_id }, { "engine", report.engine_version },
    { "commit", report.git_commit }, { "selection", common.selection_text({
      k = get(sel.k), m = get(sel.m), profile = get(sel.profile), shard = get(sel.shard),
      paths = sel.paths }) },
    { "skipped because", report.skip_reason },
    { "interrupted", report.interrupted == true and "yes: not every test ran" or nil },
  }
  h[#h + 1] = '<p class="meta">'
  for _, m in ipairs(meta) do
    if get(m[2]) ~= nil then h[#h + 1] = "<span><b>" .. m[1] .. "</b> " .. esc(m[2]) .. "</span> " end
  end
  h[#h + 1] = "</p></div>"
  return table.concat(h)
end

local function filters(report)
  local h = { '<div class="filters"><b>show</b> ' }
  local present = {}
  for _, t in ipairs(report.tests or {}) do present[t.outcome] = true end
  for _, o in ipairs(OUTCOMES) do
    if present[o] then
      h[#h + 1] = string.format('<label><input type="checkbox" value="%s" id="show-%s" checked> %s</label>',
        o, o, o)
    end
  end
  h[#h + 1] = '<input type="search" id="filter-text" placeholder="filter by name, file, marker, message">'
  h[#h + 1] = ' <span class="meta"><span id="shown">' .. #(report.tests or {}) .. "</span> of "
    .. #(report.tests or {}) .. " shown</span></div>"
  return table.concat(h)
end

-- The body of a test (what opens on a click), or nil when it has nothing to show.
local function test_body(t, n)
  local h = {}
  local err = get(t.error)
  if err then
    h[#h + 1] = string.format("<h4>%s%s</h4>", esc(err.kind),
      get(err.status) and (" (HTTP " .. esc(err.status) .. ")") or "")
    h[#h + 1] = message_pre(get(err.message) or "")
    if get(err.traceback) then h[#h + 1] = "<h4>traceback</h4>" .. pre(err.traceback, "traceback") end
  end
  if get(t.reason) then h[#h + 1] = "<h4>reason</h4>" .. pre(t.reason, "reason") end
  for _, e in ipairs(t.teardown_errors or {}) do
    h[#h + 1] = "<h4>teardown error (" .. esc(e.phase) .. ")</h4>" .. message_pre(e.message or "")
  end
  for i, a in ipairs(t.reruns or {}) do
    local ae = get(a.error) or {}
    h[#h + 1] = string.format("<h4>attempt %d (%s)</h4>", i, seconds(a.duration))
      .. message_pre((ae.kind or "Error") .. ": " .. (get(ae.message) or ""))
  end
  local th, ms = common.threshold_lines(t) -- abx.run.measure
  if #th > 0 then h[#h + 1] = "<h4>thresholds</h4>" .. pre(table.concat(th, "\n"), "thresholds") end
  if #ms > 0 then h[#h + 1] = "<h4>measurements</h4>" .. pre(table.concat(ms, "\n"), "measurements") end
  if get(t.output) and t.output ~= "" then h[#h + 1] = "<h4>output</h4>" .. pre(t.output, "output") end
  local tr = trace.section(get(t.trace), n, TRACE_MAX)
  if tr then h[#h + 1] = tr end
  if get(t.reproducer) then h[#h + 1] = trace.reproducer(t.reproducer, n) end
  if #(t.sandboxes or {}) > 0 then
    local ids = {}
    for _, id in ipairs(t.sandboxes) do ids[#ids + 1] = esc(id) end
    h[#h + 1] = '<p class="meta">sandboxes: ' .. table.concat(ids, ", ") .. "</p>"
  end
  if #h == 0 then return nil end
  return '<div class="body">' .. table.concat(h) .. "</div>"
end

local function search_text(t)
  local parts = { t.id or "", t.outcome or "", get(t.known_issue) or "" }
  for _, m in ipairs(t.markers or {}) do parts[#parts + 1] = m end
  local err = get(t.error)
  if err then parts[#parts + 1] = (get(err.kind) or "") .. " " .. common.first_line(get(err.message)) end
  if get(t.reason) then parts[#parts + 1] = common.first_line(t.reason) end
  return esc(table.concat(parts, " "):lower())
end

local function test_row(t, n)
  local head = {}
  head[#head + 1] = string.format('<span class="badge o-%s">%s</span>', esc(t.outcome), esc(t.outcome))
  head[#head + 1] = '<span class="name">' .. esc(t.name)
    .. (get(t.line) and ('<span class="meta">:' .. esc(t.line) .. "</span>") or "") .. "</span>"
  for _, m in ipairs(t.markers or {}) do head[#head + 1] = '<span class="tag">' .. esc(m) .. "</span>" end
  if get(t.known_issue) then head[#head + 1] = '<span class="tag ki">' .. esc(t.known_issue) .. "</span>" end
  if get(t.worker) then head[#head + 1] = '<span class="tag">worker ' .. esc(t.worker) .. "</span>" end
  head[#head + 1] = '<span class="dur">' .. seconds(t.duration) .. "</span>"
  local body = test_body(t, n)
  local attrs = string.format('class="test" id="t%d" data-outcome="%s" data-search="%s"', n,
    esc(t.outcome), search_text(t))
  if not body then
    return "<div " .. attrs .. '><div class="row">' .. table.concat(head) .. "</div></div>"
  end
  return "<details " .. attrs .. "><summary>" .. table.concat(head) .. "</summary>" .. body
    .. "</details>"
end

-- Tests grouped by file in report order; returns the HTML and test id -> anchor ("t<n>").
local function tests_by_file(report)
  local groups, index, anchors = {}, {}, {}
  for n, t in ipairs(report.tests or {}) do
    anchors[t.id or ""] = "t" .. n
    local f = t.file or "?"
    if not index[f] then
      index[f] = #groups + 1
      groups[#groups + 1] = { file = f, rows = {} }
    end
    table.insert(groups[index[f]].rows, test_row(t, n))
  end
  local h = { "<h2>tests</h2>" }
  for _, g in ipairs(groups) do
    h[#h + 1] = '<div class="file"><h3>' .. esc(g.file) .. "</h3>" .. table.concat(g.rows) .. "</div>"
  end
  if #groups == 0 then h[#h + 1] = '<p class="meta">no tests ran.</p>' end
  return table.concat(h), anchors
end

local function collection_errors(report)
  local ces = report.collection_errors or {}
  if #ces == 0 then return "" end
  local h = { '<h2>collection errors</h2>' }
  for _, ce in ipairs(ces) do h[#h + 1] = "<h3>" .. esc(ce.path) .. "</h3>" .. pre(ce.error) end
  return table.concat(h)
end

local function cleanup_section(report)
  local c = get(report.cleanup)
  if not c then return '<h2>cleanup</h2><p class="meta">no cleanup ran (nothing was started).</p>' end
  local h = { "<h2>cleanup</h2><table id=\"cleanup\"><tr><th>created</th><th>tracked and killed</th>"
    .. "<th>swept by tag</th><th>errors</th></tr>" }
  h[#h + 1] = string.format("<tr><td>%s</td><td>%s</td><td>%s</td><td>%d</td></tr></table>",
    esc(c.created or 0), esc(c.tracked or 0), esc(c.swept or 0), #(c.errors or {}))
  for _, e in ipairs(c.errors or {}) do h[#h + 1] = pre(e, "del") end
  return table.concat(h)
end

---The HTML page of a report (a decoded abxlua-report/1 document).
---Raises: InvalidArgument when `report` is not a table of format abxlua-report/1.
---@param report table
---@return string
function M.render(report)
  if type(report) ~= "table" or report.format ~= "abxlua-report/1" then
    core.error("InvalidArgument", 0, "the HTML report renders an abxlua-report/1 document (the JSON "
      .. "report's table), got " .. (type(report) == "table" and ("format " .. tostring(report.format))
      or type(report)))
  end
  util.begin_page()
  local tests_html, anchors = tests_by_file(report)
  return table.concat({
    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      .. "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">",
    "<title>abxlua report: ", esc(report.run_id), "</title><style>", assets.CSS, "</style></head><body>",
    summary(report), filters(report), collection_errors(report), tests_html,
    timeline.section(report, anchors), timeline.templates(report),
    cleanup_section(report),
    "<script>", assets.JS, "</script></body></html>\n",
  })
end

---Writes the HTML page of `report` to `path`.
---Raises: InvalidArgument when the report is not abxlua-report/1 or the file cannot be written.
---@param path string
---@param report table the JSON report's table (abx.run.report.json.document)
function M.write(path, report)
  common.write_file("HTML report", path, M.render(report))
end

return M
