-- never-ready.lua: scenario of the never-ready fixture template (tests/templates/ready): a
-- create whose ready_cmd never succeeds fails after the template's ready_timeout (6 s), and its
-- error names the template, the ready command, the seconds waited, the probes, the last probe's
-- result and the start command's log tail; a probe whose envd call times out is tried again and
-- is never the verdict.
local t = require("abx.test")

local function pat(s) return (s:gsub("%p", "%%%0")) end

local READY = "echo probe-output; if [ -n \"$HANG_FIRST\" ] && mkdir /tmp/hung 2>/dev/null; then "
  .. "sleep 60; fi; [ -z \"$NEVER_READY\" ]"

-- The readiness error of a create with `envs`, checked in full; returns its message.
local function never_ready(ctx, envs, not_answered)
  t.eq(ctx.template_sandbox.commands:run("echo ok").stdout, "ok\n", "deployed, ready without NEVER_READY")
  local ok, e = pcall(ctx.sandbox_factory, { template = "never-ready", envs = envs })
  t.eq(ok, false, "the create fails")
  print(e.message)
  t.match(e.message, "failed to start sandbox: template 'never%-ready' %(%w+%): ready_cmd `"
    .. pat(READY) .. "` did not succeed within its ready timeout of 6 s %(waited %d+%.%d s; %d+ "
    .. "probes, " .. not_answered .. " of them not answered by envd; last probe: exit 1, output: "
    .. "probe%-output%); start_cmd log: never%-ready server starting %(NEVER_READY=1%)$")
  local waited = tonumber(e.message:match("waited (%d+%.%d) s"))
  t.ok(waited >= 6, "waited at least the ready timeout, got " .. tostring(waited))
  return e.message
end

t.test("a create whose ready_cmd never succeeds names template, command, wait, probe, log", function(ctx)
  never_ready(ctx, { NEVER_READY = "1" }, "%d+")
end)

t.test("a probe whose envd call timed out is counted, not the verdict", function(ctx)
  never_ready(ctx, { NEVER_READY = "1", HANG_FIRST = "1" }, "[1-9]%d*")
end)

t.test("a probe whose envd call timed out is tried again: the create succeeds", function(ctx)
  local sbx = ctx.sandbox_factory({ template = "never-ready", envs = { HANG_FIRST = "1" } })
  t.eq(sbx.commands:run("test -d /tmp/hung && echo hung-once").stdout, "hung-once\n",
    "the first probe hung")
end)
