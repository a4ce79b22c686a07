-- Page pagination case, run by test_wire.py against its recording server (provider `kr`): the
-- client asks page=1,2 with pageSize and follows pagination.hasNextPage (docs/protocol/e2b-v2-and-peers.md §4),
-- and cursor pagination keeps limit + nextToken (X-Next-Token).
local t = require("abx.test")

t.test("page pagination follows pagination.hasNextPage", function(ctx)
  local conn = ctx.conn:with({ pagination = "page" })
  local all = conn:list({ limit = 2 })
  local ids = {}
  for _, it in ipairs(all) do ids[#ids + 1] = it.sandbox_id end
  t.eq(ids, { "p1a", "p1b", "p2a" })
  local items, token = conn:list_page({ limit = 2, next_token = "2" })
  t.eq(#items, 1)
  t.eq(token, nil)
  t.raises("InvalidArgument", function() conn:list_page({ limit = 2, next_token = "x" }) end)
end)

t.test("cursor pagination sends limit and nextToken", function(ctx)
  local items, token = ctx.conn:list_page({ limit = 5, next_token = "c1" })
  t.eq(#items, 0)
  t.eq(token, nil)
end)
