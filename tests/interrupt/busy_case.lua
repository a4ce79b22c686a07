-- Interrupt case: two tests each hold a sandbox and loop in Lua, catching every error they see
-- (a retry helper gone wrong); SIGINT must still stop them (issue 9, item 1).
local t = require("abx.test")

for i = 1, 2 do
  t.test("busy with a sandbox " .. i, { timeout = 600 }, function(ctx)
    local s = ctx.base_sandbox
    t.ok(s.id)
    io.stdout:write("busy loop started\n")
    while true do pcall(function() local x = 0; for k = 1, 50 do x = x + k end end) end
  end)
end
