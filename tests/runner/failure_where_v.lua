-- Runner case: -v adds the scenario's own traceback to every failure, most recent call first:
-- the helper module's frame, the test file's local function, the test function; the runner's and
-- the client library's frames are dropped. The location is the innermost line of the test's own
-- file (run_step's call of the helper).
-- Expected: 1 failed; exit 1.
-- args: -v -j 1
-- expect-line: ^    tests/runner/failure_where_v\.lua:16: Assertion: exit code: expected 0, got 1$
-- expect-line: ^    stack traceback \(scenario frames, most recent call first\):$
-- expect-line: ^      tests/runner/helpers/check\.lua:10: in .*'exit_ok'$
-- expect-line: ^      tests/runner/failure_where_v\.lua:16: in upvalue 'run_step'$
-- expect-line: ^      tests/runner/failure_where_v\.lua:20: in test "a step of the test fails in a helper"$
-- expect-no-line: lib/abx/
local t = require("abx.test")
local check = require("tests.runner.helpers.check")

local function run_step(code) check.exit_ok({ exit_code = code }) end

t.test("a step of the test fails in a helper", function()
  run_step(0)
  run_step(1)
end)
