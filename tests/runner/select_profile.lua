-- Runner case: --profile fast (config/abxlua.yaml: m = "not e2e_slow") selects like -m; the
-- explicit -k narrows by name on top of it.
-- Expected (--profile fast -k "not skipme"): 1 passed; the e2e_slow test and "skipme" are not run
-- nor reported; exit code 0.
-- args: --profile fast -k "not skipme" -j 1
-- expect-line: ^PASSED +tests/runner/select_profile\.lua::fast one \(
-- expect-no-line: select_profile\.lua::(slow one|skipme)
local t = require("abx.test")

t.test("fast one", function() t.ok(true) end)
t.test("slow one", { markers = { "e2e_slow" } }, function() t.fail("e2e_slow, must not run") end)
t.test("SkipMe by name", function() t.fail("deselected by -k, must not run") end)
