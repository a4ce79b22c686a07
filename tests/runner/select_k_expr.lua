-- Runner case: -k expressions: case-insensitive substrings joined by and / or / not, parentheses.
-- Expected (-k "(stdout and not stderr) or exit_code"): 3 passed; the others are not run nor
-- reported; exit code 0.
-- args: -k "(stdout and not stderr) or exit_code" -j 1
-- expect-line: ^PASSED +tests/runner/select_k_expr\.lua::reads stdout \(
-- expect-line: ^PASSED +tests/runner/select_k_expr\.lua::STDOUT in capitals \(
-- expect-line: ^PASSED +tests/runner/select_k_expr\.lua::stderr gives exit_code 5 \(
-- expect-no-line: select_k_expr\.lua::(stdout and stderr|neither)
local t = require("abx.test")

t.test("reads stdout", function() t.ok(true) end)
t.test("STDOUT in capitals", function() t.ok(true) end)
t.test("stdout and stderr together", function() t.fail("has stderr, must not run") end)
t.test("stderr gives exit_code 5", function() t.ok(true) end)
t.test("neither", function() t.fail("must not run") end)
