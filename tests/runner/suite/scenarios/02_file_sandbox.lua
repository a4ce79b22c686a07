-- Suite case: a file-scoped sandbox fixture is created once, reused by the file's tests (one slot
-- of max_sandboxes 1 in all, so the tests can run at once), and torn down after the file's last
-- test; 03 checks that it is gone and that its teardown ran once.
local t = require("abx.test")
local mylib = require("lib.mylib")
require("_shared")

t.fixture("shared_sbx", { scope = "file" }, function(ctx)
  local sbx = ctx.sandbox_factory({})
  mylib.log[#mylib.log + 1] = "shared_sbx made"
  mylib.shared_id = sbx.id
  return sbx, function()
    mylib.log[#mylib.log + 1] = "shared_sbx torn down, running=" .. tostring(sbx:is_running())
  end
end)

for i = 1, 3 do
  t.test("test " .. i .. " reuses the file's sandbox", function(ctx)
    t.eq(ctx.shared_sbx.id, mylib.shared_id)
    t.eq(ctx.shared_sbx.commands:run("echo " .. i).stdout, i .. "\n")
    t.eq(ctx.run_token, "token-1", "the run-scoped fixture is made once per run")
  end)
end
