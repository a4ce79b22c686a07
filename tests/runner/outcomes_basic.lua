-- Runner case: the basic outcomes, one test each.
-- Expected: 1 passed, 2 failed (an assertion, a plain Lua error), 2 skipped (t.skip, opts.skip);
-- exit code 1. The failure details name the scenario line of the failed assertion.
-- expect-line: ^PASSED +tests/runner/outcomes_basic\.lua::passes \([0-9]+\.[0-9]{2}s\)$
-- expect-line: ^FAILED +tests/runner/outcomes_basic\.lua::assertion fails \([0-9.]+s\) - Assertion$
-- expect-line: ^FAILED +tests/runner/outcomes_basic\.lua::plain Lua error fails \([0-9.]+s\) - LuaError$
-- expect-line: ^SKIPPED +tests/runner/outcomes_basic\.lua::skipped by t\.skip \([0-9.]+s\) - not on this platform$
-- expect-line: ^SKIPPED +tests/runner/outcomes_basic\.lua::skipped by opts\.skip \([0-9.]+s\) - declared skip$
-- expect-line: tests/runner/outcomes_basic\.lua:20: .*expected 2, got 1
-- expect-line: tests/runner/outcomes_basic\.lua:26: .*attempt to index a nil value
-- expect-no-line: never reached
local t = require("abx.test")

t.test("passes", { markers = { "e2e_slow" } }, function()
  t.eq(1 + 1, 2)
  t.eq({ a = { 1, 2 } }, { a = { 1, 2 } })
end)

t.test("assertion fails", function()
  t.eq(1, 2)
  error("never reached after a failed assertion")
end)

t.test("plain Lua error fails", function()
  local missing = nil
  return missing.field
end)

t.test("skipped by t.skip", function()
  t.skip("not on this platform")
  error("never reached after t.skip")
end)

t.test("skipped by opts.skip", { skip = "declared skip" }, function()
  error("never reached: a test with opts.skip does not run")
end)
