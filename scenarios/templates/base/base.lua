-- base: the official template's own check (ctx.template_sandbox), as the suite abxlua replaces
-- checked its official templates: shell and files, and the tools E2B's base template offers.
local t = require("abx.test")

t.test("base runs a shell command as user in its home", function(ctx)
  local r = ctx.template_sandbox.commands:run("id -un && pwd")
  t.eq(r.exit_code, 0, r.stderr)
  t.eq(r.stdout, "user\n/home/user\n")
end)

t.test("base has python, git, curl and a passwordless sudo", function(ctx)
  local r = ctx.template_sandbox.commands:run(
    "python --version && git --version >/dev/null && curl --version >/dev/null && sudo -n id -un")
  t.eq(r.exit_code, 0, r.stderr)
  t.match(r.stdout, "^Python 3%.%d+%.%d+\nroot\n$")
end)

t.test("base writes and reads back a file", function(ctx)
  local sbx = ctx.template_sandbox
  sbx.files:write("/home/user/base-roundtrip.txt", ctx.run_id)
  t.eq(sbx.files:read("/home/user/base-roundtrip.txt"), ctx.run_id)
end)
