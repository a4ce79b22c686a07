-- slow-ready.lua: scenario of the slow-ready fixture template (tests/templates/ready): its
-- ready_cmd succeeds 12 s after the start, beyond the config's request_timeout (5 s); the
-- create's deadline follows the template's readiness (create_timeout), not request_timeout.
local t = require("abx.test")

t.test("a create that waits 12 s for ready_cmd succeeds with request_timeout 5 s", function(ctx)
  local r = ctx.template_sandbox.commands:run("cat /tmp/slow-ready")
  t.eq(r.stdout, "up\n", "handed out once ready_cmd succeeded")
end)
