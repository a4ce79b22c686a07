-- standard_contract: the "standard E2B migration verification" contract (seed 000): snapshot restore
-- with file continuity and clone isolation, pause/resume with in-memory continuity, background
-- stdin, lazy pagination. Each check is about the platform as a client migrating to it sees it.
-- Fixtures: ctx.sandbox_factory, ctx.conn, ctx.run_id, ctx.finally (snapshots are deleted at
-- teardown, after the sandboxes made from them are killed: a snapshot in use cannot be deleted).
-- Requires: snapshot, pause (where used). Markers: none.
-- Protocol: docs/protocol/e2b-control-plane.md §3.1 (restore = POST /sandboxes with templateID = the
--           snapshot id; delete = DELETE /templates/{id}), §3.3 SnapshotInfo, §3.4 (pause 204,
--           connect 201 when resumed), §2 (pagination: limit, nextToken, X-Next-Token only when
--           more remain); docs/protocol/envd-protocol.md §4.4 (stdin = true, SendInput, CloseStdin).
local t = require("abx.test")
local core = require("abx.core")

local function unique(ctx, what)
  return what .. "-" .. ctx.run_id .. "-" .. tostring(math.random(1, 1e9))
end

-- Deletes the snapshot at teardown after killing the sandboxes `users()` returns.
local function delete_later(ctx, snap, users)
  ctx.finally(function()
    for _, sbx in pairs(users()) do sbx:kill() end
    ctx.conn:delete_snapshot(snap.snapshot_id)
  end)
end

