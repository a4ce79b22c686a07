-- Runner case: t.eventually retries until fn succeeds, gives up after its timeout with the last
-- error, and stops at the test's own deadline.
-- Expected: 4 passed, 1 failed ("the test deadline stops it", Timeout after about 1 s); exit 1.
-- expect-line: ^PASSED +tests/runner/eventually\.lua::succeeds on the third try
-- expect-line: ^PASSED +tests/runner/eventually\.lua::gives up after its timeout
-- expect-line: ^PASSED +tests/runner/eventually\.lua::re-raises the last typed error
-- expect-line: ^PASSED +tests/runner/eventually\.lua::retries failed assertions
-- expect-line: ^FAILED +tests/runner/eventually\.lua::the test deadline stops it \((0\.9[0-9]|1\.[0-4][0-9])s\) - Timeout$
-- expect-max-seconds: 15
local t = require("abx.test")
local core = require("abx.core")

t.test("succeeds on the third try", function()
  local calls = 0
  local t0 = core.now()
  local a, b = t.eventually(function()
    calls = calls + 1
    if calls < 3 then error("not yet") end
    return "ready", calls
  end, { timeout = 5, interval = 0.1 })
  t.eq(a, "ready")
  t.eq(b, 3)
  t.eq(calls, 3)
  local took = core.now() - t0
  -- sleeps are never shorter than asked; the upper bound only tells "retried at its interval"
  -- from "waited for its 5 s timeout", with room for a busy machine (issue 22)
  t.ok(took >= 0.19 and took < 4, "two intervals of 0.1 s, took " .. took)
end)

t.test("gives up after its timeout", function()
  local calls = 0
  local t0 = core.now()
  local err = t.raises("Assertion", function()
    t.eventually(function() calls = calls + 1; error("still broken") end,
      { timeout = 0.5, interval = 0.1 })
  end)
  local took = core.now() - t0
  t.match(err.message, "gave up after 0%.5 s")
  t.match(err.message, "still broken")
  -- a late wake-up on a busy machine means fewer calls, never more (issue 22)
  t.ok(calls >= 2 and calls <= 7, "at most timeout/interval + 1 calls, got " .. calls)
  t.ok(took >= 0.35 and took < 10, "gave up after about 0.5 s, not the 30 s default, took " .. took)
end)

t.test("re-raises the last typed error", function()
  local n = 0
  local err = t.raises("NotFound", function()
    t.eventually(function()
      n = n + 1
      core.error("NotFound", 404, "attempt " .. n)
    end, { timeout = 0.3, interval = 0.1 })
  end)
  t.match(err.message, "attempt " .. n)
end)

t.test("retries failed assertions", function()
  local value = 0
  t.eventually(function()
    value = value + 1
    t.eq(value, 4)
  end, { timeout = 5, interval = 0.05 })
  t.eq(value, 4)
end)

t.test("the test deadline stops it", { timeout = 1 }, function()
  t.eventually(function() error("never") end, { timeout = 30, interval = 0.1 })
end)
