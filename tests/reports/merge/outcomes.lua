-- Reports case (merge-reports, --ctrf, GitHub annotations): one test per outcome, each
-- independent of the others (a shard runs any subset). Run with
-- --config tests/runner/ki/abxlua.yaml (known issue KI-900 applies everywhere).
-- Expected: 2 passed, 3 failed (an assertion, the escapes test, the XPASS), 1 skipped,
-- 1 xfailed, 1 error (a teardown error of a passed test).
local t = require("abx.test")
local core = require("abx.core")

t.test("passes", function() t.eq(1, 1) end)

t.test("prints and passes", function() print("output of a passing test") end)

t.test("fails on an assertion", function() t.eq(1, 2) end)

t.test("escapes, commas: and 100%", function()
  core.error("Conflict", 409, "100% broken, a: b\r\nsecond line")
end)

t.test("skipped by opts", { skip = "declared skip" }, function() end)

t.test("xfails", { known_issue = "KI-900", raises = "Assertion" }, function() t.eq(1, 2) end)

t.test("xpasses", { known_issue = "KI-900" }, function() t.eq(1, 1) end)

t.test("teardown error", function(ctx)
  ctx.finally(function() error("finalizer exploded") end)
end)
