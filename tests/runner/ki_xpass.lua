-- Runner case: a test whose known issue applies but that passes is a strict XPASS: the run fails.
-- Expected: 1 failed (the XPASS), exit 1. The XPASS(strict) is in the failures section and in the
-- default short test summary (-r fE), as pytest reports a strict XPASS: FAILED ... [XPASS(strict)].
-- args: --config tests/runner/ki/abxlua.yaml -j 1
-- expect-line: ^XPASS +tests/runner/ki_xpass\.lua::now passes .*\[XPASS\(strict\)\] KI-900: Every provider fails this — the issue appears fixed; remove the annotation and close the entry
-- expect-line: ^--- tests/runner/ki_xpass\.lua::now passes \(line 10\)$
-- expect-line: ^FAILED tests/runner/ki_xpass\.lua::now passes - \[XPASS\(strict\)\] KI-900: Every provider fails this
local t = require("abx.test")

t.test("now passes", { known_issue = "KI-900" }, function() t.eq(1, 1) end)
