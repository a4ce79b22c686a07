-- Runner case: a scenario file with a syntax error on line 14, run with a good file.
-- Expected: a collection error naming this file and line 14; the good file still runs:
-- 1 passed, 1 error; exit code 1. No test of this file runs.
-- args: tests/runner/helpers/passes.lua -j 1
-- expect-line: ^ERROR +tests/runner/syntax_error\.lua \(collection\): tests/runner/syntax_error\.lua:14: .*near
-- expect-line: ^PASSED +tests/runner/helpers/passes\.lua::still runs
-- expect-no-line: syntax_error\.lua::
local t = require("abx.test")

t.test("declared before the syntax error", function()
  t.eq(1, 1)
end)

local broken = = 2
