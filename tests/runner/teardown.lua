-- Runner case: ctx.finally runs at teardown, newest first, after a failure too, while the test's
-- sandbox is still alive; a failing finalizer is reported as ERROR beside the test's own outcome.
-- Expected (-j 1, in file order): 3 passed, 1 failed, 1 error; exit code 1.
-- expect-line: ^FAILED +tests/runner/teardown\.lua::finalizers run after a failure \([0-9.]+s\) - Assertion$
-- expect-line: ^PASSED +tests/runner/teardown\.lua::the finalizers ran, newest first
-- expect-line: ^PASSED +tests/runner/teardown\.lua::a failing finalizer
-- expect-line: ^ERROR +tests/runner/teardown\.lua::a failing finalizer \(teardown, finally\): .*teardown\.lua:[0-9]+: finalizer exploded
-- expect-line: ^PASSED +tests/runner/teardown\.lua::the other finalizers of that test still ran
-- expect-no-line: ^ERROR +tests/runner/teardown\.lua::(finalizers run|the finalizers ran|the other)
local t = require("abx.test")
local log = {}

t.test("finalizers run after a failure", function(ctx)
  local sbx = ctx.base_sandbox
  ctx.finally(function() log[#log + 1] = "registered first" end)
  ctx.finally(function()
    log[#log + 1] = "registered second"
    log.sandbox_running = sbx:is_running()
  end)
  t.eq("actual", "expected")
end)

t.test("the finalizers ran, newest first", function()
  t.eq(log[1], "registered second")
  t.eq(log[2], "registered first")
  t.eq(#log, 2)
  t.eq(log.sandbox_running, true, "the sandbox is killed only after the finalizers")
end)

t.test("a failing finalizer", function(ctx)
  ctx.finally(function() log.after_failing = true end)
  ctx.finally(function() error("finalizer exploded") end)
  ctx.finally(function() log.before_failing = true end)
end)

t.test("the other finalizers of that test still ran", function()
  t.eq(log.before_failing, true)
  t.eq(log.after_failing, true)
end)
