-- abx.run.report.html_timeline: the timeline and the templates table of the HTML report
-- (abx.run.report.html), as inline SVG and a table.
-- Input (tests/reports/report.schema.json): tests[].started, .duration, .worker (1..jobs) and
-- the top-level sandboxes [{id, template, test, created, killed|null}], times in seconds since
-- the run's start. One lane per worker: the tests it ran as bars (a click opens the test), and
-- under them the lifetimes of the sandboxes its tests created (create to kill; alive to the end
-- when never killed). A gap between a test's start and its sandbox's bar is a slot wait or a
-- slow create. Sandboxes of no known test (file and run fixtures) get a lane of their own.
-- A report without these fields gets a note instead of a timeline.
local util = require("abx.run.report.html_util")

local M = {}

local esc, get = util.escape, util.get
local W, LABEL, LANE, BAR, SBX = 1000, 70, 30, 14, 8 -- SVG units

local function x_of(t, span) return LABEL + (W - LABEL) * math.max(0, t) / span end

local function fmt(t) return string.format("%.2f", t) end

-- The lanes: worker number -> { tests = {...}, sandboxes = {...} }, the sorted worker numbers
-- (0: sandboxes of no known test) and the span of the run in seconds.
local function lanes(report)
  local by, workers, span = {}, {}, tonumber(get(report.duration)) or 0
  local worker_of = {}
  local function lane(w)
    if not by[w] then
      by[w] = { tests = {}, sandboxes = {} }
      workers[#workers + 1] = w
    end
    return by[w]
  end
  for n, t in ipairs(report.tests or {}) do
    local w, s = tonumber(get(t.worker)), tonumber(get(t.started))
    if w and s then
      worker_of[t.id] = w
      table.insert(lane(w).tests, { t = t, n = n, s = s, d = tonumber(get(t.duration)) or 0 })
      span = math.max(span, s + (tonumber(get(t.duration)) or 0))
    end
  end
  for _, sb in ipairs(get(report.sandboxes) or {}) do
    local c = tonumber(get(sb.created))
    if c then
      table.insert(lane(worker_of[get(sb.test) or ""] or 0).sandboxes, sb)
      span = math.max(span, c, tonumber(get(sb.killed)) or 0)
    end
  end
  table.sort(workers, function(a, b) return (a == 0 and math.huge or a) < (b == 0 and math.huge or b) end)
  return by, workers, math.max(span, 0.001)
end

local function grid(h, span, height)
  local step = 10 ^ math.floor(math.log(span / 2, 10))
  if span / step > 10 then step = step * 2 end
  if span / step > 10 then step = step * 2.5 end
  local t = 0
  while t <= span do
    local x = x_of(t, span)
    h[#h + 1] = string.format('<line class="grid" x1="%.1f" y1="14" x2="%.1f" y2="%d"/>'
      .. '<text class="tick" x="%.1f" y="10">%ss</text>', x, x, height, x + 2, (fmt(t):gsub("%.?0+$", "")))
    t = t + step
  end
end

local function lane_svg(h, l, w, y, span, anchors)
  h[#h + 1] = string.format('<text class="lane" x="4" y="%d">%s</text>', y + BAR - 3,
    w == 0 and "fixtures" or string.format("worker %d", w))
  for _, b in ipairs(l.tests) do
    local x = x_of(b.s, span)
    h[#h + 1] = string.format('<a href="#t%d"><rect class="%s" x="%.1f" y="%d" width="%.1f" '
      .. 'height="%d"><title>%s: %s (%s s at +%s s)</title></rect></a>', b.n, esc(b.t.outcome), x,
      y, math.max(1, x_of(b.s + b.d, span) - x), BAR, esc(b.t.outcome), esc(b.t.id), fmt(b.d), fmt(b.s))
  end
  for _, sb in ipairs(l.sandboxes) do
    local c, k = tonumber(get(sb.created)), tonumber(get(sb.killed))
    local x = x_of(c, span)
    local anchor = anchors[get(sb.test) or ""]
    h[#h + 1] = string.format('%s<rect class="sbx%s" x="%.1f" y="%d" width="%.1f" height="%d">'
      .. "<title>sandbox %s (%s) of %s: created +%s s, %s</title></rect>%s",
      anchor and ('<a href="#' .. anchor .. '">') or "", k and "" or " alive", x, y + BAR + 2,
      math.max(1, x_of(k or span, span) - x), SBX, esc(sb.id), esc(get(sb.template) or "?"),
      esc(get(sb.test) or "a fixture"), fmt(c), k and ("killed +" .. fmt(k) .. " s") or "never killed",
      anchor and "</a>" or "")
  end
end

---The "timeline" section: SVG lanes per worker (tests and their sandboxes); a note when the
---report has no test times (written before `started`/`worker` existed).
---@param report table decoded abxlua-report/1
---@param anchors table test id -> element id of the test on the page
---@return string
function M.section(report, anchors)
  local by, workers, span = lanes(report)
  if #workers == 0 then
    return '<h2>timeline</h2><p class="meta" id="timeline">no timeline: this report has no test '
      .. "start times or workers.</p>"
  end
  local height = 18 + #workers * (LANE + 4)
  local h = { string.format('<h2>timeline</h2><svg class="timeline" id="timeline" viewBox="0 0 %d %d" '
    .. 'role="img" aria-label="tests and sandboxes per worker">',
    W + 10, height) }
  grid(h, span, height)
  for i, w in ipairs(workers) do lane_svg(h, by[w], w, 18 + (i - 1) * (LANE + 4), span, anchors) end
  h[#h + 1] = "</svg>"
  h[#h + 1] = '<p class="legend"><span><i class="o-passed"></i>passed</span><span><i class="o-failed">'
    .. '</i>failed</span><span><i class="o-skipped"></i>skipped</span><span><i class="o-xfailed"></i>'
    .. 'xfailed</span><span><i style="background:#0969da;opacity:.45"></i>sandbox alive (create to '
    .. 'kill)</span><span><i style="background:#bf8700"></i>never killed</span> (hover a bar for '
    .. "its times, click a test to open it)</p>"
  return table.concat(h)
end

-- Rows of the templates table from the sandboxes: template -> sandboxes, tests, failed tests,
-- longest lifetime.
local function template_rows(report)
  local outcome = {}
  for _, t in ipairs(report.tests or {}) do outcome[t.id] = t.outcome end
  local rows, order = {}, {}
  for _, sb in ipairs(get(report.sandboxes) or {}) do
    local name = get(sb.template) or "?"
    local r = rows[name]
    if not r then
      r = { sandboxes = 0, tests = {}, ntests = 0, failed = 0, longest = 0, alive = 0 }
      rows[name], order[#order + 1] = r, name
    end
    r.sandboxes = r.sandboxes + 1
    local c, k = tonumber(get(sb.created)) or 0, tonumber(get(sb.killed))
    if k then r.longest = math.max(r.longest, k - c) else r.alive = r.alive + 1 end
    local test = get(sb.test)
    if test and not r.tests[test] then
      r.tests[test] = true
      r.ntests = r.ntests + 1
      local o = outcome[test]
      if o == "failed" or o == "xpassed" then r.failed = r.failed + 1 end
    end
  end
  table.sort(order)
  return rows, order
end

---The "templates" section: per template, its sandboxes, the tests that used them, how many of
---those failed, the longest sandbox lifetime and the sandboxes never killed. Built from the
---top-level `sandboxes`; a note when the report has none.
---@param report table
---@return string
function M.templates(report)
  local rows, order = template_rows(report)
  if #order == 0 then
    return '<h2>templates</h2><p class="meta" id="templates">no sandbox list in this report.</p>'
  end
  local h = { '<h2>templates</h2><table id="templates"><tr><th>template</th><th>sandboxes</th>'
    .. "<th>tests</th><th>failed tests</th><th>longest lifetime</th><th>never killed</th></tr>" }
  for _, name in ipairs(order) do
    local r = rows[name]
    h[#h + 1] = string.format("<tr><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%d</td></tr>",
      esc(name), r.sandboxes, r.ntests, r.failed, util.seconds(r.longest), r.alive)
  end
  h[#h + 1] = "</table>"
  return table.concat(h)
end

return M
