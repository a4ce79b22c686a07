-- 09_volume_mounts: team volumes mounted into sandboxes: the mount is really there at the exact
-- path, data outlives the sandbox, a read-only mount refuses writes, and nothing stays mounted or
-- running once the sandboxes are killed.
-- Fixtures: ctx.sandbox_factory, ctx.conn, ctx.run_id, ctx.finally (each test deletes its volumes:
-- its sandboxes are killed first, as a volume cannot be deleted while mounted).
-- Requires: volume. Markers: none.
-- Protocol: docs/protocol/e2b-control-plane.md §5 (POST/GET/DELETE /volumes, VolumeAndToken,
--           NewSandbox.volumeMounts [{name, path}]; readOnly is the local platform's extension),
--           §3.3 (SandboxDetail.volumeMounts).
-- "Ordinary directories cannot pass": the mount is checked in /proc/self/mountinfo (a line whose
-- mount point is exactly the path) and by comparing the device of the path with its parent's, so a
-- plain directory created at the path would fail both checks.
local t = require("abx.test")
local mountlib = require("lib.mounts") -- scenarios/lib/mounts.lua, shared with 10_storage_state

local new_volume, mount_lines, is_mount_point = mountlib.new_volume, mountlib.lines,
  mountlib.is_mount_point

t.test("a volume is mounted at exactly the requested path, and a plain directory is not a mount",
  { requires = { "volume" } }, function(ctx)
  local sbx
  local v = new_volume(ctx, "exact", function() return { sbx } end)
  t.match(v.volume_id, "%S")
  t.eq(v.name:sub(1, 10), "abx-exact-")
  sbx = ctx.sandbox_factory({ volume_mounts = { { name = v.name, path = "/mnt/abx-data" } } })
  local lines = mount_lines(sbx, "/mnt/abx-data")
  t.eq(#lines, 1, "mountinfo lines for /mnt/abx-data")
  local ok, out = is_mount_point(sbx, "/mnt/abx-data")
  t.ok(ok, "mountpoint /mnt/abx-data: " .. out)
  -- negative control: a directory made at a path of the same shape is not a mount
  sbx.commands:run("mkdir -p /home/user/abx-plain")
  t.eq(#mount_lines(sbx, "/home/user/abx-plain"), 0, "a plain directory shows in mountinfo")
  t.eq((is_mount_point(sbx, "/home/user/abx-plain")), false, "a plain directory passes mountpoint")
  local mounts = sbx:get_info().volume_mounts
  t.ok(mounts and #mounts == 1, "get_info lists the volume mount")
  t.eq(mounts[1].name, v.name)
  t.eq(mounts[1].path, "/mnt/abx-data")
  -- the default user can write there
  local w = sbx.commands:run("echo hi > /mnt/abx-data/hi && cat /mnt/abx-data/hi")
  t.eq(w.stdout, "hi\n", "write as the default user: " .. w.stderr)
end)

t.test("a sentinel created exclusively on a volume persists after the sandbox is destroyed",
  { requires = { "volume" } }, function(ctx)
  local first, second
  local v = new_volume(ctx, "sentinel", function() return { first, second } end)
  local token = "sentinel-" .. ctx.run_id .. "-" .. tostring(math.random(1, 1e9))
  first = ctx.sandbox_factory({ volume_mounts = { { name = v.name, path = "/mnt/v" } } })
  -- noclobber: `>` opens with O_CREAT|O_EXCL, so this only succeeds on a fresh volume
  local made = first.commands:run("set -o noclobber; echo " .. token .. " > /mnt/v/sentinel")
  t.eq(made.exit_code, 0, "exclusive create on a fresh volume: " .. made.stderr)
  t.eq(first:kill(), true)
  second = ctx.sandbox_factory({ volume_mounts = { { name = v.name, path = "/home/user/again" } } })
  t.eq(second.files:read("/home/user/again/sentinel"), token .. "\n", "the sentinel after destroy and recreate")
  local again = second.commands:run("set -o noclobber; echo x > /home/user/again/sentinel")
  t.neq(again.exit_code, 0, "a second exclusive create of the sentinel succeeded")
  t.match(again.stderr, "cannot overwrite existing file")
  local excl = second.commands:run("python3 -c 'import os; os.open(\"/home/user/again/sentinel\", "
    .. "os.O_CREAT | os.O_EXCL | os.O_WRONLY)'")
  t.neq(excl.exit_code, 0, "O_EXCL create of an existing sentinel succeeded")
  t.match(excl.stderr, "FileExistsError")
  t.eq(second.files:read("/home/user/again/sentinel"), token .. "\n", "the sentinel was changed")
end)

t.test("a read-only volume mount rejects writes with EROFS and still reads the data",
  { requires = { "volume" } }, function(ctx)
  local writer, reader
  local v = new_volume(ctx, "ro", function() return { writer, reader } end)
  writer = ctx.sandbox_factory({ volume_mounts = { { name = v.name, path = "/mnt/rw" } } })
  writer.files:write("/mnt/rw/data.txt", "from the writer")
  writer:kill()
  reader = ctx.sandbox_factory({ volume_mounts = { { name = v.name, path = "/mnt/ro", read_only = true } } })
  t.eq(reader.files:read("/mnt/ro/data.txt"), "from the writer")
  local overwrite = reader.commands:run("echo changed > /mnt/ro/data.txt")
  t.neq(overwrite.exit_code, 0, "overwrite on a read-only mount succeeded")
  t.match(overwrite.stderr, "Read%-only file system")
  local create = reader.commands:run("python3 -c 'open(\"/mnt/ro/new.txt\", \"w\")' 2>&1; "
    .. "python3 -c 'import errno, os\ntry:\n  os.mkdir(\"/mnt/ro/d\")\nexcept OSError as e:\n"
    .. "  print(errno.errorcode[e.errno])'")
  t.match(create.stdout, "Read%-only file system", "open for writing")
  t.match(create.stdout, "EROFS", "mkdir")
  local root = reader.commands:run("echo x > /mnt/ro/as-root", { user = "root" })
  t.match(root.stderr, "Read%-only file system", "root writes a read-only mount")
  t.eq(reader.files:read("/mnt/ro/data.txt"), "from the writer", "the data changed")
  local mounts = reader:get_info().volume_mounts
  t.eq(mounts and mounts[1] and mounts[1].read_only, true, "get_info shows readOnly")
end)

t.test("volumes are listed, fetched and deleted once; a deleted volume cannot be mounted",
  { requires = { "volume" } }, function(ctx)
  local v = new_volume(ctx, "crud")
  local listed = false
  for _, it in ipairs(ctx.conn:list_volumes()) do
    if it.volume_id == v.volume_id then listed = it.name == v.name end
  end
  t.ok(listed, "list_volumes shows the new volume with its name")
  local got = ctx.conn:get_volume(v.volume_id)
  t.eq(got.volume_id, v.volume_id)
  t.eq(got.name, v.name)
  t.eq(t.raises("Conflict", function() ctx.conn:create_volume(v.name) end).status, 409,
    "a second volume with the same name")
  t.eq(t.raises("InvalidArgument", function() ctx.conn:create_volume("bad name!") end).status, 400)
  t.eq(ctx.conn:delete_volume(v.volume_id), true)
  t.eq(ctx.conn:delete_volume(v.volume_id), false, "a second delete")
  t.eq(t.raises("NotFound", function() ctx.conn:get_volume(v.volume_id) end).status, 404)
  t.raises("InvalidArgument", function()
    ctx.sandbox_factory({ volume_mounts = { { name = v.name, path = "/mnt/gone" } } })
  end)
end)

t.test("killing the sandboxes releases their volume: none is listed and the volume can be deleted",
  { requires = { "volume" } }, function(ctx)
  local sbxs = {}
  local v = new_volume(ctx, "release", function() return sbxs end)
  local tag = "release-" .. ctx.run_id .. "-" .. tostring(math.random(1, 1e9))
  for i = 1, 2 do
    sbxs[i] = ctx.sandbox_factory({ metadata = { abx_case = tag },
      volume_mounts = { { name = v.name, path = "/mnt/shared" } } })
    sbxs[i].files:write("/mnt/shared/from-" .. i, tostring(i))
  end
  t.eq(sbxs[2].files:read("/mnt/shared/from-1"), "1", "two sandboxes share the volume")
  t.eq(#ctx.conn:list({ metadata = { e2e = ctx.run_id, abx_case = tag } }), 2)
  -- while mounted the local platform refuses the delete (400); E2B may differ, so only the
  -- outcome after the kills is asserted
  for _, sbx in ipairs(sbxs) do t.eq(sbx:kill(), true) end
  t.eq(#ctx.conn:list({ metadata = { e2e = ctx.run_id, abx_case = tag } }), 0,
    "sandboxes of this test still listed after kill")
  t.eq(ctx.conn:delete_volume(v.volume_id), true, "the volume is still held by a killed sandbox")
end)
