-- Runner case: live-sandbox slots follow the sandbox (issue 9, item 3), max_sandboxes 5, -j 4.
-- Expected: a test that creates and kills 20 sandboxes in sequence (sbx:kill and conn:kill)
-- passes quickly; four tests that each hold five sandboxes at once (declared with
-- `sandboxes = 5`) all pass; a test that asks to hold six fails at once with InvalidArgument
-- naming max_sandboxes; 5 passed, 1 failed, exit 1. Every sandbox is killed by its test's
-- teardown (none is left for the end).
-- args: -j 4
-- expect-line: ^PASSED +tests/runner/slots_follow\.lua::20 sandboxes created and killed in sequence
-- expect-line: ^PASSED +tests/runner/slots_follow\.lua::holds five sandboxes 4
-- expect-line: ^FAILED +tests/runner/slots_follow\.lua::six at once is more than max_sandboxes \([0-9.]+s\) - InvalidArgument$
-- expect-line: would hold 6 live sandboxes, more than max_sandboxes = 5
-- expect-line: ^cleanup: 45 sandboxes created, 0 killed at the end \(tracked\), 0 found by tag
-- expect-max-seconds: 100
local t = require("abx.test")

t.test("20 sandboxes created and killed in sequence", { timeout = 120 }, function(ctx)
  for i = 1, 20 do
    local sbx = ctx.sandbox_factory({})
    if i % 2 == 0 then t.eq(sbx:kill(), true) else t.eq(ctx.conn:kill(sbx.id), true) end
  end
end)

for i = 1, 4 do
  t.test("holds five sandboxes " .. i, { timeout = 120, sandboxes = 5 }, function(ctx)
    local ids = {}
    for _ = 1, 5 do ids[#ids + 1] = ctx.sandbox_factory({}).id end
    t.eq(#ids, 5)
    require("abx.core").sleep(0.3)
  end)
end

t.test("six at once is more than max_sandboxes", { timeout = 60 }, function(ctx)
  for _ = 1, 6 do ctx.sandbox_factory({}) end
end)

