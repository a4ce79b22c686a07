-- Editor case: abx.run.fixtures.FIXTURES (what types/abx/types_ctx.lua is generated from) is
-- exactly what a ctx answers: every declared fixture resolves, and the error for an unknown
-- name lists the declared ones and no other.
-- Expected (-j 1): every test passes; exit code 0.
-- expect-no-line: ^(FAILED|ERROR)
local t = require("abx.test")
local fixtures = require("abx.run.fixtures")

-- a run whose connection hands out inert sandbox handles: no platform is touched
local function fake_run()
  local sbx = { id = "fake", files = { make_dir = function() return true end } }
  local conn = { create = function() return sbx end }
  return { conn = conn, run_id = "r1", defaults = { template = "base", sandbox_ttl = 60 },
    tracker = { owned = function() return {} end, kill = function() end } }
end

t.test("every declared fixture resolves on a ctx", function()
  local ctx = fixtures.new({ name = "n", index = 1, recipe = { name = "tpl" } }, fake_run())
  t.ok(#fixtures.FIXTURES >= 10, "fixtures are declared")
  for _, f in ipairs(fixtures.FIXTURES) do
    local ok, v = pcall(function() return ctx[f[1]] end)
    t.ok(ok, "ctx." .. f[1] .. " resolves: " .. tostring(v))
    t.ok(v ~= nil, "ctx." .. f[1] .. " is set")
    local want = f[2]:match("^fun%(") and "function" or (f[2] == "string" and "string" or "table")
    t.eq(type(v), want, "ctx." .. f[1] .. " is a " .. want .. " (" .. f[2] .. ")")
  end
end)

t.test("an unknown fixture's error lists exactly the declared fixtures", function()
  local ctx = fixtures.new({ name = "n", index = 1 }, fake_run())
  local ok, err = pcall(function() return ctx.no_such_fixture end)
  t.eq(ok, false)
  local list = tostring(err):match("%(fixtures: ([^%)]+)%)")
  t.ok(list, "the error names the fixtures: " .. tostring(err))
  local named = {}
  for n in list:gmatch("[%w_]+") do named[#named + 1] = n end
  local declared = {}
  for _, f in ipairs(fixtures.FIXTURES) do declared[#declared + 1] = f[1] end
  table.sort(named)
  table.sort(declared)
  t.eq(table.concat(named, ", "), table.concat(declared, ", "))
end)
