-- Fixture of tests/runner/progress.py: one test that runs a few seconds and passes, so that the
-- "still running" lines (off a terminal) and the status line (on one) have a test in flight to name.
local t = require("abx.test")
local core = require("abx.core")

t.test("sleeps 3 s", { timeout = 30 }, function()
  core.sleep(3)
end)
