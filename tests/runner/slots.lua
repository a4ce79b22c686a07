-- Runner case: sandbox slots are handed to waiting tests in order: 8 tests each hold two
-- sandboxes with max_sandboxes 5 and -j 4; all pass, none starves.
-- Expected: 8 passed, exit 0.
-- args: -j 4
local t = require("abx.test")
for i = 1, 8 do
  t.test("holds two sandboxes " .. i, { timeout = 120 }, function(ctx)
    local a = ctx.sandbox_factory({})
    local b = ctx.sandbox_factory({})
    t.ok(a.id ~= b.id)
    require("abx.core").sleep(0.5)
  end)
end
