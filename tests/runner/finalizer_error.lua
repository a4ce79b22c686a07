-- Runner case: every test passes but a finalizer fails.
-- Expected: 1 passed, 0 failed, 1 error; exit code 1 (a teardown error alone fails the run).
-- expect-line: ^PASSED +tests/runner/finalizer_error\.lua::passes but its finalizer fails
-- expect-line: ^ERROR +tests/runner/finalizer_error\.lua::passes but its finalizer fails \(teardown, finally\): .*cannot clean up
local t = require("abx.test")

t.test("passes but its finalizer fails", function(ctx)
  ctx.finally(function() error("cannot clean up") end)
  t.eq(1, 1)
end)
