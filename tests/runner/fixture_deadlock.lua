-- Runner case: a file-scoped fixture holds the only slot (max_sandboxes 1, tests/runner/suite/
-- config/abxlua.yaml) and a test that uses it asks for a sandbox of its own: nothing can free a
-- slot (the fixture's comes back after the file's last test), so the test fails at once with
-- InvalidArgument naming the fixture, instead of waiting for its deadline; the next test reuses
-- the fixture's sandbox.
-- Expected (-j 1): 1 passed, 1 failed; exit code 1, well before the 30 s timeout.
-- args: -j 1 --config tests/runner/suite/config/abxlua.yaml
-- expect-max-seconds: 15
-- expect-line: ^FAILED +tests/runner/fixture_deadlock\.lua::a sandbox of its own beside the fixture's \([0-9.]+s\) - InvalidArgument$
-- expect-line: held by scoped fixtures \(fixture shared \(scope file, tests/runner/fixture_deadlock\.lua:[0-9]+\)\).*raise max_sandboxes
-- expect-line: ^cleanup: 1 sandboxes created, 0 killed at the end \(tracked\), 0 found by tag
local t = require("abx.test")

t.fixture("shared", { scope = "file" }, function(ctx) return ctx.base_sandbox end)

t.test("a sandbox of its own beside the fixture's", { timeout = 30 }, function(ctx)
  t.eq(ctx.shared:is_running(), true)
  local _ = ctx.base_sandbox
end)

t.test("the fixture's sandbox serves the next test", function(ctx)
  t.eq(ctx.shared.commands:run("echo ok").stdout, "ok\n")
end)
