-- Runner case: how a fixture can be misused, each failing the test that asks with a message
-- that says why: a file-scoped fixture using a test-scoped one or ctx.workdir, a second value
-- that is not a teardown function, a fixture that uses itself. A file fixture whose maker ran
-- out of the asking test's time is not kept: the next test makes it again.
-- A run-scoped fixture cannot use ctx.template_sandbox (a run spans template folders; a
-- file-scoped one can, in a template folder's script).
-- Expected (-j 1): 2 passed, 6 failed; exit code 1.
-- expect-line: fixture "per_test" has scope test: a file-scoped fixture cannot use it
-- expect-line: ctx\.workdir is a test's fixture \(a directory per test\), not a file-scoped one's
-- expect-line: ctx\.template_sandbox is a template folder's: a test's or a file-scoped fixture's, not a run-scoped one's
-- expect-line: fixture "bad_teardown" \(tests/runner/fixture_misuse\.lua:[0-9]+\): its function returned a string as the second value
-- expect-line: fixture "loop_a" uses itself
-- expect-line: ^FAILED +tests/runner/fixture_misuse\.lua::a slow fixture times out its first user \([0-9.]+s\) - Timeout$
-- expect-line: ^PASSED +tests/runner/fixture_misuse\.lua::the next user makes it again
-- expect-no-line: ^ERROR
local t = require("abx.test")
local core = require("abx.core")
local slow_calls = 0

t.fixture("per_test", function() return 1 end)
t.fixture("wide", { scope = "file" }, function(ctx) return ctx.per_test end)
t.fixture("wide_dir", { scope = "file" }, function(ctx) return ctx.workdir end)
t.fixture("run_template", { scope = "run" }, function(ctx) return ctx.template_sandbox end)
t.fixture("bad_teardown", function() return 1, "not a function" end)
t.fixture("loop_a", function(ctx) return ctx.loop_b end)
t.fixture("loop_b", function(ctx) return ctx.loop_a end)
t.fixture("slow", { scope = "file" }, function()
  slow_calls = slow_calls + 1
  if slow_calls == 1 then core.sleep(5) end
  return slow_calls
end)

t.test("a file fixture cannot use a test fixture", function(ctx) local _ = ctx.wide end)
t.test("a file fixture cannot use workdir", function(ctx) local _ = ctx.wide_dir end)
t.test("a run fixture cannot use template_sandbox", function(ctx) local _ = ctx.run_template end)
t.test("the second value is a teardown function", function(ctx) local _ = ctx.bad_teardown end)
t.test("a cycle is an error", function(ctx) local _ = ctx.loop_a end)
t.test("a slow fixture times out its first user", { timeout = 1 }, function(ctx)
  local _ = ctx.slow
end)
t.test("the next user makes it again", function(ctx)
  t.eq(ctx.slow, 2)
end)
t.test("and it is kept from then on", function(ctx)
  t.eq(ctx.slow, 2)
  t.eq(slow_calls, 2)
end)
