-- abx.console: the console report: a header, one line per test as it finishes, failure details,
-- the cleanup result, and the summary as the very last line:
--   N passed, N failed, N skipped, N xfailed in S.SSs      (", N errors" when there are any)
-- Everything goes through core.write, which masks registered secrets.
local core = require("abx.core")

local M = {}
M.__index = M

local COLORS = { passed = "\27[32m", failed = "\27[31m", skipped = "\27[33m", error = "\27[31m",
  xfailed = "\27[33m", xpassed = "\27[31m", reset = "\27[0m" }
local LABELS = { xpassed = "XPASS" }

function M.new(opts)
  local color = core.isatty(1) and not core.getenv("NO_COLOR")
  return setmetatable({ color = color, verbose = opts and opts.verbose }, M)
end

function M:paint(kind, text)
  if not self.color or not COLORS[kind] then return text end
  return COLORS[kind] .. text .. COLORS.reset
end

function M:line(text) core.write(text .. "\n") end

function M:header(pname, pinfo, run_id, ntests, jobs)
  self:line(string.format("abxlua %s: provider %s (%s), run id %s, %d tests, -j %d",
    (core.version()), pname, pinfo.endpoint or "no endpoint", run_id, ntests, jobs))
end

function M:collection_error(f)
  self:line(self:paint("error", "ERROR") .. "   " .. f.path .. " (collection): " .. tostring(f.error))
end

function M:result(r)
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

function M:failures(results)
  local any = false
  for _, r in ipairs(results) do
    if r.outcome == "failed" and r.failure then
      if not any then self:line("\n=== failures ==="); any = true end
      self:line(string.format("--- %s::%s (line %d)", r.test.file, r.test.name, r.test.line or 0))
      self:line("    " .. (r.failure.message or "?"))
      if r.failure.traceback and (self.verbose or r.failure.kind == "LuaError") then
        self:line(r.failure.traceback)
      end
    end
  end
  if any then self:line("") end
end

function M:cleanup(report, tracker)
  local line = string.format("cleanup: %d sandboxes created, %d killed at the end (tracked), "
    .. "%d found by tag e2e=%s and killed", tracker.created, report.tracked, report.swept,
    tracker.run_id)
  self:line(line)
  for _, e in ipairs(report.errors) do self:line("cleanup error: " .. e) end
end

function M:internal_error(err)
  self:line("abxlua: internal error: " .. tostring(err))
end

---Counts outcomes.
function M.count(results)
  local c = { passed = 0, failed = 0, skipped = 0, xfailed = 0, xpassed = 0, errors = 0 }
  for _, r in ipairs(results) do
    c[r.outcome] = (c[r.outcome] or 0) + 1
    if r.outcome == "xpassed" then c.failed = c.failed + 1 end -- strict: an XPASS fails the run
  end
  return c
end

function M:summary(c, seconds, note)
  if note then self:line(note) end
  local s = string.format("%d passed, %d failed, %d skipped, %d xfailed", c.passed or 0,
    c.failed or 0, c.skipped or 0, c.xfailed or 0)
  if (c.errors or 0) > 0 then s = s .. string.format(", %d errors", c.errors) end
  self:line(s .. string.format(" in %.2fs", seconds))
end

return M
