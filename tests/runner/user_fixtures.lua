-- Runner case: user fixtures (t.fixture). A file-scoped sandbox fixture is made once and reused by
-- every test of the file; with max_sandboxes 1 (tests/runner/suite/config/abxlua.yaml) and -j 3
-- the tests run at once, so the shared sandbox must hold one slot in all, not one per test. A
-- test-scoped fixture is made per test and torn down (its teardown function, then ctx.finally)
-- after it; a fixture may use another; one that returns nil is still made once; a run-scoped
-- fixture is made once. The file fixture's sandbox is killed by its teardown, none at the end.
-- Expected: 6 passed; exit code 0.
-- args: -j 3 --config tests/runner/suite/config/abxlua.yaml
-- expect-line: ^cleanup: 1 sandboxes created, 0 killed at the end \(tracked\), 0 found by tag
-- expect-no-line: ^(FAILED|ERROR)
local t = require("abx.test")
local core = require("abx.core")
local made = { shared = 0, per_test = 0, nothing = 0, run = 0 }
local log = {}

t.fixture("shared", { scope = "file" }, function(ctx)
  made.shared = made.shared + 1
  core.sleep(0.3) -- the other tests ask for it meanwhile: they wait for this one, not make theirs
  local sbx = ctx.base_sandbox
  ctx.finally(function() log[#log + 1] = "shared finally" end)
  return sbx, function() log[#log + 1] = "shared teardown" end
end)

t.fixture("counter", function(ctx)
  made.per_test = made.per_test + 1
  local n = made.per_test
  ctx.finally(function() log[#log + 1] = "counter finally " .. n end)
  return { n = n, test = ctx.test_name }, function() log[#log + 1] = "counter teardown " .. n end
end)

t.fixture("greeting", { scope = "test" }, function(ctx)
  return "hello from " .. ctx.counter.test
end)

t.fixture("nothing", { scope = "file" }, function()
  made.nothing = made.nothing + 1
  return nil
end)

t.fixture("once", { scope = "run" }, function(ctx)
  made.run = made.run + 1
  t.eq(ctx.scope, "run")
  return ctx.run_id
end)

for i = 1, 3 do
  t.test("parallel test " .. i .. " shares the file sandbox", { timeout = 60 }, function(ctx)
    local sbx = ctx.shared
    t.eq(sbx:is_running(), true)
    t.eq(sbx.commands:run("echo " .. i).stdout, i .. "\n")
    t.ok(rawequal(ctx.shared, sbx))
    t.eq(made.shared, 1, "the file fixture is made once")
    t.eq(ctx.once, ctx.run_id)
    core.sleep(0.5) -- all three hold the shared sandbox at once
  end)
end

t.test("a test-scoped fixture is made per test, and may use another", function(ctx)
  local c = ctx.counter
  t.ok(rawequal(ctx.counter, c), "made once per test")
  t.eq(c.test, "a test-scoped fixture is made per test, and may use another")
  t.eq(ctx.greeting, "hello from " .. c.test)
  t.eq(ctx.nothing, nil)
  t.eq(ctx.nothing, nil)
  t.eq(made.nothing, 1, "a nil value is made once")
  log.first = c.n
end)

t.test("its teardown ran after that test: teardown function, then ctx.finally", function(ctx)
  local n = log.first
  t.eq({ log[1], log[2] }, { "counter teardown " .. n, "counter finally " .. n })
  t.neq(ctx.counter.n, n, "a new value for this test")
end)

t.test("file and run fixtures were made once", function(ctx)
  t.eq(ctx.shared:is_running(), true)
  t.eq(made.shared, 1)
  t.eq(made.run, 1)
  t.eq(ctx.once, ctx.run_id)
end)
