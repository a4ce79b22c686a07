-- Suite case: helper modules are found through package.path from any working directory:
-- scenarios/?.lua (require("lib.mylib"), require("_shared")) and scenarios/lib/?.lua
-- (require("mylib")); the config of this project is the one in use (marker suite_only).
local t = require("abx.test")
local mylib = require("lib.mylib")
local same = require("mylib")
local shared = require("_shared")
local deep = require("sub.lib.deep")

t.test("helpers load from scenarios/ and scenarios/lib/", { markers = { "suite_only" } }, function()
  t.eq(mylib.shout("hi"), "HI!")
  t.eq(type(same.shout), "function")
  t.eq(deep.depth, 2)
  t.eq(type(shared.made), "number")
end)

t.test("a run-scoped fixture from a helper module", function(ctx)
  t.eq(ctx.run_token, "token-1")
end)
