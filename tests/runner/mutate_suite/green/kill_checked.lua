-- The suite of runner:mutate_cli (tests/runner/mutate_cli.sh): one test that checks a kill (it
-- catches the kill-noop mutant) and none that reads endAt (end-at-missing survives it).
local t = require("abx.test")

t.test("a killed sandbox is gone", function(ctx)
  local sbx = ctx.sandbox_factory({})
  t.eq(sbx.commands:run("echo alive").stdout, "alive\n")
  t.eq(ctx.conn:kill(sbx.id), true)
  t.raises("SandboxNotFound", function() ctx.conn:get_info(sbx.id) end)
end)
