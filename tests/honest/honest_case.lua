-- Honest-engine cases (issue 27 part 4), run by tests/honest/test_honest.py against
-- tests/honest/honest_api.py in one of its modes; each test names the mode it is for and is
-- selected with -k. What each must show is in test_honest.py.
local t = require("abx.test")

-- Two tagged sandboxes, then the whole list by that tag in pages of one.
local function two_then_list(ctx, tag)
  for _ = 1, 2 do ctx.conn:create({ template = "base", metadata = { abx_case = tag } }) end
  return ctx.conn:list({ metadata = { abx_case = tag }, limit = 1 })
end

t.test("paging honest: every tagged sandbox once", function(ctx)
  t.eq(#two_then_list(ctx, "honest"), 2)
end)

t.test("paging repeat-token: the list fails at once", function(ctx)
  two_then_list(ctx, "repeat-token")
end)

t.test("paging repeat-ids: the list fails at once", function(ctx)
  two_then_list(ctx, "repeat-ids")
end)

t.test("paging endless: the list stops at its bound", function(ctx)
  ctx.conn:list({ metadata = { abx_case = "endless" } })
end)

t.test("route v2-405: a create names its route and the setting", function(ctx)
  ctx.conn:create({ template = "base" })
end)

t.test("gateway bare-502: gets pass through a gateway's 502s", function(ctx)
  local sbx = ctx.conn:create({ template = "base" })
  for _ = 1, 6 do t.eq(ctx.conn:get_info(sbx.id).sandbox_id, sbx.id) end
end)

t.test("cleanup kill-noop: a sandbox the platform does not kill", function(ctx)
  ctx.conn:create({ template = "base", metadata = { abx_case = "kill-noop" } })
end)
