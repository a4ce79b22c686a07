-- Runner case: a scenario cannot end the run or remove the deadline hook (issue 9, item 6).
-- Expected: os.exit(0) inside a test (and at load time of a helper) is an InvalidArgument failure
-- of that test, debug.sethook too; the test after them runs: 1 passed, 2 failed, exit code 1, with
-- the summary line printed (not a silent exit 0).
-- expect-line: ^FAILED +tests/runner/no_exit\.lua::os.exit does not end the run \([0-9.]+s\) - InvalidArgument$
-- expect-line: ^FAILED +tests/runner/no_exit\.lua::debug.sethook cannot remove the deadline hook \([0-9.]+s\) - InvalidArgument$
-- expect-line: os.exit is not available to scenarios
-- expect-line: ^PASSED +tests/runner/no_exit\.lua::the next test runs
local t = require("abx.test")

t.test("os.exit does not end the run", function()
  os.exit(0)
end)

t.test("debug.sethook cannot remove the deadline hook", function()
  debug.sethook()
end)

t.test("the next test runs", function()
  t.ok(true)
end)
