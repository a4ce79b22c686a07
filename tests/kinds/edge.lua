-- Kinds case with real sandboxes of the local platform (run by tests/runner/run_case.sh from the
-- source root, default provider `local`): the edge's answer for a paused sandbox, a killed one and
-- a live one with nothing listening on the port are three kinds, each with its HTTP status, on the
-- envd path (files) and on another port's client (the code interpreter's, port 49999, where a
-- base sandbox listens on nothing).
-- Sources: docs/protocol/e2b-control-plane.md §7.4; e2b-dev/infra
-- packages/shared/pkg/proxy/template/{sandbox_paused,sandbox_not_found,port_closed}.go.
-- Expected: 3 passed, exit 0.
-- args: -j 3
-- expect-line: ^3 passed, 0 failed
local t = require("abx.test")

t.test("a paused sandbox answers SandboxPaused (502 with canAutoResume) and is not running", { requires = { "pause" } },
  function(ctx)
  local sbx = ctx.sandbox_factory({})
  sbx.files:write("/home/user/p.txt", "p")
  t.eq(sbx:pause(), true)
  local err = t.raises("SandboxPaused", function() sbx.files:read("/home/user/p.txt") end)
  t.eq(err.status, 502)
  err = t.raises("SandboxPaused", function() sbx:list_code_contexts() end)
  t.eq(err.status, 502)
  t.eq(sbx:is_running(), false)
  sbx:connect({})
  t.eq(sbx.files:read("/home/user/p.txt"), "p", "after connect the sandbox answers again")
end)

t.test("a killed sandbox answers SandboxGone (502)", function(ctx)
  local sbx = ctx.sandbox_factory({})
  t.eq(sbx:kill(), true)
  local err = t.raises("SandboxGone", function() sbx.files:read("/etc/hostname") end)
  t.eq(err.status, 502)
  err = t.raises("SandboxGone", function() sbx:list_code_contexts() end)
  t.eq(err.status, 502)
  t.eq(sbx:is_running(), false)
end)

t.test("a live sandbox with nothing on the port answers PortNotOpen (502)", function(ctx)
  local sbx = ctx.sandbox_factory({})
  local err = t.raises("PortNotOpen", function() sbx:list_code_contexts() end)
  t.eq(err.status, 502)
  t.eq(sbx:is_running(), true, "the sandbox itself is running")
end)
