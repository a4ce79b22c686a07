-- Runner case: an entry scoped to other providers does not apply here: the test must pass, and a
-- failure stays a failure.
-- Expected: 1 passed, 1 failed, exit 1.
-- args: --config tests/runner/ki/abxlua.yaml -j 1
-- expect-line: ^PASSED +tests/runner/ki_scoped\.lua::passes where the issue does not apply
-- expect-line: ^FAILED +tests/runner/ki_scoped\.lua::fails where the issue does not apply
local t = require("abx.test")

t.test("passes where the issue does not apply", { known_issue = "KI-901" }, function() t.ok(true) end)
t.test("fails where the issue does not apply", { known_issue = "KI-901" }, function() t.eq(1, 2) end)
