-- abx.run.console: the console report: a header, one line per test as it finishes, failure details,
-- the cleanup result, the slowest phases (--durations N, as in pytest), the short test summary
-- (-r CHARS, as in pytest), and the summary as the very last line:
--   N passed, N failed, N skipped, N xfailed in S.SSs      (", N errors" when there are any,
--                                                           then ", N rerun" likewise)
-- On a terminal (stdout a tty, not CI, TERM not dumb) one status line is kept up to date below the
-- lines of tests that did not pass: tests in flight, counts, elapsed time, and the tests in flight
-- longest first with their seconds ("running: a.lua::x 212s, b.lua::y 3s"), cut to the width.
-- Elsewhere, one plain line per test, and a line for a test still running after every PROGRESS_EVERY
-- seconds: "abxlua: still running: FILE::NAME (120 s; limit 300 s)". NO_COLOR turns colours off.
-- Everything goes through core.write, which masks registered secrets.
-- A sink of the runner's events (abx.run.runner): tests started and finished, results, reruns,
-- the closing sections; it counts nothing itself: the counts it shows are the run record's
-- (abx.run.tally), given with each result and with the summary.
local core = require("abx.core")

local M = {}
M.__index = M

-- Off a terminal, a test still running is named after this many seconds and every as many after.
-- ABX_PROGRESS_EVERY (seconds > 0) changes it: meant for abxlua's own tests (tests/runner/progress.py).
M.PROGRESS_EVERY = 60

---The period of the "still running" lines in seconds: ABX_PROGRESS_EVERY, else PROGRESS_EVERY.
---Raises: InvalidArgument when ABX_PROGRESS_EVERY is not a number of seconds > 0 (`abxlua run`
---checks it before the run: a usage error).
---@return number
function M.progress_every()
  local v = core.getenv("ABX_PROGRESS_EVERY")
  if v == nil or v == "" then return M.PROGRESS_EVERY end
  local n = tonumber(v)
  if not n or n <= 0 then
    core.error("InvalidArgument", 0, "ABX_PROGRESS_EVERY must be a number of seconds > 0, got " .. v)
  end
  return n
end

-- Set by `abxlua run` before the runner makes its console: { report_chars, maxfail, maxfail_flag
-- ("-x" or "--maxfail N"), durations, durations_min, live, verbosity (the count of -v) }. The
-- runner passes only { verbose, report_chars, maxfail } to new(); these fill in the rest.
M.defaults = {}

---Sets the options every console made afterwards starts from.
function M.configure(opts) M.defaults = opts or {} end

-- Environment variables that mean "running under CI" (no live status line there).
local CI_VARS = { "CI", "GITHUB_ACTIONS", "GITLAB_CI", "JENKINS_URL", "BUILDKITE", "TF_BUILD",
  "TEAMCITY_VERSION", "CIRCLECI", "TRAVIS", "DRONE" }

---Whether a live status line fits: stdout is a terminal, TERM is not dumb, and no CI variable is set.
function M.live_default()
  if not core.isatty(1) then return false end
  if core.getenv("TERM") == "dumb" then return false end
  for _, v in ipairs(CI_VARS) do
    local val = core.getenv(v)
    if val and val ~= "" and val ~= "false" and val ~= "0" then return false end
  end
  return true
end

-- -r characters: f failed, E error, s skipped, x xfailed, X xpassed, p/P passed, R rerun (as
-- pytest-rerunfailures), a all but passed (sxXEf), A all (PpsxXEf), N none.
local EXPAND = { a = "sxXEf", A = "PpsxXEf" }

