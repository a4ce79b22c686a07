-- Runner case: fixtures still up when the run stops early (-x) are torn down at the end, before
-- the cleanup sweep: the file fixture's sandbox (its file's last test never ran) and the run
-- fixture's sandbox are killed by their teardown, so the cleanup finds nothing left.
-- Expected (-x -j 1): 1 failed, the second test not started; exit code 1.
-- args: -x -j 1
-- expect-line: ^FAILED +tests/runner/fixture_exitfirst\.lua::uses both fixtures, then fails
-- expect-line: ^cleanup: 2 sandboxes created, 0 killed at the end \(tracked\), 0 found by tag
-- expect-line: ^stopped at the first failure \(-x\): 1 of 2 tests were not started
-- expect-no-line: ^ERROR
local t = require("abx.test")

t.fixture("file_sbx", { scope = "file" }, function(ctx) return ctx.base_sandbox end)
t.fixture("run_sbx", { scope = "run" }, function(ctx) return ctx.sandbox_factory({}) end)

t.test("uses both fixtures, then fails", function(ctx)
  t.neq(ctx.file_sbx.id, ctx.run_sbx.id)
  t.fail("stop here")
end)

t.test("never started", function(ctx)
  local _ = ctx.file_sbx
end)
