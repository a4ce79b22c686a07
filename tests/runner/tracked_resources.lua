-- Runner case: snapshots and volumes a test creates and leaves behind are deleted at the end of
-- the run, and the cleanup line counts them (issue 9, item 4); one the test deletes itself is
-- not deleted twice; a volume created behind the tracker's back but named with the run id is
-- swept by name.
-- Expected: 2 passed, exit 0; cleanup: 1 snapshot and 2 volumes deleted.
-- expect-line: ^cleanup: 1 sandboxes created, 0 killed at the end \(tracked\), 0 found by tag e2e=[^ ]+ and killed; 1 snapshots and 2 volumes deleted$
local t = require("abx.test")

t.test("a snapshot and a volume left behind", { requires = { "snapshot", "volume" }, timeout = 120 },
  function(ctx)
    local sbx = ctx.sandbox_factory({})
    local snap = sbx:create_snapshot({})
    t.ok(snap.snapshot_id)
    local v = ctx.conn:create_volume("abx-left-" .. ctx.run_id)
    t.ok(v.volume_id)
    local gone = ctx.conn:create_volume("abx-deleted-" .. ctx.run_id)
    t.eq(ctx.conn:delete_volume(gone.volume_id), true)
  end)

t.test("a volume behind the tracker's back, named with the run id", { requires = { "volume" } },
  function(ctx)
    local v = ctx.conn:with({ hooks = {} }):create_volume("abx-untracked-" .. ctx.run_id)
    t.ok(v.volume_id)
  end)
