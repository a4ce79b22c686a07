-- Runner case: capabilities. The local platform imitating CubeSandbox (--flavor cubesandbox: the
-- capabilities both config entries have) has pause but not code_interpreter: a test requiring one
-- it lacks is skipped with "provider local --flavor cubesandbox lacks capability <C>" before
-- any sandbox exists; one whose requirements are all met runs.
-- Expected (-j 1): 1 passed, 2 skipped; no sandbox created; exit code 0.
-- args: -j 1 --flavor cubesandbox
-- expect-line: ^SKIPPED +tests/runner/cap_skip\.lua::needs the code interpreter .*provider local --flavor cubesandbox lacks capability code_interpreter
-- expect-line: ^SKIPPED +tests/runner/cap_skip\.lua::needs pause and the code interpreter .*provider local --flavor cubesandbox lacks capability code_interpreter
-- expect-line: ^PASSED +tests/runner/cap_skip\.lua::needs only pause
-- expect-line: ^cleanup: 0 sandboxes created
-- expect-no-line: must not run
local t = require("abx.test")

t.test("needs the code interpreter", { requires = { "code_interpreter" } }, function(ctx)
  local _ = ctx.base_sandbox
  error("must not run: the cubesandbox flavour lacks code_interpreter")
end)

t.test("needs pause and the code interpreter", { requires = { "pause", "code_interpreter" } },
  function(ctx)
    local _ = ctx.base_sandbox
    error("must not run: the cubesandbox flavour lacks code_interpreter")
  end)

t.test("needs only pause", { requires = { "pause" } }, function() end)
