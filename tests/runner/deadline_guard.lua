-- Runner case: a test cannot swallow its deadline (issue 9, item 1).
-- Expected: each of the four tests with timeout = 1 fails with kind Timeout after about 1 s, even
-- though each catches every error it sees (pcall in a busy loop, pcall around a wait, a retry
-- helper that waits again, a body that catches the Timeout and returns normally); the test after
-- them runs and passes: 1 passed, 4 failed; exit code 1; the run ends well under 25 s.
-- expect-line: ^FAILED +tests/runner/deadline_guard\.lua::pcall busy loop \((0\.9[0-9]|1\.[0-9][0-9])s\) - Timeout$
-- expect-line: ^FAILED +tests/runner/deadline_guard\.lua::pcall around a wait, in a loop \((0\.9[0-9]|1\.[0-9][0-9])s\) - Timeout$
-- expect-line: ^FAILED +tests/runner/deadline_guard\.lua::a busy loop inside a coroutine \((0\.9[0-9]|1\.[0-9][0-9])s\) - Timeout$
-- expect-line: ^FAILED +tests/runner/deadline_guard\.lua::catches the Timeout and returns \((0\.9[0-9]|1\.[0-9][0-9])s\) - Timeout$
-- expect-line: ^PASSED +tests/runner/deadline_guard\.lua::the next test runs
-- expect-line: deadline_guard\.lua:[0-9]+: .*deadline passed while it was running Lua code
-- expect-no-line: went on after its deadline
-- expect-max-seconds: 15
local t = require("abx.test")
local core = require("abx.core")

t.test("pcall busy loop", { timeout = 1 }, function()
  while true do
    pcall(function() local x = 0; for i = 1, 100 do x = x + i end end)
  end
end)

t.test("pcall around a wait, in a loop", { timeout = 1 }, function()
  while true do pcall(core.sleep, 0.05) end
end)

t.test("a busy loop inside a coroutine", { timeout = 1 }, function()
  local co = coroutine.wrap(function() while true do pcall(function() end) end end)
  while true do pcall(co) end
end)

t.test("catches the Timeout and returns", { timeout = 1 }, function()
  local ok = pcall(core.sleep, 5)
  t.eq(ok, false)
  -- returning normally after the deadline is still a failure
end)

t.test("the next test runs", { timeout = 5 }, function()
  local t0 = core.now()
  core.sleep(0.2)
  t.ok(core.now() - t0 < 2)
end)
