-- Selection fixture for tests/runner/selection.py (--reruns): each test counts its attempts in a
-- file under ABX_SEL_STATE (a directory the driver makes) and fails on the attempts it names.
local t = require("abx.test")

-- The attempt number of `name` (1 on the first run), counted in ABX_SEL_STATE/<name>.
local function attempt(name)
  local dir = os.getenv("ABX_SEL_STATE")
  if not dir then t.fail("ABX_SEL_STATE is not set") end
  local path = dir .. "/" .. name:gsub("[^%w]", "_")
  local f = io.open(path, "r")
  local n = (f and tonumber(f:read("a")) or 0) + 1
  if f then f:close() end
  f = assert(io.open(path, "w"))
  f:write(tostring(n))
  f:close()
  return n
end

t.test("passes on the third attempt", { markers = { "flaky" } }, function()
  local n = attempt("third")
  if n < 3 then t.fail("attempt " .. n .. " fails") end
end)
t.test("fails every attempt", { markers = { "flaky" } }, function()
  t.fail("attempt " .. attempt("every") .. " fails")
end)
t.test("not marked flaky fails once", function()
  local n = attempt("once")
  if n < 2 then t.fail("attempt " .. n .. " fails") end
end)
t.test("flaky and passing", { markers = { "flaky" } }, function() attempt("passing") end)
