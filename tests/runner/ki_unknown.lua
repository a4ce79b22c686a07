-- Runner case: an unknown known-issue id is a collection error naming the id and the catalog.
-- Expected: the file does not load; nothing runs; exit 1.
-- args: --config tests/runner/ki/abxlua.yaml -j 1
-- expect-line: ERROR +tests/runner/ki_unknown\.lua \(collection\): .*unknown known issue "KI-999"; add it to tests/runner/ki/known_issues\.yaml
local t = require("abx.test")

t.test("references a missing entry", { known_issue = "KI-999" }, function() t.ok(true) end)
