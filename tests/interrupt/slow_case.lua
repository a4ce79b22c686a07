-- Interrupt case: four tests each hold a sandbox and wait long enough to be interrupted.
local t = require("abx.test")
local core = require("abx.core")

for i = 1, 4 do
  t.test("holds a sandbox " .. i, function(ctx)
    local s = ctx.base_sandbox
    t.ok(s.id)
    core.sleep(60)
  end)
end
