-- Runner case: -m with `or`: tests carrying either marker run.
-- Expected (-m "e2e_slow or e2e_docker"): 3 passed; "plain" is not run nor reported; exit code 0.
-- args: -m "e2e_slow or e2e_docker" -j 1
-- expect-line: ^PASSED +tests/runner/select_m_or\.lua::slow only \(
-- expect-line: ^PASSED +tests/runner/select_m_or\.lua::docker only \(
-- expect-line: ^PASSED +tests/runner/select_m_or\.lua::slow and docker \(
-- expect-no-line: select_m_or\.lua::plain
local t = require("abx.test")

t.test("plain", function() t.fail("no marker matches, must not run") end)
t.test("slow only", { markers = { "e2e_slow" } }, function() t.ok(true) end)
t.test("docker only", { markers = { "e2e_docker" } }, function() t.ok(true) end)
t.test("slow and docker", { markers = { "e2e_slow", "e2e_docker" } }, function() t.ok(true) end)
