-- Runner case: the `known_issue` marker written by hand, without the `known_issue = "KI-NNN"`
-- option, would select the test under -m known_issue but pin nothing: it is a collection error
-- naming the test, line 11 and the fix.
-- Expected: the file does not load; nothing runs; 1 error; exit 1.
-- args: --config tests/runner/ki/abxlua.yaml -j 1
-- expect-line: ^ERROR +tests/runner/ki_marker\.lua \(collection\): tests/runner/ki_marker\.lua:11: .*"marker only".*marker "known_issue" without the option: write known_issue = "KI-NNN"
-- expect-no-line: ^(PASSED|FAILED|XFAIL)
local t = require("abx.test")

t.test("with the option", { known_issue = "KI-900", markers = { "known_issue" } }, function() t.fail("x") end)
t.test("marker only", { markers = { "known_issue" } }, function() t.eq(1, 2) end)
