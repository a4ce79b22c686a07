-- Runner case: -m keeps only the tests whose markers match the expression.
-- Expected (-m "not e2e_slow"): the 2 tests without e2e_slow pass; the slow ones are not run nor
-- reported; exit code 0.
-- args: -m "not e2e_slow" -j 1
-- expect-line: ^PASSED +tests/runner/select_m\.lua::plain \(
-- expect-line: ^PASSED +tests/runner/select_m\.lua::docker only \(
-- expect-no-line: select_m\.lua::slow
local t = require("abx.test")

t.test("plain", function() t.ok(true) end)
t.test("slow only", { markers = { "e2e_slow" } }, function() t.fail("e2e_slow, must not run") end)
t.test("docker only", { markers = { "e2e_docker" } }, function() t.ok(true) end)
t.test("slow and docker", { markers = { "e2e_slow", "e2e_docker" } }, function()
  t.fail("e2e_slow, must not run")
end)
