-- Runner case: -vv adds the full Lua traceback (every frame: the assertion library, the runner)
-- after the scenario traceback.
-- Expected: 1 failed; exit 1.
-- args: -vv -j 1
-- expect-in-order: ^    stack traceback \(scenario frames, most recent call first\):$
-- expect-in-order: ^      tests/runner/failure_where_vv\.lua:13: in test "an assertion"$
-- expect-in-order: ^    Lua stack traceback \(every frame\):$
-- expect-in-order: ^      lib/abx/run/assert\.lua:[0-9]+: in function 'abx\.(test|run\.assert)\.eq'$
-- expect-in-order: ^      lib/abx/run/runner\.lua:[0-9]+: in upvalue 'run_one'$
local t = require("abx.test")

t.test("an assertion", function()
  t.eq(1, 2)
end)
