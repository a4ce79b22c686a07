-- never-ready.lua: scenario of the never-ready fixture template (tests/templates/ready): a
-- create whose ready_cmd never succeeds fails after the template's ready_timeout (3 s), and its
-- error names the template, the ready command, the seconds waited, the probes, the last probe's
-- result and the start command's log tail.
local t = require("abx.test")

local function pat(s) return (s:gsub("%p", "%%%0")) end

t.test("a create whose ready_cmd never succeeds names template, command, wait, probe, log", function(ctx)
  t.eq(ctx.template_sandbox.commands:run("echo ok").stdout, "ok\n", "deployed, ready without NEVER_READY")
  local ok, e = pcall(ctx.sandbox_factory, { template = "never-ready", envs = { NEVER_READY = "1" } })
  t.eq(ok, false, "the create fails")
  print(e.message)
  t.match(e.message, "failed to start sandbox: template 'never%-ready' %(%w+%): ready_cmd `"
    .. pat("echo probe-output; [ -z \"$NEVER_READY\" ]") .. "` did not succeed within its ready "
    .. "timeout of 3 s %(waited %d+%.%d s; %d+ probes, %d+ of them not answered by envd; last "
    .. "probe: exit 1, output: probe%-output%); start_cmd log: never%-ready server starting "
    .. "%(NEVER_READY=1%)$")
  local waited = tonumber(e.message:match("waited (%d+%.%d) s"))
  t.ok(waited >= 3, "waited at least the ready timeout, got " .. tostring(waited))
end)
