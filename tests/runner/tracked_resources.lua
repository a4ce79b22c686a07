-- Runner case: snapshots and volumes a test creates and leaves behind are deleted at the end of
-- the run, and the cleanup line counts them (issue 9, item 4); one the test deletes itself is
-- not deleted twice; a volume created behind the tracker's back but named with the run id is
-- swept by name; a managed API key left behind is deleted too (the one deleted by its test is not
-- counted).
-- Expected: 3 passed, exit 0; cleanup: 1 snapshot, 2 volumes and 1 API key deleted.
-- expect-line: ^cleanup: 1 sandboxes created, 0 killed at the end \(tracked\), 0 found by tag e2e=[^ ]+ and killed; 1 snapshots and 2 volumes deleted; 1 API keys deleted$
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

t.test("a managed API key left behind", { requires = { "api_keys" } }, function(ctx)
  local k = ctx.conn:create_api_key({ name = "abx-left-" .. ctx.run_id })
  t.ok(k.id)
  local gone = ctx.conn:create_api_key({ name = "abx-deleted-" .. ctx.run_id })
  t.eq(ctx.conn:delete_api_key(gone.id), true)
end)
