-- slow-ready.lua: scenario of the slow-ready fixture template (tests/templates/ready): its
-- ready_cmd succeeds 12 s after the start, beyond the config's request_timeout (5 s); the
-- create's deadline follows the template's readiness (create_timeout), not request_timeout.
local t = require("abx.test")

t.test("a create that waits 12 s for ready_cmd succeeds with request_timeout 5 s", function(ctx)
  local r = ctx.template_sandbox.commands:run("cat /tmp/slow-ready")
  t.eq(r.stdout, "up\n", "handed out once ready_cmd succeeded")
end)

t.test("a create that outlives its deadline is a Timeout naming the deadline and its source", function(ctx)
  local _ = ctx.template_sandbox -- deployed
  -- create_timeout below request_timeout (5 s): the deadline is max of the two, 5 s, and the
  -- template needs 12 s (the platform's sandbox is found by the run's tag and killed at the end)
  local short = ctx.conn:with({ create_timeout = 1 })
  local ok, e = pcall(short.create, short, { template = "slow-ready" })
  t.eq(ok, false)
  t.eq(e.kind, "Timeout")
  t.match(e.message, "^POST [^ ]+/sandboxes: .* %(the create's deadline, 5 s: max%(request_timeout, "
    .. "create_timeout%), defaults%.create_timeout in the config; a local platform answers a "
    .. "create once the template's ready_cmd succeeds, within the template's ready_timeout%)$")
end)
