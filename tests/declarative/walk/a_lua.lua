-- A Lua scenario beside YAML ones (tests/declarative/test_declarative.py, mode collect).
local t = require("abx.test")

t.test("lua sandbox echoes", function(ctx)
  t.eq(ctx.base_sandbox.commands:run("echo lua").stdout, "lua\n")
end)
