-- Runner case: a test that uses a marker config/abxlua.yaml does not register.
-- Expected: a collection error naming the file, line 10, the test, the marker and the marker it
-- likely meant; no test runs: 0 passed, 1 error; exit code 1.
-- expect-line: ^ERROR +tests/runner/unknown_marker\.lua \(collection\): tests/runner/unknown_marker\.lua:10: .*"uses a typo".*unknown marker "e2e_slwo", did you mean 'e2e_slow'\?; register it
-- expect-no-line: ^(PASSED|FAILED)
local t = require("abx.test")

t.test("registered marker", { markers = { "e2e_slow" } }, function() t.eq(1, 1) end)

t.test("uses a typo", { markers = { "e2e_slwo" } }, function() t.eq(1, 1) end)
