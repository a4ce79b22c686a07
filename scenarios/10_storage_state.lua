-- 10_storage_state: owned storage persistence and read-only acceptance (the seed's
-- test_skill_storage_state). A read-write and a read-only volume configuration over the same
-- storage: the exact kernel mount is verified in /proc/self/mountinfo (mount point exactly the
-- path, rw or ro per-mount option) before a uniquely named sentinel is created exclusively
-- (O_CREAT|O_EXCL) and fsynced; the first sandbox is destroyed and its typed not-found checked; a
-- new sandbox reads the data; the read-only mount reads it and refuses an exclusive create with
-- EROFS or EACCES. Cleanup removes only the verified sentinel (and a probe the read-only mount
-- wrongly let through) and the tracked sandboxes.
-- Locally (the embedded platform, conn.kind "local") always on: the test creates one volume and
-- mounts it read-write in one sandbox and read-only (the local platform's readOnly extension) in
-- another, and deletes it. On a cloud it is opt-in and uses two volume configurations the owner
-- provisioned (nothing is provisioned or deleted): E2E_VOLUME_ACCEPTANCE=owned-only,
-- E2E_VOLUME_OWNER_RUN=abx-accept-<12 [a-z0-9]>, E2E_VOLUME_RW_NAME=<run>-rw,
-- E2E_VOLUME_RO_NAME=<run>-ro, E2E_VOLUME_TEMPLATE. Without the opt-in the test skips saying so;
-- an opt-in with a missing or malformed prerequisite fails (no arbitrary volume is chosen).
-- Fixtures: ctx.sandbox_factory, ctx.conn, ctx.run_id, ctx.finally. Helpers: scenarios/lib/mounts.lua.
-- Requires: volume. Markers: none.
-- Protocol: docs/protocol/e2b-control-plane.md §5 (volumes, NewSandbox.volumeMounts [{name, path}];
--           readOnly is the local platform's extension), §3.4 and §6.1 (GET /sandboxes/{id} of a
--           killed sandbox: 404, SandboxNotFound); proc(5) mountinfo; open(2) O_EXCL, EROFS, EACCES.
local t = require("abx.test")
local core = require("abx.core")
local provider = require("abx.run.provider")
local mounts = require("lib.mounts")

-- The seed's owned run name: abx-accept- and 12 lowercase letters or digits.
local function owned_run_ok(run)
  return type(run) == "string" and #run == 23 and run:match("^abx%-accept%-[a-z0-9]+$") ~= nil
end

local OPT_IN = "E2E_VOLUME_ACCEPTANCE=owned-only, E2E_VOLUME_OWNER_RUN, E2E_VOLUME_RW_NAME, "
  .. "E2E_VOLUME_RO_NAME and E2E_VOLUME_TEMPLATE"

-- What the test mounts: { rw = {name, path}, ro = {name, path, read_only?}, template? }.
-- Locally a fresh volume (deleted at teardown after `sandboxes()` are killed); on a cloud the
-- owner's two configurations, checked before any sandbox exists.
local function storage(ctx, sandboxes)
  if ctx.conn.kind == "local" then
    local v = mounts.new_volume(ctx, "state", sandboxes)
    return { rw = { name = v.name, path = "/mnt/abx-state" },
      ro = { name = v.name, path = "/mnt/abx-state-ro", read_only = true } }
  end
  local acceptance = provider.lookup("E2E_VOLUME_ACCEPTANCE")
  if not acceptance then
    t.skip("owned volume acceptance is opt-in on a cloud: set " .. OPT_IN
      .. " (two volume configurations you provisioned over one storage; README \"Storage state\")")
  end
  if acceptance ~= "owned-only" then
    t.fail("E2E_VOLUME_ACCEPTANCE must be owned-only (the only mode), got " .. acceptance)
  end
  local run = provider.lookup("E2E_VOLUME_OWNER_RUN")
  if not owned_run_ok(run) then
    t.fail("E2E_VOLUME_OWNER_RUN must be abx-accept- followed by 12 lowercase letters or digits, got "
      .. tostring(run))
  end
  local rw, ro = provider.lookup("E2E_VOLUME_RW_NAME"), provider.lookup("E2E_VOLUME_RO_NAME")
  if rw ~= run .. "-rw" then
    t.fail("E2E_VOLUME_RW_NAME must be " .. run .. "-rw, got " .. tostring(rw))
  end
  if ro ~= run .. "-ro" then
    t.fail("E2E_VOLUME_RO_NAME must be " .. run .. "-ro, got " .. tostring(ro))
  end
  local template = provider.lookup("E2E_VOLUME_TEMPLATE")
  if not template then t.fail("E2E_VOLUME_TEMPLATE must name the eligible runtime template") end
  local have = {}
  for _, v in ipairs(ctx.conn:list_volumes()) do have[v.name] = true end
  for _, name in ipairs({ rw, ro }) do
    t.ok(have[name], "volume configuration " .. name .. " is not in the team's volumes "
      .. "(it is never created here)")
  end
  return { rw = { name = rw, path = "/mnt/abx-e2e/" .. rw },
    ro = { name = ro, path = "/mnt/abx-e2e/" .. ro }, template = template }
end

-- A shell word for `s` (single quotes).
local function quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- python3 in the sandbox: create `path` with O_CREAT|O_EXCL|O_WRONLY, write `data`, fsync the
-- file and its directory. Prints "created", or the errno name of the refusal.
local function exclusive_create(sbx, path, data)
  local src = table.concat({
    "import errno, os, sys",
    "p, data = sys.argv[1], sys.argv[2].encode()",
    "try:",
    "    fd = os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)",
    "except OSError as e:",
    "    print(errno.errorcode.get(e.errno, str(e.errno))); sys.exit(0)",
    "os.write(fd, data); os.fsync(fd); os.close(fd)",
    "d = os.open(os.path.dirname(p), os.O_RDONLY); os.fsync(d); os.close(d)",
    "print('created')",
  }, "\n")
  local r = sbx.commands:run(string.format("python3 -c %s %s %s", quote(src), quote(path),
    quote(data)))
  t.eq(r.exit_code, 0, "python3 exclusive create of " .. path .. ": " .. r.stderr)
  return (r.stdout:gsub("%s+$", ""))
end

-- Removes exactly `path` (a file this test created); true when it was there.
local function remove_file(sbx, path)
  local r = sbx.commands:run("python3 -c 'import os, sys\ntry:\n    os.remove(sys.argv[1]); "
    .. "print(\"removed\")\nexcept FileNotFoundError:\n    print(\"absent\")' " .. quote(path))
  t.eq(r.exit_code, 0, "remove " .. path .. ": " .. r.stderr)
  return r.stdout == "removed\n"
end

t.test("owned storage: exact rw/ro kernel mounts, an fsynced exclusive sentinel outlives its "
  .. "sandbox, and the read-only mount reads it and refuses writes",
  { requires = { "volume" }, sandboxes = 3, timeout = 240 }, function(ctx)
  local writer, second, reader
  local cfg = storage(ctx, function() return { writer, second, reader } end)
  local name = "abx-sentinel-" .. ctx.run_id .. "-" .. core.random_hex(8)
  local token = "state-" .. core.random_hex(16)
  local owned = {} -- paths (under the rw mount) this test created and verified: removed at teardown
  ctx.finally(function()
    if not next(owned) then return end
    -- the second rw sandbox when it is still up, else a fresh one for the removal only
    local sbx = second
    if not sbx or not pcall(function() sbx.commands:run("true") end) then
      sbx = ctx.sandbox_factory({ template = cfg.template, volume_mounts = { cfg.rw } })
      mounts.verify(sbx, cfg.rw.path, "rw")
    end
    for path in pairs(owned) do remove_file(sbx, path) end
  end)

  writer = ctx.sandbox_factory({ template = cfg.template, volume_mounts = { cfg.rw } })
  -- the mount first: a sentinel is never written into a plain directory at the path
  mounts.verify(writer, cfg.rw.path, "rw")
  local sentinel = cfg.rw.path .. "/" .. name
  t.eq(exclusive_create(writer, sentinel, token), "created", "exclusive create of the sentinel")
  owned[sentinel] = true
  t.eq(writer.files:read(sentinel), token)

  local id = writer.id
  t.eq(writer:kill(), true, "the first sandbox is destroyed")
  local gone = t.raises("SandboxNotFound", function() ctx.conn:get_info(id) end)
  t.eq(gone.status, 404)

  second = ctx.sandbox_factory({ template = cfg.template, volume_mounts = { cfg.rw } })
  mounts.verify(second, cfg.rw.path, "rw")
  t.eq(second.files:read(sentinel), token, "the sentinel after destroy and recreate")
  t.eq(exclusive_create(second, sentinel, "again"), "EEXIST", "a second exclusive create")

  reader = ctx.sandbox_factory({ template = cfg.template, volume_mounts = { cfg.ro } })
  mounts.verify(reader, cfg.ro.path, "ro")
  t.eq(reader.files:read(cfg.ro.path .. "/" .. name), token, "the read-only mount reads the data")
  local probe = "abx-ro-probe-" .. ctx.run_id .. "-" .. core.random_hex(8)
  local refused = exclusive_create(reader, cfg.ro.path .. "/" .. probe, "x")
  if refused == "created" then owned[cfg.rw.path .. "/" .. probe] = true end
  t.ok(refused == "EROFS" or refused == "EACCES",
    "an exclusive create on the read-only mount: want EROFS or EACCES, got " .. refused)
  t.eq(reader.files:read(cfg.ro.path .. "/" .. name), token, "the data after the refused write")

  -- cleanup of the verified sentinel, through the rw configuration; the read-only view agrees
  t.eq(remove_file(second, sentinel), true, "the sentinel was there to remove")
  owned[sentinel] = nil
  local left = reader.commands:run("test -e " .. cfg.ro.path .. "/" .. name)
  t.neq(left.exit_code, 0, "the sentinel is still seen through the read-only mount")
end)
