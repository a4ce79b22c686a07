-- Runner case: -x stops starting tests after the first failure.
-- Expected (-x -j 1): 1 passed, 1 failed; the third test never starts; exit code 1.
-- args: -x -j 1
-- expect-line: ^PASSED +tests/runner/exitfirst\.lua::runs first
-- expect-line: ^FAILED +tests/runner/exitfirst\.lua::fails second \([0-9.]+s\) - Assertion$
-- expect-line: ^stopped at the first failure \(-x\): 1 of 3 tests were not started$
-- expect-no-line: exitfirst\.lua::never starts
local t = require("abx.test")

t.test("runs first", function() t.ok(true) end)
t.test("fails second", function() t.eq("a", "b") end)
t.test("never starts", function() t.ok(true) end)
