-- Masking case (run by test_masking.py against leaky_api.py): both tests fail on purpose with
-- messages full of secrets; none may reach any output.
local t = require("abx.test")

t.test("command output with secrets appears in a failure", function(ctx)
  local sbx = ctx.conn:create({ template = "base" })
  t.eq(sbx.commands:run("echo").stdout, "nothing")
end)

t.test("an error message with secrets appears in a failure", function(ctx)
  ctx.conn:get_info("iecho")
end)
