-- Runner case: t.before_each / t.after_each. before_each runs before each test of the file (in
-- declaration order, with the test's ctx); after_each runs after each test, newest first, also
-- when the test failed, before the test's ctx.finally and fixture teardowns; a failing after_each
-- is a teardown error of that test. A fixture with a failing teardown is a teardown error of the
-- last test of its scope; a fixture whose function fails is made once and fails every test that
-- uses it with that error.
-- Expected (-j 1, in file order): 4 passed, 3 failed, 2 errors; exit code 1.
-- expect-line: ^FAILED +tests/runner/hooks\.lua::a failing test still gets its after_each \([0-9.]+s\) - Assertion$
-- expect-line: ^ERROR +tests/runner/hooks\.lua::after_each fails here \(teardown, after_each\): .*hooks\.lua:[0-9]+: after_each exploded
-- expect-line: ^FAILED +tests/runner/hooks\.lua::a broken file fixture fails its users \([0-9.]+s\) - LuaError$
-- expect-line: ^FAILED +tests/runner/hooks\.lua::every user, with the first error \([0-9.]+s\) - LuaError$
-- expect-line: broken fixture exploded 1
-- expect-no-line: broken fixture exploded 2
-- expect-line: ^ERROR +tests/runner/hooks\.lua::the last test of the file \(teardown, fixture leaky\): .*hooks\.lua:[0-9]+: leaky teardown exploded
-- expect-no-line: ^ERROR +tests/runner/hooks\.lua::(the hooks ran|a failing test still|the log)
local t = require("abx.test")
local log = {}
local broken_calls = 0

t.before_each(function(ctx) log[#log + 1] = "before 1 " .. ctx.test_name end)
t.before_each(function(ctx) log[#log + 1] = "before 2 " .. ctx.test_name end)
t.after_each(function(ctx) log[#log + 1] = "after 1 " .. ctx.test_name end)
t.after_each(function(ctx)
  log[#log + 1] = "after 2 " .. ctx.test_name
  if ctx.test_name == "after_each fails here" then error("after_each exploded") end
end)

t.fixture("leaky", { scope = "file" }, function()
  return "leaky", function() error("leaky teardown exploded") end
end)

t.fixture("broken", { scope = "file" }, function()
  broken_calls = broken_calls + 1
  error("broken fixture exploded " .. broken_calls)
end)

t.test("the hooks ran before this test", function(ctx)
  ctx.finally(function() log[#log + 1] = "finally " .. ctx.test_name end)
  t.eq(log, { "before 1 the hooks ran before this test", "before 2 the hooks ran before this test" })
  t.eq(ctx.leaky, "leaky")
end)

t.test("a failing test still gets its after_each", function()
  t.eq("actual", "expected")
end)

t.test("after_each fails here", function() end)

t.test("the log: after_each newest first, then ctx.finally, after failures too", function()
  local a, b = "the hooks ran before this test", "a failing test still gets its after_each"
  t.eq({ table.unpack(log, 3, 10) }, { "after 2 " .. a, "after 1 " .. a, "finally " .. a,
    "before 1 " .. b, "before 2 " .. b, "after 2 " .. b, "after 1 " .. b,
    "before 1 after_each fails here" })
end)

t.test("a broken file fixture fails its users", function(ctx)
  local _ = ctx.broken
end)

t.test("every user, with the first error", function(ctx)
  local _ = ctx.broken
end)

t.test("the last test of the file", function(ctx)
  t.eq(ctx.leaky, "leaky")
  t.eq(broken_calls, 1)
end)
