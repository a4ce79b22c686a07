-- Runner case: reading an undefined global inside a test fails it instead of yielding nil.
-- Expected: 1 passed, 2 failed (both LuaError naming the global); exit code 1.
-- expect-line: ^FAILED +tests/runner/unknown_global\.lua::reading a typo fails \([0-9.]+s\) - LuaError$
-- expect-line: ^FAILED +tests/runner/unknown_global\.lua::a nil comparison with a typo fails \([0-9.]+s\) - LuaError$
-- expect-line: unknown global variable "sandbx"
-- expect-line: unknown global variable "exit_cdoe"
-- expect-line: ^PASSED +tests/runner/unknown_global\.lua::standard globals and file locals work
local t = require("abx.test")
local declared = "local value"

t.test("reading a typo fails", function()
  local id = sandbx.id -- a typo of a local that does not exist
  t.ok(id)
end)

t.test("a nil comparison with a typo fails", function()
  -- would pass if an unknown global read as nil
  t.eq(exit_cdoe, nil)
end)

t.test("standard globals and file locals work", function()
  t.eq(type(string.format), "function")
  t.eq(tostring(12), "12")
  t.eq(declared, "local value")
  t.eq(math.max(1, 5), 5)
end)