t.test("a snapshot restores the files as they were, and two clones do not see each other's changes",
  { requires = { "snapshot" }, timeout = 400 }, function(ctx)
  -- at most two sandboxes at a time (the run's live bound is shared by -j tests): the source is
  -- killed before the clones are made
  local src, a, b
  src = ctx.sandbox_factory({})
  src.files:write("/home/user/state.txt", "v1")
  local w = src.commands:run("echo etc-v1 > /etc/abx-state", { user = "root" })
  t.eq(w.exit_code, 0, w.stderr)
  local snap = src:create_snapshot()
  delete_later(ctx, snap, function() return { src, a, b } end)
  t.match(snap.snapshot_id, "%S")
  t.ok(#snap.names >= 1, "SnapshotInfo has names")
  t.eq(src:get_info().state, "running", "the source after the snapshot")
  -- changes after the snapshot are not in it
  src.files:write("/home/user/state.txt", "v2-after-snapshot")
  t.eq(src.files:read("/home/user/state.txt"), "v2-after-snapshot")
  local listed = false
  for _, s in ipairs(ctx.conn:list_snapshots({ sandbox_id = src.id })) do
    if s.snapshot_id == snap.snapshot_id then listed = true end
  end
  t.ok(listed, "list_snapshots{sandbox_id} shows the snapshot")
  t.eq(src:kill(), true)
  a = ctx.sandbox_factory({ template = snap.snapshot_id })
  b = ctx.sandbox_factory({ template = snap.snapshot_id })
  t.neq(a.id, b.id)
  for name, clone in pairs({ a = a, b = b }) do
    t.eq(clone.files:read("/home/user/state.txt"), "v1", "file in clone " .. name)
    t.eq(clone.commands:run("cat /etc/abx-state").stdout, "etc-v1\n", "/etc file in clone " .. name)
  end
  a.files:write("/home/user/state.txt", "changed-in-a")
  a.files:write("/home/user/only-in-a", "a")
  b.files:write("/home/user/only-in-b", "b")
  t.eq(b.files:read("/home/user/state.txt"), "v1", "clone b sees clone a's change")
  t.eq(b.files:exists("/home/user/only-in-a"), false, "clone b sees clone a's new file")
  t.eq(a.files:exists("/home/user/only-in-b"), false, "clone a sees clone b's new file")
  t.eq(a.files:read("/home/user/state.txt"), "changed-in-a")
end)

t.test("a deleted snapshot is gone: delete answers true then false and it no longer restores",
  { requires = { "snapshot" } }, function(ctx)
  local src = ctx.sandbox_factory({})
  local snap = src:create_snapshot({ name = ("abx-del-" .. ctx.run_id):lower():gsub("[^a-z0-9_-]", "") })
  delete_later(ctx, snap, function() return { src } end)
  local named = false
  for _, n in ipairs(snap.names) do named = named or n:find("abx-del-", 1, true) ~= nil end
  t.ok(named, "the snapshot's names carry the requested name")
  t.eq(ctx.conn:delete_snapshot(snap.snapshot_id), true)
  t.eq(ctx.conn:delete_snapshot(snap.snapshot_id), false, "a second delete")
  t.raises("NotFound", function() ctx.sandbox_factory({ template = snap.snapshot_id }) end)
  for _, s in ipairs(ctx.conn:list_snapshots({ sandbox_id = src.id })) do
    t.neq(s.snapshot_id, snap.snapshot_id, "the deleted snapshot is still listed")
  end
  src:kill()
  t.eq(t.raises("SandboxNotFound", function() src:create_snapshot() end).status, 404,
    "snapshot of a killed sandbox")
end)

-- The counter: a detached shell that keeps `seed` (random, chosen at its start) and `i` in its own
-- memory and publishes "<seed> <i>" atomically every 0.1 s. A restarted process would have a new
-- seed and pid and start again from 1.
local COUNTER = "setsid sh -c 'echo $$ > /tmp/abx-counter.pid; "
  .. "seed=$(od -An -N4 -tu4 /dev/urandom | tr -d \" \"); i=0; "
  .. "while :; do i=$((i+1)); echo \"$seed $i\" > /tmp/abx-counter.tmp && "
  .. "mv /tmp/abx-counter.tmp /tmp/abx-counter; sleep 0.1; done' "
  .. ">/dev/null 2>&1 </dev/null & echo started"

-- {seed, i, at (the sandbox's wall clock, s), alive pid} read in one command.
local function read_counter(sbx)
  return t.eventually(function()
    local r = sbx.commands:run("cat /tmp/abx-counter; date +%s.%N; pid=$(cat /tmp/abx-counter.pid); "
      .. "kill -0 $pid && echo $pid")
    local seed, i, at, pid = r.stdout:match("^(%d+) (%d+)\n([%d.]+)\n(%d+)\n$")
    t.ok(seed, "counter not readable yet: " .. r.stdout .. r.stderr)
    return { seed = seed, i = tonumber(i), at = tonumber(at), pid = pid }
  end, { timeout = 30, interval = 0.2 })
end

-- Waits `seconds` on the monotonic clock and returns the seconds that surely passed (core.now:
-- fractional, so a 4 s wait credits 4 s; whole-second os.time needed a 5 s wait to credit 4).
local function wait_seconds(seconds)
  local from = core.now()
  core.sleep(seconds)
  return core.now() - from
end

t.test("pause and resume keep a background process's memory: it counts on from where it was",
  { requires = { "pause", "connect_resume" }, timeout = 240 }, function(ctx)
  local sbx = ctx.sandbox_factory({ timeout = 300 })
  t.eq(sbx.commands:run(COUNTER).stdout, "started\n")
  local first = read_counter(sbx)
  t.eventually(function() t.ok(read_counter(sbx).i >= 10, "the counter is counting") end,
    { timeout = 30, interval = 0.3 })
  for cycle = 1, 2 do
    local before = read_counter(sbx)
    t.eq(sbx:pause(), true)
    -- seconds surely spent paused: after pause returned, before connect is sent
    local paused_for = wait_seconds(4)
    sbx:connect({ timeout = 300 })
    t.eq(sbx.resumed, true, "connect resumed the sandbox (cycle " .. cycle .. ")")
    local after = read_counter(sbx)
    t.eq(after.pid, first.pid, "the counter process was replaced (cycle " .. cycle .. ")")
    t.eq(after.seed, first.seed, "the counter's memory was lost: new seed (cycle " .. cycle .. ")")
    t.ok(after.i >= before.i, string.format("the counter went back from %d to %d (cycle %d)",
      before.i, after.i, cycle))
    -- it never counts faster than 10/s, and not at all while frozen
    local bound = 10 * ((after.at - before.at) - paused_for) + 10
    t.ok(after.i - before.i <= bound, string.format("the counter advanced %d while paused for >= %.1f s "
      .. "(at most %.0f expected when frozen, cycle %d)", after.i - before.i, paused_for, bound, cycle))
    t.eventually(function()
      t.ok(read_counter(sbx).i > after.i, "the counter does not count after resume")
    end, { timeout = 30, interval = 0.3 })
  end
end)

-- The end of a process reaches the client when the process ends, not a fixed time later
-- (OpenSandbox#1661's ~1 s tail): the fastest of 5 background processes that end at once is
-- waited for in under 0.9 s (one fast sample of five: load cannot fail it).
t.test("a background process's end arrives without a fixed tail: the fastest of 5 under 0.9 s",
  { thresholds = { "min<900", "rate==0" } }, function(ctx)
  local sbx = ctx.sandbox_factory({})
  t.measure("background end", function()
    local h = sbx.commands:run("echo done", { background = true })
    t.eq(h:wait().stdout, "done\n")
  end, { iterations = 5 })
end)

t.test("a background process reads what send_stdin sends and ends at close_stdin", function(ctx)
  local sbx = ctx.sandbox_factory({})
  local h = sbx.commands:run("python3 -c 'import sys; d = sys.stdin.read(); "
    .. "sys.stdout.write(str(len(d)) + \" \" + d.upper())'", { background = true, stdin = true })
  t.ok(h.pid and h.pid > 0, "a pid")
  h:send_stdin("hello ")
  h:send_stdin("background stdin\n")
  h:close_stdin()
  local r = h:wait()
  t.eq(r.exit_code, 0, r.stderr)
  t.eq(r.stdout, "23 HELLO BACKGROUND STDIN\n")
end)

t.test("listing lazily with limit 1 gives one sandbox per page and a next token until the last",
  function(ctx)
  local tag = unique(ctx, "lazy")
  local want = {}
  for _ = 1, 2 do want[ctx.sandbox_factory({ metadata = { abx_case = tag } }).id] = true end
  local p1, token = ctx.conn:list_page({ metadata = { abx_case = tag }, limit = 1 })
  t.eq(#p1, 1, "first page")
  t.ok(token, "the first page has a next token")
  t.ok(want[p1[1].sandbox_id], "first page item")
  local p2, token2 = ctx.conn:list_page({ metadata = { abx_case = tag }, limit = 1, next_token = token })
  t.eq(#p2, 1, "second page")
  t.ok(want[p2[1].sandbox_id], "second page item")
  t.neq(p2[1].sandbox_id, p1[1].sandbox_id, "the second page repeats the first")
  t.eq(token2, nil, "a next token after the last sandbox")
end)

t.test("listing snapshots lazily with limit 1 pages through a sandbox's snapshots",
  { requires = { "snapshot" } }, function(ctx)
  local src = ctx.sandbox_factory({})
  local snaps = { src:create_snapshot() }
  delete_later(ctx, snaps[1], function() return { src } end)
  snaps[2] = src:create_snapshot()
  delete_later(ctx, snaps[2], function() return {} end)
  local want = { [snaps[1].snapshot_id] = true, [snaps[2].snapshot_id] = true }
  local p1, token = ctx.conn:list_snapshots_page({ sandbox_id = src.id, limit = 1 })
  t.eq(#p1, 1, "first page")
  t.ok(token, "the first page has a next token")
  local p2, token2 = ctx.conn:list_snapshots_page({ sandbox_id = src.id, limit = 1, next_token = token })
  t.eq(#p2, 1, "second page")
  t.eq(token2, nil, "a next token after the last snapshot")
  t.ok(want[p1[1].snapshot_id] and want[p2[1].snapshot_id], "pages hold the sandbox's snapshots")
  t.neq(p1[1].snapshot_id, p2[1].snapshot_id)
  t.eq(#ctx.conn:list_snapshots({ sandbox_id = src.id }), 2, "list follows the tokens")
end)
