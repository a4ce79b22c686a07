-- Large and refused bodies against tests/hostile/hostile_api.py (run by tests/kinds/test_bodies.py):
-- a body whose Content-Length announces more than its limit fails at once, before its bytes are
-- read, plain and streamed; an upload the platform refuses with 413 is PayloadTooLarge.
-- Sources: docs/protocol/envd-protocol.md §7 (GET/POST /files), docs/protocol/e2b-control-plane.md §6.
local t = require("abx.test")
local core = require("abx.core")

local function sbx(ctx) return ctx.conn:create({ template = "base" }) end

t.test("a body announcing 2 GiB over its limit is a Protocol error at once", function(ctx)
  local s = sbx(ctx)
  local t0 = core.now()
  local err = t.raises("Protocol", function() s.files:read("/huge") end)
  t.match(err.message, "Content%-Length announces 2147483648")
  t.ok(core.now() - t0 < 2, "failed after " .. (core.now() - t0) .. " s, not at once")
end)

t.test("a streamed read over its max_body is a Protocol error at once", function(ctx)
  local s = sbx(ctx)
  local t0, chunks = core.now(), 0
  local err = t.raises("Protocol", function()
    s.files:read("/huge", { on_chunk = function() chunks = chunks + 1 end, max_body = 1048576 })
  end)
  t.match(err.message, "Content%-Length announces 2147483648")
  t.eq(chunks, 0, "no chunk of the refused body was handed over")
  t.ok(core.now() - t0 < 2, "failed after " .. (core.now() - t0) .. " s, not at once")
end)

t.test("an upload refused with 413 is PayloadTooLarge, not RateLimit", function(ctx)
  local err = t.raises("PayloadTooLarge", function() sbx(ctx).files:write("/big", "x") end)
  t.eq(err.status, 413)
end)
