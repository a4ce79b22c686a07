-- Runner case: a sandbox created behind the tracker's back (a copy of the connection without the
-- run's hooks) is still tagged e2e=<run id> and killed by the final sweep by tag.
-- Expected: 1 passed; cleanup reports 0 created through the fixtures and 1 found by tag; exit 0.
-- expect-line: ^PASSED +tests/runner/sweep\.lua::an untracked sandbox
-- expect-line: ^cleanup: 0 sandboxes created, 0 killed at the end \(tracked\), 1 found by tag e2e=[^ ]+ and killed; 0 snapshots and 0 volumes deleted$
local t = require("abx.test")

t.test("an untracked sandbox", function(ctx)
  local sbx = ctx.conn:with({ hooks = {} }):create({ template = "base", timeout = 120 })
  print("sandbox-id: " .. sbx.id)
  t.eq(ctx.conn:get_info(sbx.id).metadata.e2e, ctx.run_id)
end)