---Expands -r CHARS into the list of characters to report, in order, without repeats.
---Returns nil and a message for an unknown character.
function M.report_chars(chars)
  local seq = {}
  for ch in tostring(chars):gmatch(".") do
    if ch == "N" then
      seq = {}
    elseif EXPAND[ch] then
      for c in EXPAND[ch]:gmatch(".") do seq[#seq + 1] = c end
    elseif ("fEsxXpPR"):find(ch, 1, true) then
      seq[#seq + 1] = ch == "P" and "p" or ch
    else
      return nil, "-r: unknown character " .. string.format("%q", ch)
        .. " (f failed, E error, s skipped, x xfailed, X xpassed, p passed, R rerun, a all but "
        .. "passed, A all, N none)"
    end
  end
  local out, seen = {}, {}
  for _, c in ipairs(seq) do
    if not seen[c] then seen[c] = true; out[#out + 1] = c end
  end
  return out
end

local COLORS = { passed = "\27[32m", failed = "\27[31m", skipped = "\27[33m", error = "\27[31m",
  xfailed = "\27[33m", xpassed = "\27[31m", rerun = "\27[33m", reset = "\27[0m" }
local LABELS = { xpassed = "XPASS" }

-- The counts the status line shows before the first result (abx.run.tally's fields).
local NO_COUNTS = { passed = 0, failed = 0, skipped = 0, xfailed = 0, xpassed = 0, errors = 0, done = 0 }

function M.new(opts)
  local o = {}
  for k, v in pairs(M.defaults) do o[k] = v end
  for k, v in pairs(opts or {}) do o[k] = v end
  local color = core.isatty(1) and not core.getenv("NO_COLOR")
  local live = o.live
  if live == nil then live = M.live_default() end
  local report = M.report_chars(o.report_chars or "fE") or { "f", "E" }
  local report_set = {}
  for _, ch in ipairs(report) do report_set[ch] = true end
  return setmetatable({ color = color, verbose = o.verbose, verbosity = o.verbosity,
    maxfail = o.maxfail,
    maxfail_flag = o.maxfail_flag or (o.maxfail and ("--maxfail " .. o.maxfail)),
    durations = o.durations, durations_min = o.durations_min or 0.005, verbose_level = o.verbose_level,
    report = report, report_set = report_set, live = live, every = M.progress_every(),
    running = {}, -- tests in flight: { test, started, limit (seconds), shown (lines printed) }
    collection_errors = {}, ntests = 0, jobs = 1, started = core.now(),
    counts = NO_COUNTS }, M) -- counts: the run's, as the last result left them (abx.run.tally)
end

function M:paint(kind, text)
  if not self.color or not COLORS[kind] then return text end
  return COLORS[kind] .. text .. COLORS.reset
end

-- The tests in flight, longest running first (then in start order).
function M:in_flight_list()
  local list = {}
  for _, e in pairs(self.running) do list[#list + 1] = e end
  table.sort(list, function(a, b)
    if a.started ~= b.started then return a.started < b.started end
    return (a.test.index or 0) < (b.test.index or 0)
  end)
  return list
end

-- "running: 03_commands.lua::big stream 212s, 01_lifecycle.lua::kill 3s": the tests in flight,
-- longest first, their files without the directory (the width is short); nil when none.
function M:running_text()
  local list, now, parts = self:in_flight_list(), core.now(), {}
  for _, e in ipairs(list) do
    parts[#parts + 1] = string.format("%s::%s %ds", e.test.file:match("[^/]*$"), e.test.name,
      math.floor(now - e.started))
  end
  if #parts == 0 then return nil end
  return "running: " .. table.concat(parts, ", ")
end

-- The live status line: "[done/total] N running | counts | elapsed | running: tests", cut to the
-- terminal width.
function M:status_text()
  local c = self.counts
  local done = c.done
  local running = self.in_flight or math.max(0, math.min(self.jobs, self.ntests - done))
  local s = string.format("[%d/%d] %d running | %d passed, %d failed, %d skipped, %d xfailed",
    done, self.ntests, running, c.passed, c.failed + c.xpassed, c.skipped, c.xfailed)
  if c.errors > 0 then s = s .. string.format(", %d errors", c.errors) end
  s = s .. string.format(" | %.1fs", core.now() - self.started)
  local names = self:running_text()
  if names then s = s .. " | " .. names end
  -- COLUMNS wins (a test sets it), then the terminal's own width
  local width = tonumber(core.getenv("COLUMNS") or "") or core.term_width(1) or 80
  if #s > width - 1 then s = s:sub(1, math.max(10, width - 1)) end
  return s
end

---The runner calls this when a test starts: the status line counts and names the tests in flight.
---@param test table
---@param limit? number its time limit in seconds (abx.run.limits), named by the progress lines
function M:test_started(test, limit)
  self.in_flight = (self.in_flight or 0) + 1
  self.running[test] = { test = test, started = core.now(), limit = limit, shown = 0 }
  self:draw_status()
end

---The runner calls this when a test's own time starts later than the test (a template folder's
---test, after its template's deploy; a rerun attempt): its seconds in flight, and the "still
---running" lines, count from now, as its limit does.
function M:test_clock(test)
  local e = self.running[test]
  if e then e.started, e.shown = core.now(), 0 end
end

---The runner calls this when a test (and its reruns) ended, before its result line.
function M:test_finished(test)
  self.in_flight = (self.in_flight or 1) - 1
  self.running[test] = nil
end

-- Off a terminal: one line per test that has run another `every` seconds since its last one,
-- "abxlua: still running: FILE::NAME (120 s; limit 300 s)", longest running first.
function M:progress_lines()
  local now = core.now()
  for _, e in ipairs(self:in_flight_list()) do
    local n = math.floor((now - e.started) / self.every)
    if n > e.shown then
      e.shown = n
      self:line(string.format("abxlua: still running: %s::%s (%d s%s)", e.test.file, e.test.name,
        math.floor(now - e.started), e.limit and ("; limit " .. require("abx.run.limits").secs(e.limit)
        .. " s") or ""))
    end
  end
end

function M:draw_status()
  if not self.in_progress then return end
  core.write("\r\27[K" .. self:status_text(), true) -- shown now, not held back by the masking
  self.status_shown = true
end

function M:clear_status()
  if self.status_shown then
    core.write("\r\27[K")
    self.status_shown = false
  end
end

-- Ends the live status line and the progress task (before the closing sections).
function M:end_progress()
  self.in_progress = false
  self.ticking = false
  self:clear_status()
end

function M:line(text)
  self:clear_status()
  core.write(text .. "\n")
  self:draw_status()
end

function M:header(pname, pinfo, run_id, ntests, jobs)
  self.ntests, self.jobs, self.started = ntests, jobs, core.now()
  self:line(string.format("abxlua %s: provider %s (%s), run id %s, %d tests, -j %d",
    (core.version()), pname, pinfo.endpoint or "no endpoint", run_id, ntests, jobs))
  self.in_progress = self.live
  self.ticking = true
  self:draw_status()
  -- on a terminal, redraws the status line twice a second; elsewhere, looks for tests to name
  -- every second (or every ABX_PROGRESS_EVERY when shorter); ends with end_progress (or when aborted)
  local step = self.live and 0.5 or math.min(1, self.every)
  core.spawn(function()
    while self.ticking do
      if not pcall(core.sleep, step) or not self.ticking then break end
      if self.live then self:draw_status() else self:progress_lines() end
    end
  end)
end

function M:collection_error(f)
  self.collection_errors[#self.collection_errors + 1] = f
  self:line(self:paint("error", "ERROR") .. "   " .. f.path .. " (collection): " .. tostring(f.error))
end

---A test's result line (on a terminal, a passing test only moves the status line), then its
---teardown errors.
---@param r table the result (abx.run.runner)
---@param counts table the run's counts with this result counted (abx.run.tally): the status line
---  shows them until the next result
function M:result(r, counts)
  self.counts = counts
  if self.live and not self.verbose and r.outcome == "passed" and not r.teardown_errors then
    self:draw_status() -- on a terminal, passing tests only move the status line
    return
  end
  local label = LABELS[r.outcome] or string.upper(r.outcome)
  local line = string.format("%-8s %s::%s (%.2fs)", label, r.test.file, r.test.name, r.duration or 0)
  if (r.outcome == "skipped" or r.outcome == "xfailed" or r.outcome == "xpassed") and r.reason then
    line = line .. " - " .. r.reason
  end
  if r.outcome == "failed" and r.failure then
    line = line .. " - " .. (r.failure.kind or "error")
  end
  self:line(self:paint(r.outcome, line))
  if r.teardown_errors then
    for _, e in ipairs(r.teardown_errors) do
      self:line(self:paint("error", "ERROR") .. "    " .. r.test.file .. "::" .. r.test.name
        .. " (teardown, " .. e.phase .. "): " .. e.message)
    end
  end
end

---One line for an attempt of a flaky test that failed and is run again (--reruns):
---"RERUN    file::name (S.SSs) - Kind".
function M:rerun(r)
  local line = string.format("%-8s %s::%s (%.2fs) - %s", "RERUN", r.test.file, r.test.name,
    r.duration or 0, r.failure and r.failure.kind or "error")
  self:line(self:paint("rerun", line))
end

-- Results in file order: by file, then by the line of the test (then collection order), whatever
-- order they finished in under -j.
local function file_order(results)
  local list = {}
  for i, r in ipairs(results) do list[i] = r end
  table.sort(list, function(a, b)
    local ta, tb = a.test, b.test
    if ta.file ~= tb.file then return ta.file < tb.file end
    if (ta.line or 0) ~= (tb.line or 0) then return (ta.line or 0) < (tb.line or 0) end
    return (ta.index or 0) < (tb.index or 0)
  end)
  return list
end
M.file_order = file_order

M.CAPTURE_LINES = 100 -- lines of a test's captured output shown under its failure (the last ones)

-- The captured output of a result under its failure: "----- captured stdout -----" and its last
-- CAPTURE_LINES lines (the whole is in the JUnit report), likewise stderr.
function M:captured(r)
  local capture = require("abx.run.capture")
  for _, which in ipairs({ "stdout", "stderr" }) do
    local text = capture.text(r.captured, which)
    if text then
      self:line("    ----- captured " .. which .. " -----")
      local lines = {}
      for l in text:gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
      local rest = text:match("[^\n]+$")
      if rest then lines[#lines + 1] = rest end
      local from = math.max(1, #lines - M.CAPTURE_LINES + 1)
      if from > 1 then
        self:line(string.format("    (%d earlier lines: see the JUnit report, or run with -s)", from - 1))
      end
      for i = from, #lines do self:line("    " .. lines[i]) end
    end
  end
end

---The failures section: every failed test and every strict XPASS, in file order, with the
---message (its diff), the scenario line it failed at, the scenario traceback (-v; always for a
---plain Lua error), the full Lua traceback (-vv) and the test's captured output.
---A failure whose error came from a recorded HTTP answer (--trace, abx.run.trace) has its curl
---reproducer on the line after the message.
function M:failures(results)
  self:end_progress()
  local any = false
  local level = self.verbosity or (self.verbose and 1 or 0)
  for _, r in ipairs(file_order(results)) do
    local f = r.failure
    if (r.outcome == "failed" and f) or r.outcome == "xpassed" then
      if not any then self:line("\n=== failures ==="); any = true end
      self:line(string.format("--- %s::%s (line %d)", r.test.file, r.test.name, r.test.line or 0))
      if r.outcome == "xpassed" then
        self:line("    " .. (r.reason or "XPASS(strict)"))
      else
        for l in ((f.message or "?") .. "\n"):gmatch("([^\n]*)\n") do self:line("    " .. l) end
        if f.origin then self:line("    (raised in " .. f.origin .. ")") end
        -- the curl line of the exchange the error came from (abx.run.reproducer; masked)
        if r.reproducer then self:line("    reproduce: " .. r.reproducer) end
        if f.traceback and (level >= 1 or f.kind == "LuaError") then
          for l in (f.traceback .. "\n"):gmatch("([^\n]*)\n") do
            if l ~= "" then self:line("    " .. l) end
          end
        end
        if level >= 2 and f.lua_traceback then
          self:line("    Lua stack traceback (every frame):")
          for l in f.lua_traceback:gmatch("[^\n]+") do
            if l ~= "stack traceback:" then self:line("      " .. (l:gsub("^\t", ""))) end
          end
        end
      end
      self:captured(r)
    end
  end
  if any then self:line("") end
end

function M:cleanup(report, tracker)
  self:end_progress()
  local line = string.format("cleanup: %d sandboxes created, %d killed at the end (tracked), "
    .. "%d found by tag e2e=%s and killed; %d snapshots and %d volumes deleted", tracker.created,
    report.tracked, report.swept, tracker.run_id, report.snapshots or 0, report.volumes or 0)
  -- managed API keys only when the run left some (most runs make none)
  if (report.api_keys or 0) > 0 then line = line .. string.format("; %d API keys deleted", report.api_keys) end
  -- what the list by tag still shows after the kills (abx.run.tracker verify): the run fails
  if report.alive_error then line = line .. "; " .. report.alive_error end
  self:line(line)
  for _, e in ipairs(report.errors) do
    if e ~= report.alive_error then self:line("cleanup error: " .. e) end
  end
end

function M:internal_error(err)
  self:line("abxlua: internal error: " .. tostring(err))
end

-- One line of the short test summary for `ch` and a result.
local function short_line(self, ch, r)
  local id = r.test.file .. "::" .. r.test.name
  local function first(s) return (tostring(s or ""):match("^[^\n]*")) end
  if ch == "f" and r.outcome == "failed" then
    local f = r.failure or {}
    local msg = first(f.message or "?")
    -- "Kind: message" as pytest does; the location is in the failures section above
    local where = type(f.error) == "table" and f.error.where
    if where and msg:sub(1, #where + 2) == where .. ": " then msg = msg:sub(#where + 3) end
    if f.kind and not msg:find(f.kind, 1, true) then msg = f.kind .. ": " .. msg end
    return { self:paint("failed", "FAILED") .. " " .. id .. " - " .. msg }
  elseif ch == "f" and r.outcome == "xpassed" and not self.report_set.X then
    -- a strict XPASS fails the run: reported with the failures (as pytest does), so the default
    -- -r fE shows it; under its own label when -r asks for X
    return { self:paint("failed", "FAILED") .. " " .. id .. " - " .. first(r.reason) }
  elseif ch == "X" and r.outcome == "xpassed" then
    return { self:paint("xpassed", "XPASS") .. " " .. id .. " - " .. first(r.reason) }
  elseif ch == "x" and r.outcome == "xfailed" then
    return { self:paint("xfailed", "XFAIL") .. " " .. id .. " - " .. first(r.reason) }
  elseif ch == "s" and r.outcome == "skipped" then
    return { self:paint("skipped", "SKIPPED") .. " " .. id .. " - " .. first(r.reason or "skipped") }
  elseif ch == "R" and r.reruns then
    local n = #r.reruns
    return { self:paint("rerun", "RERUN") .. " " .. id .. " - " .. n .. (n == 1 and " rerun" or " reruns")
      .. (r.outcome == "failed" and ", failed every time" or (", then " .. r.outcome)) }
  elseif ch == "p" and r.outcome == "passed" then
    return { self:paint("passed", "PASSED") .. " " .. id }
  elseif ch == "E" and r.teardown_errors then
    local out = {}
    for _, e in ipairs(r.teardown_errors) do
      out[#out + 1] = self:paint("error", "ERROR") .. " " .. id .. " (teardown) - " .. first(e.message)
    end
    return out
  end
  return {}
end

---The "short test summary info" section (-r CHARS): one line per reported outcome, with reason.
---@param results table[] the run's results
function M:short_summary(results)
  local lines = {}
  for _, ch in ipairs(self.report) do
    if ch == "E" then
      for _, f in ipairs(self.collection_errors) do
        lines[#lines + 1] = self:paint("error", "ERROR") .. " " .. f.path .. " (collection) - "
          .. (tostring(f.error):match("^[^\n]*"))
      end
    end
    for _, r in ipairs(file_order(results)) do
      for _, l in ipairs(short_line(self, ch, r)) do lines[#lines + 1] = l end
    end
  end
  if #lines == 0 then return end
  self:line("=== short test summary info ===")
  for _, l in ipairs(lines) do self:line(l) end
end

---The "slowest durations" section (--durations N), as pytest prints it: one line per phase of a
---test (call: the test function; teardown: its finalizers and sandbox kills; each attempt of a
---rerun test), slowest first, "S.SSs when     id"; phases under --durations-min are counted,
---not shown (all are shown with -vv, as in pytest).
---@param results table[] the run's results, in collection order
function M:durations_section(results)
  local n = self.durations
  if not n or #results == 0 then return end
  local rows = {}
  local function add(d, when, r)
    if d then rows[#rows + 1] = { d = d, when = when, id = r.test.file .. "::" .. r.test.name } end
  end
  for _, r in ipairs(results) do
    for _, a in ipairs(r.reruns or {}) do
      add(a.call_duration, "call", r); add(a.teardown_duration, "teardown", r)
    end
    add(r.call_duration, "call", r); add(r.teardown_duration, "teardown", r)
  end
  if #rows == 0 then return end
  table.sort(rows, function(a, b)
    if a.d ~= b.d then return a.d > b.d end
    return a.id < b.id
  end)
  self:line(n == 0 and "=== slowest durations ===" or string.format("=== slowest %d durations ===", n))
  local last = (n == 0 or n > #rows) and #rows or n
  for i = 1, last do
    local row = rows[i]
    if row.d < self.durations_min and not (self.verbose_level and self.verbose_level >= 2) then
      self:line("")
      self:line(string.format("(%d durations < %gs hidden.  Use --durations-min 0 to show these "
        .. "durations.)", last - i + 1, self.durations_min))
      break
    end
    self:line(string.format("%02.2fs %-8s %s", row.d, row.when, row.id))
  end
  self:line("")
end

---The closing sections: the slowest durations (--durations), the short test summary (-r), the
---line of a run stopped by --maxfail, `note`, then the counts line, the very last line.
---@param s table { counts (the run record's final counts, abx.run.tally.final), seconds (wall
---  time), note? (a line before the counts), results (the run's results, any order),
---  maxfail_reached? (the run stopped starting tests at its --maxfail-th failure) }
function M:summary(s)
  self:end_progress()
  local results = {}
  for i, r in ipairs(s.results) do results[i] = r end
  table.sort(results, function(a, b) return (a.test.index or 0) < (b.test.index or 0) end)
  self:durations_section(results)
  self:short_summary(results)
  if self.maxfail and s.maxfail_reached and #results < self.ntests then
    if self.maxfail == 1 then
      self:line(string.format("stopped at the first failure (%s): %d of %d tests were not started",
        self.maxfail_flag, self.ntests - #results, self.ntests))
    else
      self:line(string.format("stopped after %d failures (%s): %d of %d tests were not started",
        self.maxfail, self.maxfail_flag, self.ntests - #results, self.ntests))
    end
  end
  if s.note then self:line(s.note) end
  self:line(M.counts_line(s.counts, s.seconds, s.retries))
end

---The counts line that ends a run ("3 passed, 1 failed, 0 skipped, 0 xfailed in 2.50s", with
---", N errors", ", N rerun" and ", N retries" when there are any: retries are the requests the
---client sent again after a gateway's bare answer, a 429 or a transport failure);
---`abxlua merge-reports` prints it too.
---@param c table counts {passed, failed, skipped, xfailed, errors?, rerun?}
---@param seconds number|nil wall time
---@param retries? integer
---@return string
function M.counts_line(c, seconds, retries)
  local s = string.format("%d passed, %d failed, %d skipped, %d xfailed", c.passed or 0,
    c.failed or 0, c.skipped or 0, c.xfailed or 0)
  if (c.errors or 0) > 0 then s = s .. string.format(", %d errors", c.errors) end
  if (c.rerun or 0) > 0 then s = s .. string.format(", %d rerun", c.rerun) end
  if (retries or 0) > 0 then s = s .. string.format(", %d retries", retries) end
  return s .. string.format(" in %.2fs", seconds or 0)
end

return M
