-- Runner case (issue 23): the local provider runs the code interpreter (serve builds in
-- code-interpreter-v1), so its capability list has code_interpreter and a test declaring
-- requires = {"code_interpreter"}, as docs/scenarios.md says to, runs there instead of being
-- skipped.
-- Expected (-j 1): 1 passed; exit code 0.
-- expect-line: ^PASSED +tests/runner/cap_code_interpreter\.lua::the code interpreter runs on local
-- expect-no-line: lacks capability
local t = require("abx.test")

t.test("the code interpreter runs on local", { requires = { "code_interpreter" } }, function(ctx)
  t.eq(ctx.code_sandbox:run_code("1 + 1").text, "2")
end)
