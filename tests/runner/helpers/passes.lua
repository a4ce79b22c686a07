-- Helper for the collection-error cases: one passing test, run beside a broken file to show that
-- the other files still run. Expected alone: 1 passed; exit code 0.
local t = require("abx.test")

t.test("still runs", function()
  t.eq(("abc"):upper(), "ABC")
end)
