-- Suite case: a scenario in a subdirectory of scenarios/ requires the same helpers.
local t = require("abx.test")

t.test("a nested scenario requires lib.mylib", function()
  t.eq(require("lib.mylib").shout("x"), "X!")
end)
