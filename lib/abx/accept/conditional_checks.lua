-- abx.accept.conditional_checks: the checks of `abxlua accept conditional` (seed 000, "Shared
-- Provider conditional acceptance"), in the order they run. Each is { name, needs = {capability},
-- after = {check names}, fn(s) }: fn raises to fail (kind Skipped: skipped, with the message as
-- reason) and may return a details table for the report (no resource id in it). `s` is the run's
-- state: conn (the Lua side, hooked to the tracker), cli (abx.accept.conditional_cli: the CLI
-- side), template, run_id, settings (the provider's), ids (every sandbox and snapshot id the run
-- saw: the report must hold none of them).
--
-- One source sandbox serves every check: it runs a counter process (its memory is the counter's
-- seed, pid and value) and holds a file; the CLI and the Lua client take turns pausing and
-- resuming it, then snapshot it, restore clones and delete the snapshots.
-- Protocol: docs/protocol/e2b-control-plane.md §3.1 (restore = POST /sandboxes with templateID = the
-- snapshot id, delete = DELETE /templates/{id}), §3.3 SnapshotInfo, §3.4 (pause 204, connect 201
-- when it resumed, GET /sandboxes/{id} state).
local core = require("abx.core")
local object = require("abx.client.sandbox_object")

local M = {}

local function fail(fmt, ...) core.error("Assertion", 0, string.format(fmt, ...)) end
local function ensure(cond, fmt, ...) if not cond then fail(fmt, ...) end end

-- fn() until it does not raise, every `interval` s for `timeout` s; then its last error.
local function eventually(fn, timeout, interval)
  local deadline = core.now() + (timeout or 30)
  while true do
    local ok, v = pcall(fn)
    if ok then return v end
    if core.is_error(v) and v.kind == "Interrupted" then error(v, 0) end
    if core.now() > deadline then error(v, 0) end
    core.sleep(interval or 0.2)
  end
end

