-- Runner case: under -j the tests finish in any order (here the reverse of the file's), but the
-- failures section and the short test summary list them in file order.
-- Expected: 3 failed; exit 1.
-- args: -j 3
-- expect-in-order: ^FAILED +tests/runner/failure_order\.lua::third .*- Assertion$
-- expect-in-order: ^FAILED +tests/runner/failure_order\.lua::first .*- Assertion$
-- expect-in-order: ^=== failures ===$
-- expect-in-order: ^--- tests/runner/failure_order\.lua::first \(line 17\)$
-- expect-in-order: ^--- tests/runner/failure_order\.lua::second \(line 21\)$
-- expect-in-order: ^--- tests/runner/failure_order\.lua::third \(line 25\)$
-- expect-in-order: ^FAILED tests/runner/failure_order\.lua::first - 
-- expect-in-order: ^FAILED tests/runner/failure_order\.lua::second - 
-- expect-in-order: ^FAILED tests/runner/failure_order\.lua::third - 
local t = require("abx.test")
local core = require("abx.core")

t.test("first", function()
  core.sleep(0.6)
  t.eq("first", "1st")
end)
t.test("second", function()
  core.sleep(0.3)
  t.eq("second", "2nd")
end)
t.test("third", function()
  t.eq("third", "3rd")
end)
