-- Runner case: a scenario file that raises at top level (line 14), after declaring a test.
-- Expected: a collection error naming this file, line 14 and the message; the test declared
-- before it does not run; the good file still runs: 1 passed, 1 error; exit code 1.
-- args: tests/runner/helpers/passes.lua -j 1
-- expect-line: ^ERROR +tests/runner/top_level_error\.lua \(collection\): tests/runner/top_level_error\.lua:14: setup failed at top level
-- expect-line: ^PASSED +tests/runner/helpers/passes\.lua::still runs
-- expect-no-line: top_level_error\.lua::
local t = require("abx.test")

t.test("declared before the error", function()
  t.eq(1, 1)
end)

error("setup failed at top level")
