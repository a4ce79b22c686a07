-- A prebuilt template the local platform does not have: the run skips this test naming it.
local t = require("abx.test")

t.test("never runs: the provider has no template absent-official", function(ctx)
  t.ok(ctx.template_sandbox == nil, "unreachable")
end)
