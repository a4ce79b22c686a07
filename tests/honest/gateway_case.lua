-- A gateway's bare 502 in front of envd (issue 27 part 4; e2b-dev/E2B#1262), run by
-- tests/honest/test_gateway.py against `abxlua serve --faults` whose rules answer chosen envd
-- requests with a bare HTML 502 (selected with -k).
local t = require("abx.test")

t.test("gateway some: calls that start no work pass through a gateway's 502s", function(ctx)
  local sbx = ctx.sandbox_factory()
  for i = 1, 4 do sbx.files:write("/tmp/gw-" .. i .. ".txt", "bytes " .. i) end
  for i = 1, 4 do t.eq(sbx.files:read("/tmp/gw-" .. i .. ".txt"), "bytes " .. i) end
  for _ = 1, 3 do t.eq(sbx.files:get_info("/tmp/gw-1.txt").size, 7) end
  for _ = 1, 3 do t.ok(#sbx.files:list("/tmp") >= 4) end
  for _ = 1, 3 do t.eq(type(sbx.commands:list()), "table") end
  for _ = 1, 3 do t.eq(sbx:is_running(), true) end
end)

t.test("gateway always read: a file read fails Unavailable after its retries", function(ctx)
  local sbx = ctx.sandbox_factory()
  sbx.files:read("/etc/hostname")
end)

t.test("gateway always start: a command fails Unavailable after its retries", function(ctx)
  local sbx = ctx.sandbox_factory()
  sbx.commands:run("true")
end)

t.test("gateway every other start: each command runs exactly once through a gateway's 502s", function(ctx)
  local sbx = ctx.sandbox_factory()
  for i = 1, 6 do
    t.eq(sbx.commands:run("echo run-" .. i .. " >> /tmp/gw-starts; echo ok").stdout, "ok\n")
  end
  -- a Start retried after the gateway's page was not started twice: one line per command
  t.eq(sbx.files:read("/tmp/gw-starts"), "run-1\nrun-2\nrun-3\nrun-4\nrun-5\nrun-6\n")
end)
