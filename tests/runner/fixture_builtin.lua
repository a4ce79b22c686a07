-- Runner case: a fixture named like a built-in fixture is a collection error naming them.
-- Expected: 1 collection error; exit code 1.
-- expect-line: ^ERROR +tests/runner/fixture_builtin\.lua \(collection\): tests/runner/fixture_builtin\.lua:[0-9]+: t\.fixture\("conn"\): "conn" is a built-in fixture \(built-in: base_sandbox, code_sandbox, .*conn.*finally.*\)
local t = require("abx.test")

t.fixture("conn", function() return 1 end)

t.test("never runs", function() end)