-- The six operations the provider offers (the seed's "six Express command descriptors"): the CLI
-- command words, the capability of abx.run.config that admits them, and the Lua API that does
-- them (a method of Connection or Sandbox).
M.OPERATIONS = {
  { op = "pause", words = { "pause" }, capability = "pause", lua = { "Connection", "pause" } },
  { op = "resume", words = { "resume" }, capability = "pause", lua = { "Connection", "connect" } },
  { op = "snapshot create", words = { "snapshot", "create" }, capability = "snapshot",
    lua = { "Sandbox", "create_snapshot" } },
  { op = "snapshot list", words = { "snapshot", "list" }, capability = "snapshot",
    lua = { "Connection", "list_snapshots" } },
  { op = "snapshot restore", words = { "snapshot", "restore" }, capability = "snapshot",
    lua = { "Connection", "create" } },
  { op = "snapshot delete", words = { "snapshot", "delete" }, capability = "snapshot",
    lua = { "Connection", "delete_snapshot" } },
}


-- The counter: a detached shell that keeps `seed` (random, chosen at its start) and `i` in its own
-- memory and publishes "<seed> <i>" atomically every 0.1 s into DIR/counter. A restarted process
-- would have a new seed and pid and start again from 1 (as scenarios/standard_contract.lua).
local function counter_script(dir)
  local script = ("setsid sh -c 'echo $$ > DIR/counter.pid; "
    .. "seed=$(od -An -N4 -tu4 /dev/urandom | tr -d \" \"); i=0; "
    .. "while :; do i=$((i+1)); echo \"$seed $i\" > DIR/counter.tmp && "
    .. "mv DIR/counter.tmp DIR/counter; sleep 0.1; done' "
    .. ">/dev/null 2>&1 </dev/null & echo started"):gsub("DIR", function() return dir end)
  return script
end

-- {seed, i, at (the sandbox's clock, s), pid} read in one command.
local function read_counter(s)
  local dir = s.dir
  return eventually(function()
    local r = s.source.commands:run(string.format("cat %s/counter; date +%%s.%%N; "
      .. "pid=$(cat %s/counter.pid); kill -0 $pid && echo $pid", dir, dir))
    local seed, i, at, pid = r.stdout:match("^(%d+) (%d+)\n([%d.]+)\n(%d+)\n$")
    ensure(seed, "the counter is not readable: %s%s", r.stdout, r.stderr)
    return { seed = seed, i = tonumber(i), at = tonumber(at), pid = pid }
  end, 30, 0.2)
end

local function state_of(s, id) return s.conn:get_info(id).state end

-- The id of a sandbox in the CLI's JSON.
local function cli_sandbox_id(v)
  local id = type(v) == "table" and v.sandbox_id
  ensure(type(id) == "string", "the CLI's JSON names no sandbox_id")
  return id
end

local function cli_snapshot_ids(v)
  local list = type(v) == "table" and v.snapshots or {}
  local ids = {}
  for _, it in ipairs(list) do
    local id = type(it) == "table" and it.snapshot_id
    if id then ids[id] = true end
  end
  return ids
end

local function lua_snapshot_ids(s, filter)
  local ids = {}
  for _, it in ipairs(s.conn:list_snapshots(filter)) do ids[it.snapshot_id] = true end
  return ids
end

-- Resumes the source through the Lua client: connect where the provider resumes through it,
-- else the deprecated resume route; the handle takes the answer's tokens.
local function lua_resume(s)
  if s.caps.connect_resume then
    s.source:connect({ timeout = s.ttl })
    ensure(s.source.resumed == true, "connect answered as for a running sandbox (200, not 201)")
  else
    s.conn:resume(s.source.id, { timeout = s.ttl })
    s.source:connect({ timeout = s.ttl })
  end
end

-- Reads what continuity needs after a resume: the counter and the file.
local function observe(s, direction, before, paused_for)
  local after = read_counter(s)
  s.memory[#s.memory + 1] = { direction = direction, before = before, after = after,
    paused_for = paused_for }
  local text = s.source.files:read(s.file)
  s.files[#s.files + 1] = { direction = direction, ok = text == s.content,
    got = #text, sha = core.sha256(text) }
end

-- How long a pause lasts at least (s): the frozen counter must not advance meanwhile.
M.PAUSED_FOR = 2

M.LIST = {
  { name = "discovery", fn = function(s)
    -- the CLI side: the provider's capabilities as the CLI reads the config, and its commands
    local rows = s.cli:json(s.config_path and { "providers", "--json", "--config", s.config_path }
      or { "providers", "--json" })
    local cli_caps
    for _, r in ipairs(rows) do
      if r.name == s.provider then
        cli_caps = {}
        for _, c in ipairs(r.capabilities or {}) do cli_caps[c] = true end
      end
    end
    ensure(cli_caps, "`abxlua providers --json` does not list provider %s", s.provider)
    local ops, differ = {}, {}
    local classes = { Connection = s.conn, Sandbox = object.Sandbox }
    for _, o in ipairs(M.OPERATIONS) do
      local args = { "sandbox" }
      for _, w in ipairs(o.words) do args[#args + 1] = w end
      args[#args + 1] = "--help"
      local r = s.cli:run(args, { timeout = 60 })
      local cli = r.code == 0 and cli_caps[o.capability] == true
      local lua = type(classes[o.lua[1]][o.lua[2]]) == "function" and s.caps[o.capability] == true
      ops[#ops + 1] = { operation = o.op, capability = o.capability, cli = cli, lua = lua,
        cli_command = r.code == 0 }
      if cli ~= lua then
        differ[#differ + 1] = string.format("%s (CLI %s, Lua %s)", o.op, cli and "offers it" or
          (r.code == 0 and "lacks capability " .. o.capability or "has no command"),
          lua and "offers it" or "lacks capability " .. o.capability)
      end
      s.available[o.op] = cli and lua
    end
    for c in pairs(s.caps) do
      if not cli_caps[c] then differ[#differ + 1] = "capability " .. c .. " only on the Lua side" end
    end
    for c in pairs(cli_caps) do
      if not s.caps[c] then differ[#differ + 1] = "capability " .. c .. " only on the CLI side" end
    end
    ensure(#differ == 0, "CLI and Lua discovery differ: %s", table.concat(differ, "; "))
    return { operations = ops }
  end },

  { name = "source", after = { "discovery" }, fn = function(s)
    -- the sandbox every later check uses: a file and a counting process in its own directory
    s.source = s.conn:create({ template = s.template, timeout = s.ttl,
      metadata = { abx_accept = "conditional" } })
    s.ids[s.source.id] = "sandbox"
    local home = s.source.commands:run("printf %s \"$HOME\"").stdout
    ensure(home:match("^/"), "the sandbox's HOME is not a path")
    s.dir = home .. "/abx-conditional"
    s.file = s.dir .. "/state.txt"
    s.content = "conditional-" .. core.random_hex(8) .. "\n"
    local r = s.source.commands:run("mkdir -p " .. s.dir)
    ensure(r.exit_code == 0, "mkdir %s failed: %s", s.dir, r.stderr)
    s.source.files:write(s.file, s.content)
    ensure(s.source.commands:run(counter_script(s.dir)).stdout == "started\n",
      "the counter process did not start")
    s.first = read_counter(s)
    eventually(function() ensure(read_counter(s).i >= 5, "the counter does not count") end, 30, 0.3)
  end },

  { name = "pause_cli_resume_lua", needs = { "pause" }, after = { "source" }, fn = function(s)
    local before = read_counter(s)
    local v = s.cli:json({ "sandbox", "pause", s.source.id, "--json" })
    ensure(type(v) == "table" and v.paused == true, "the CLI's pause did not answer paused")
    local paused_at = core.now()
    local st = state_of(s, s.source.id)
    ensure(st == "paused", "after the CLI's pause the Lua client sees state %s", tostring(st))
    core.sleep(M.PAUSED_FOR)
    local paused_for = core.now() - paused_at
    lua_resume(s)
    st = state_of(s, s.source.id)
    ensure(st == "running", "after the Lua client's resume the state is %s", tostring(st))
    observe(s, "CLI pause, Lua resume", before, paused_for)
  end },

  { name = "pause_lua_resume_cli", needs = { "pause" }, after = { "source" }, fn = function(s)
    -- independent of the other direction: a source it left paused is resumed first
    if state_of(s, s.source.id) == "paused" then lua_resume(s) end
    local before = read_counter(s)
    ensure(s.source:pause() == true, "the Lua client's pause answered already paused")
    local paused_at = core.now()
    local v = s.cli:json({ "sandbox", "info", s.source.id, "--json" })
    local st = type(v) == "table" and type(v.sandbox) == "table" and v.sandbox.state
    ensure(st == "paused", "after the Lua client's pause the CLI's info shows state %s",
      tostring(st))
    core.sleep(M.PAUSED_FOR)
    local paused_for = core.now() - paused_at
    v = s.cli:json({ "sandbox", "resume", s.source.id, "--json" })
    ensure(type(v) == "table" and v.resumed == true, "the CLI's resume did not answer resumed")
    st = state_of(s, s.source.id)
    ensure(st == "running", "after the CLI's resume the Lua client sees state %s", tostring(st))
    s.source:connect({ timeout = s.ttl }) -- the handle takes the resumed sandbox's tokens
    ensure(s.source.resumed == false, "the CLI's resume left the sandbox paused: connect resumed it")
    observe(s, "Lua pause, CLI resume", before, paused_for)
  end },

  { name = "memory_continuity", needs = { "pause" },
    after = { "pause_cli_resume_lua", "pause_lua_resume_cli" }, fn = function(s)
    ensure(#s.memory == 2, "%d of the 2 resumes were observed", #s.memory)
    for _, m in ipairs(s.memory) do
      ensure(m.after.pid == s.first.pid, "%s: the counter process was replaced", m.direction)
      ensure(m.after.seed == s.first.seed, "%s: the counter's memory was lost (a new seed)",
        m.direction)
      ensure(m.after.i >= m.before.i, "%s: the counter went back from %d to %d", m.direction,
        m.before.i, m.after.i)
      -- it never counts faster than 10/s, and not at all while frozen
      local bound = 10 * ((m.after.at - m.before.at) - m.paused_for) + 10
      ensure(m.after.i - m.before.i <= bound, "%s: the counter advanced %d while paused for "
        .. ">= %.1f s (at most %.0f when frozen)", m.direction, m.after.i - m.before.i,
        m.paused_for, bound)
    end
    local last = s.memory[#s.memory].after
    eventually(function()
      ensure(read_counter(s).i > last.i, "the counter does not count after the resumes")
    end, 30, 0.3)
    return { resumes = #s.memory }
  end },

  { name = "file_continuity", needs = { "pause" },
    after = { "pause_cli_resume_lua", "pause_lua_resume_cli" }, fn = function(s)
    ensure(#s.files == 2, "%d of the 2 resumes were observed", #s.files)
    for _, f in ipairs(s.files) do
      ensure(f.ok, "%s: the file changed (%d bytes, sha256 %s)", f.direction, f.got, f.sha)
    end
    return { resumes = #s.files }
  end },

  { name = "snapshot_create", needs = { "snapshot" }, after = { "source" },
    fn = function(s)
    local v = s.cli:json({ "sandbox", "snapshot", "create", s.source.id, "--json" })
    local id = type(v) == "table" and v.snapshot_id
    ensure(type(id) == "string", "the CLI's snapshot create names no snapshot_id")
    s.ids[id] = "snapshot"
    for _, n in ipairs(type(v.names) == "table" and v.names or {}) do s.ids[n] = "snapshot" end
    s.tracker:track_snapshot({ snapshot_id = id })
    s.snap_cli = id
    local snap = s.source:create_snapshot() -- tracked through the connection's hooks
    s.ids[snap.snapshot_id] = "snapshot"
    for _, n in ipairs(snap.names) do s.ids[n] = "snapshot" end
    s.snap_lua = snap.snapshot_id
    ensure(state_of(s, s.source.id) == "running", "the source is not running after its snapshots")
    -- changes after the snapshots are in neither
    s.source.files:write(s.file, "after-snapshot\n")
  end },

  { name = "snapshot_list", needs = { "snapshot" }, after = { "snapshot_create" }, fn = function(s)
    local want = { s.snap_cli, s.snap_lua }
    local views = {
      ["CLI list ID"] = cli_snapshot_ids(s.cli:json({ "sandbox", "snapshot", "list", s.source.id,
        "--json" })),
      ["CLI list"] = cli_snapshot_ids(s.cli:json({ "sandbox", "snapshot", "list", "--json" })),
      ["Lua list_snapshots{sandbox_id}"] = lua_snapshot_ids(s, { sandbox_id = s.source.id }),
      ["Lua list_snapshots"] = lua_snapshot_ids(s),
    }
    for view, ids in pairs(views) do
      ensure(ids[want[1]], "%s lacks the snapshot the CLI made", view)
      ensure(ids[want[2]], "%s lacks the snapshot the Lua client made", view)
    end
  end },

  { name = "snapshot_restore", needs = { "snapshot" }, after = { "snapshot_create" },
    fn = function(s)
    local v = s.cli:json({ "sandbox", "snapshot", "restore", s.snap_cli, "--json" })
    local id = cli_sandbox_id(v)
    s.ids[id] = "sandbox"
    s.cli_sandboxes[#s.cli_sandboxes + 1] = id
    local info = s.conn:get_info(id)
    ensure(info.metadata and info.metadata.e2e == s.run_id,
      "the CLI's restored sandbox does not carry the run's tag e2e")
    s.clone_cli = s.conn:connect(id, { timeout = s.ttl })
    s.clone_lua = s.conn:create({ template = s.snap_lua, timeout = s.ttl,
      metadata = { abx_accept = "conditional" } })
    s.ids[s.clone_lua.id] = "sandbox"
    for name, c in pairs({ ["the CLI's restore"] = s.clone_cli, ["the Lua restore"] = s.clone_lua }) do
      local text = c.files:read(s.file)
      ensure(text == s.content, "%s: the file is not as it was at the snapshot (%d bytes)", name,
        #text)
    end
  end },

  { name = "clone_isolation", needs = { "snapshot" }, after = { "snapshot_restore" },
    fn = function(s)
    local a, b, src = s.clone_cli, s.clone_lua, s.source
    a.files:write(s.file, "changed-in-clone\n")
    a.files:write(s.dir .. "/only-in-clone", "clone\n")
    src.files:write(s.dir .. "/only-in-source", "source\n")
    ensure(src.files:read(s.file) == "after-snapshot\n", "the source sees the clone's change")
    ensure(src.files:exists(s.dir .. "/only-in-clone") == false, "the source sees the clone's file")
    ensure(a.files:exists(s.dir .. "/only-in-source") == false, "the clone sees the source's file")
    ensure(b.files:read(s.file) == s.content, "one clone sees the other's change")
    ensure(b.files:exists(s.dir .. "/only-in-clone") == false, "one clone sees the other's file")
    ensure(a.files:read(s.file) == "changed-in-clone\n", "the clone lost its own change")
  end },

  { name = "snapshot_delete", needs = { "snapshot" }, after = { "snapshot_create" },
    fn = function(s)
    -- a snapshot still in use by a sandbox cannot be deleted: the clones go first
    for _, c in ipairs({ s.clone_cli, s.clone_lua }) do if c then s.conn:kill(c.id) end end
    local v = s.cli:json({ "sandbox", "snapshot", "delete", s.snap_cli, "--json" })
    ensure(type(v) == "table" and v.deleted == true, "the CLI's delete did not answer deleted")
    ensure(s.conn:delete_snapshot(s.snap_cli) == false,
      "the Lua client could still delete the snapshot the CLI deleted")
    s.tracker:forget_snapshot(s.snap_cli)
    ensure(not lua_snapshot_ids(s, { sandbox_id = s.source.id })[s.snap_cli],
      "the Lua client still lists the snapshot the CLI deleted")
    local ok, err = pcall(s.conn.create, s.conn, { template = s.snap_cli, timeout = s.ttl })
    if ok then
      err:kill()
      fail("the deleted snapshot still restores")
    end
    ensure(core.is_error(err) and err.kind == "NotFound",
      "restoring the deleted snapshot raised %s, not NotFound", core.is_error(err) and err.kind or "a Lua error")
    ensure(s.conn:delete_snapshot(s.snap_lua) == true, "the Lua client's delete answered not found")
    local r = s.cli:run({ "sandbox", "snapshot", "delete", s.snap_lua, "--json" })
    ensure(r.code == 1, "the CLI's delete of a deleted snapshot exited %s, not 1", tostring(r.code))
    ensure(not cli_snapshot_ids(s.cli:json({ "sandbox", "snapshot", "list", s.source.id,
      "--json" }))[s.snap_lua], "the CLI still lists the snapshot the Lua client deleted")
  end },
}

---Verifies the owned cleanup independently of the tracker that did it: no sandbox with the run's
---tag is listed (Lua, any state; the CLI's list), none of the snapshots the run saw is listed,
---and the supplied template still exists. Raises to fail.
---@param s table the run's state
---@param fresh table a connection without the tracker's hooks
function M.verify_cleanup(s, fresh)
  local left = fresh:list({ metadata = { e2e = s.run_id }, state = { "running", "paused" } })
  ensure(#left == 0, "%d sandbox(es) with the run's tag are still listed", #left)
  local v = s.cli:json({ "sandbox", "list", "--json" })
  for _, it in ipairs(type(v) == "table" and v.sandboxes or {}) do
    local id = type(it) == "table" and it.sandbox_id
    ensure(not s.ids[id], "the CLI still lists a sandbox of the run")
  end
  if s.caps.snapshot then
    for id in pairs(lua_snapshot_ids({ conn = fresh })) do
      ensure(s.ids[id] ~= "snapshot", "a snapshot of the run is still listed")
    end
  end
  ensure(require("abx.client.template").exists(fresh, s.template),
    "the supplied template is gone")
end

return M
