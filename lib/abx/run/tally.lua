-- abx.run.tally: the counts of a run, kept by the runner in its run record (abx.run.runner): one
-- `add` per finished test (after its reruns) while the run goes, then `final`, the counts the
-- summary line, the reports (record.counts) and the exit code are made from. The console only
-- shows them (abx.run.console: the live status line and the summary); it counts nothing itself.
local M = {}
M.__index = M

---The counts of a run before its first result: { passed, failed, skipped, xfailed, xpassed (one per
---outcome; `failed` without the XPASSes), errors (tests with teardown errors), rerun (earlier
---attempts of rerun tests), done (finished tests), failures (what --maxfail counts: failed,
---XPASS(strict) or a teardown error) }.
---@return table
function M.new()
  return setmetatable({ passed = 0, failed = 0, skipped = 0, xfailed = 0, xpassed = 0, errors = 0,
    rerun = 0, done = 0, failures = 0 }, M)
end

---Counts one finished test (after its reruns; abx.run.runner's result).
---@param r table the result: { outcome, teardown_errors?, reruns? }
---@return boolean failure whether it counts toward --maxfail
function M:add(r)
  self.done = self.done + 1
  self[r.outcome] = (self[r.outcome] or 0) + 1
  self.rerun = self.rerun + #(r.reruns or {})
  if r.teardown_errors then self.errors = self.errors + 1 end
  local failure = r.outcome == "failed" or r.outcome == "xpassed" or r.teardown_errors ~= nil
  if failure then self.failures = self.failures + 1 end
  return failure
end

---A test counted without teardown errors got its first one later (its file's or the run's
---fixtures torn down at the end of the run: abx.run.fixtures.end_run).
function M:teardown_error_added()
  self.errors = self.errors + 1
end

---The counts of the finished run (record.counts): { passed, failed (an XPASS counts as failed:
---strict, it fails the run), skipped, xfailed, xpassed, errors (tests with teardown errors and
---files that failed to collect), rerun (nil when no test ran) }.
---@param collection_errors integer the files that failed to collect
---@return table
function M:final(collection_errors)
  return { passed = self.passed, failed = self.failed + self.xpassed, skipped = self.skipped,
    xfailed = self.xfailed, xpassed = self.xpassed, errors = self.errors + collection_errors,
    rerun = self.done > 0 and self.rerun or nil }
end

return M
