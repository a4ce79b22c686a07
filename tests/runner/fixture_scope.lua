-- Runner case: a fixture with an unknown scope is a collection error naming the valid scopes;
-- so is an unknown option.
-- Expected: 1 collection error; exit code 1.
-- expect-line: ^ERROR +tests/runner/fixture_scope\.lua \(collection\): tests/runner/fixture_scope\.lua:[0-9]+: t\.fixture\("shared"\): scope "module" is not a fixture scope \(valid: test, file, run\)
local t = require("abx.test")

t.fixture("shared", { scope = "module" }, function() return 1 end)

t.test("never runs", function() end)
