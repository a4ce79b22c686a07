-- Runner case: per-test deadlines.
-- Expected: "sleeps past its timeout" (timeout=1, sleeps 30 s) fails with kind Timeout after about
-- 1 s; "busy loop past its timeout" (timeout=1, never yields) fails with Timeout after about 1 s;
-- the test after them still runs and passes: 1 passed, 2 failed; exit code 1; the whole run well
-- under 30 s.
-- expect-line: ^FAILED +tests/runner/timeout\.lua::sleeps past its timeout \((0\.9[0-9]|1\.[0-4][0-9])s\) - Timeout$
-- expect-line: ^FAILED +tests/runner/timeout\.lua::busy loop past its timeout \((0\.9[0-9]|1\.[0-4][0-9])s\) - Timeout$
-- expect-line: ^PASSED +tests/runner/timeout\.lua::the next test runs
-- expect-line: deadline passed while it was waiting
-- expect-line: deadline passed while it was running Lua code
-- expect-no-line: woke up after 30 s
-- expect-max-seconds: 12
local t = require("abx.test")
local core = require("abx.core")

t.test("sleeps past its timeout", { timeout = 1 }, function()
  core.sleep(30)
  t.fail("woke up after 30 s")
end)

t.test("busy loop past its timeout", { timeout = 1 }, function()
  local n = 0
  while true do n = n + 1 end
end)

t.test("the next test runs", { timeout = 5 }, function()
  local t0 = core.now()
  core.sleep(0.2)
  local slept = core.now() - t0
  t.ok(slept >= 0.19 and slept < 2, "slept " .. slept .. " s")
end)
