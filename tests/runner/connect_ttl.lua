-- Runner case: sbx:connect() without a timeout keeps the lifetime the sandbox was created with
-- (issue 9, item 6; docs/protocol/e2b-control-plane.md §3.2 ConnectSandbox, §3.4 connect: TTL now +
-- timeout, only extended when running), instead of a fixed 300 s.
-- Expected (-j 1): every test passes; exit code 0.
-- expect-line: ^PASSED +tests/runner/connect_ttl\.lua::connect without a timeout keeps the created lifetime
-- expect-line: ^PASSED +tests/runner/connect_ttl\.lua::resume without a timeout keeps the created lifetime
-- expect-no-line: ^(FAILED|ERROR)
local t = require("abx.test")
local core = require("abx.core")
local sandbox = require("abx.sandbox")

local function remaining(sbx)
  return sandbox.parse_time(sbx:get_info().end_at) - core.time()
end

t.test("connect without a timeout keeps the created lifetime", { timeout = 120 }, function(ctx)
  local sbx = ctx.sandbox_factory({ timeout = 1800 })
  sbx:set_timeout(60)
  t.ok(remaining(sbx) < 100, "set_timeout shortened the TTL")
  sbx:connect()
  local left = remaining(sbx)
  t.ok(left > 1700, "connect() extended the TTL to the created 1800 s, left: " .. left)
  sbx:connect({ timeout = 2400 })
  t.ok(remaining(sbx) > 2300, "an explicit timeout wins")
end)

t.test("resume without a timeout keeps the created lifetime", { timeout = 180, requires = { "pause" } },
  function(ctx)
    local sbx = ctx.sandbox_factory({ timeout = 1800 })
    t.eq(sbx:pause(), true)
    sbx:connect()
    t.eq(sbx.resumed, true)
    local left = remaining(sbx)
    t.ok(left > 1700, "the resumed sandbox has the created 1800 s, left: " .. left)
  end)
