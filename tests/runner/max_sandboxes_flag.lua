-- Runner case: --max-sandboxes N replaces the config's defaults.max_sandboxes (5) for the run.
-- Expected: with --max-sandboxes 7, a test holding seven sandboxes at once passes (the config's 5
-- would refuse it), and a test declaring eight fails at once with InvalidArgument naming
-- max_sandboxes = 7; 1 passed, 1 failed, exit 1.
-- args: -j 2 --max-sandboxes 7
-- expect-line: ^PASSED +tests/runner/max_sandboxes_flag\.lua::holds seven sandboxes at once
-- expect-line: ^FAILED +tests/runner/max_sandboxes_flag\.lua::eight at once is more than max_sandboxes \([0-9.]+s\) - InvalidArgument$
-- expect-line: declares sandboxes = 8, more than max_sandboxes = 7: it could never run
-- expect-max-seconds: 100
local t = require("abx.test")

t.test("holds seven sandboxes at once", { timeout = 120, sandboxes = 7 }, function(ctx)
  local ids = {}
  for _ = 1, 7 do ids[#ids + 1] = ctx.sandbox_factory({}).id end
  t.eq(#ids, 7)
end)

t.test("eight at once is more than max_sandboxes", { timeout = 60, sandboxes = 8 }, function(ctx)
  for _ = 1, 8 do ctx.sandbox_factory({}) end
end)
