-- Runner case: a failure names the failing call's line in the test's own file (as pytest shows
-- the test's line), not the helper module that raised it, the client library or the runner: an
-- assertion in a helper (the helper's line follows as "raised in"), a platform error raised inside
-- the client library, a plain Lua error in a helper (its scenario traceback, without runner or
-- library frames), a deadline that stops a busy loop in a helper. The short summary line is
-- "Kind: message" without the location.
-- Expected: 4 failed; exit 1.
-- expect-line: ^    tests/runner/failure_where\.lua:22: Assertion: exit code: expected 0, got 3$
-- expect-line: ^    \(raised in tests/runner/helpers/check\.lua:10\)$
-- expect-line: ^    tests/runner/failure_where\.lua:26: .*NotFound
-- expect-line: ^    tests/runner/helpers/check\.lua:16: attempt to index a nil value \(local 'cfg'\)$
-- expect-line: ^      tests/runner/helpers/check\.lua:16: in
-- expect-line: ^      tests/runner/failure_where\.lua:30: in test "a Lua error in a helper"$
-- expect-line: ^    tests/runner/failure_where\.lua:34: Timeout: 
-- expect-line: ^FAILED tests/runner/failure_where\.lua::an assertion in a helper module - Assertion: exit code: expected 0, got 3$
-- expect-no-line: lib/abx/run/
-- expect-no-line: ^    lib/abx/client/
local t = require("abx.test")
local check = require("tests.runner.helpers.check")

t.test("an assertion in a helper module", function()
  check.exit_ok({ exit_code = 3, stderr = "boom" })
end)

t.test("a platform error raised inside the client library", function(ctx)
  ctx.conn:get_info("nosuchsandbox0000")
end)

t.test("a Lua error in a helper", function()
  check.broken()
end)

t.test("a deadline in a helper's busy loop", { timeout = 0.5 }, function()
  check.spin()
end)
