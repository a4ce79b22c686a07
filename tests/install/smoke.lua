-- The one-test scenario of the install checks (prefix.sh, deb.sh, dockerfile.sh): it is copied
-- into an empty directory and run there with the installed binary against the local provider.
local t = require("abx.test")

t.test("an installed abxlua runs a command in a local sandbox", function(ctx)
  local r = ctx.base_sandbox.commands:run("echo hello from $(uname -s)")
  t.eq(r.exit_code, 0)
  t.eq(r.stdout, "hello from Linux\n")
end)
