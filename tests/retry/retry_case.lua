-- Retry case, run against tests/retry/fake_api.py (see test_retry.py).
local t = require("abx.test")

t.test("a create whose answer was lost adopts the sandbox instead of creating a duplicate", function(ctx)
  local sbx = ctx.conn:create({ template = "base", metadata = { case = "retry" } })
  local all = ctx.conn:list({ metadata = { case = "retry" } })
  t.eq(#all, 1, "sandboxes carrying the case tag")
  t.eq(all[1].sandbox_id, sbx.id)
  t.eq(ctx.conn:kill(sbx.id), true) -- the first DELETE answers 429 Retry-After: 1
end)
