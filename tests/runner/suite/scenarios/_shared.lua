-- A helper named _*.lua: not a scenario. It defines a run-scoped fixture that every file
-- requiring it can use as ctx.run_token; its teardown runs once, at the end of the run.
local t = require("abx.test")
local mylib = require("lib.mylib")

local M = { made = 0 }

t.fixture("run_token", { scope = "run" }, function()
  M.made = M.made + 1
  mylib.log[#mylib.log + 1] = "run_token made"
  return "token-" .. M.made, function() mylib.log[#mylib.log + 1] = "run_token torn down" end
end)

return M
