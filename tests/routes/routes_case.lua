-- Route-version case, run against the fake control plane of test_routes.py: create, connect with
-- a timeout, connect with memory = false (v2 only), kill.
local t = require("abx.test")

t.test("create and connect go through the provider's route version", function(ctx)
  local sbx = ctx.conn:create({ template = "base", auto_pause = true, auto_resume = true })
  local again = ctx.conn:connect(sbx.id, { timeout = 60 })
  t.eq(again.id, sbx.id)
  if ctx.conn.v2_routes then
    ctx.conn:connect(sbx.id, { memory = false })
    t.raises("InvalidArgument", function() ctx.conn:create({ secure = false }) end)
  else
    t.raises("InvalidArgument", function() ctx.conn:connect(sbx.id, { memory = false }) end)
  end
  t.eq(ctx.conn:kill(sbx.id), true)
end)
