-- Suite case: after 02's last test its file fixture was torn down (once, while its sandbox was
-- still running) and the sandbox is gone; the run-scoped fixture is not torn down yet.
local t = require("abx.test")
local mylib = require("lib.mylib")

t.test("the file fixture of 02 was torn down after its last test", function(ctx)
  t.eq(mylib.log, { "run_token made", "shared_sbx made", "shared_sbx torn down, running=true" })
  t.raises("SandboxNotFound", function() ctx.conn:get_info(mylib.shared_id) end)
end)
