-- 04_files_envd: files through envd: content round trips (text, binary, empty, 10 MiB), listing,
-- stat, make_dir, rename, remove, unusual names, parent creation, ownership.
-- Fixtures: ctx.base_sandbox, ctx.workdir (a fresh directory per test). Markers: none.
-- Protocol: docs/protocol/envd-protocol.md §7 (GET/POST /files, octet-stream upload, parents created
--           and chowned to the user, X-Metadata-* headers, gzip both ways), §5 (filesystem.Filesystem:
--           Stat, ListDir depth, MakeDir already_exists, Move, Remove, EntryInfo.metadata), §3
--           (EntryInfo in ProtoJSON), §2.4 (not_found), §8 (v1 file URL signatures).
local t = require("abx.test")
local files = require("abx.files")

local function names(entries)
  local out = {}
  for _, e in ipairs(entries) do out[#out + 1] = e.name end
  table.sort(out)
  return table.concat(out, ",")
end

local function remote_sha(sbx, path)
  local r = sbx.commands:run("sha256sum '" .. path .. "'")
  t.eq(r.exit_code, 0)
  return r.stdout:match("^(%x+)")
end

t.test("a text file round-trips", function(ctx)
  local sbx, path = ctx.base_sandbox, ctx.workdir .. "/hello.txt"
  local entry = sbx.files:write(path, "hello, files\n")
  t.eq(entry.path, path)
  t.eq(entry.name, "hello.txt")
  t.eq(entry.type, "file")
  t.eq(sbx.files:read(path), "hello, files\n")
  t.eq(sbx.commands:run("cat '" .. path .. "'").stdout, "hello, files\n")
end)

t.test("all 256 byte values round-trip unchanged", function(ctx)
  local sbx, path = ctx.base_sandbox, ctx.workdir .. "/bytes.bin"
  local bytes = {}
  for i = 0, 255 do bytes[#bytes + 1] = string.char(i) end
  local data = table.concat(bytes)
  sbx.files:write(path, data)
  t.eq(remote_sha(sbx, path), files.sha256(data))
  local back = sbx.files:read(path, { format = "bytes" })
  t.eq(#back, 256)
  t.eq(files.sha256(back), files.sha256(data))
end)

t.test("an empty file round-trips", function(ctx)
  local sbx, path = ctx.base_sandbox, ctx.workdir .. "/empty"
  sbx.files:write(path, "")
  t.eq(sbx.files:read(path), "")
  t.eq(sbx.files:get_info(path).size, 0)
end)

t.test("a 10 MiB file round-trips intact", function(ctx)
  local sbx, path = ctx.base_sandbox, ctx.workdir .. "/big.bin"
  local block = {}
  for i = 0, 1023 do block[#block + 1] = string.char((i * 7 + 13) % 256) end
  local kib = table.concat(block)
  local chunks = {}
  for i = 1, 10 * 1024 do chunks[i] = kib:sub(i % 1024 + 1) .. kib:sub(1, i % 1024) end
  local data = table.concat(chunks)
  t.eq(#data, 10 * 1024 * 1024)
  sbx.files:write(path, data)
  t.eq(sbx.files:get_info(path).size, #data)
  t.eq(remote_sha(sbx, path), files.sha256(data))
  t.eq(files.sha256(sbx.files:read(path)), files.sha256(data))
end)

t.test("listing a directory shows its files and subdirectories", function(ctx)
  local sbx, dir = ctx.base_sandbox, ctx.workdir
  sbx.files:write(dir .. "/a.txt", "a")
  sbx.files:write(dir .. "/b.txt", "bb")
  sbx.files:make_dir(dir .. "/sub")
  local entries = sbx.files:list(dir)
  t.eq(names(entries), "a.txt,b.txt,sub")
  for _, e in ipairs(entries) do
    t.eq(e.path, dir .. "/" .. e.name)
    t.eq(e.type, e.name == "sub" and "dir" or "file")
  end
end)

t.test("get_info reports size, type, name and permissions", function(ctx)
  local sbx, path = ctx.base_sandbox, ctx.workdir .. "/five.txt"
  sbx.files:write(path, "12345")
  local info = sbx.files:get_info(path)
  t.eq(info.size, 5)
  t.eq(info.type, "file")
  t.eq(info.name, "five.txt")
  t.eq(info.path, path)
  t.match(info.permissions, "^%-rw")
  t.ok(type(info.modified_time) == "string", "modified_time is an RFC 3339 string")
  t.eq(sbx.files:get_info(ctx.workdir).type, "dir")
end)

t.test("make_dir returns true, then false when the directory exists", function(ctx)
  local sbx, dir = ctx.base_sandbox, ctx.workdir .. "/made/deep"
  t.eq(sbx.files:make_dir(dir), true)
  t.eq(sbx.files:make_dir(dir), false)
  t.eq(sbx.files:get_info(dir).type, "dir")
end)

t.test("rename moves a file to its new name", function(ctx)
  local sbx = ctx.base_sandbox
  local old, new = ctx.workdir .. "/old.txt", ctx.workdir .. "/moved/new.txt"
  sbx.files:write(old, "moving")
  local entry = sbx.files:rename(old, new)
  t.eq(entry.path, new)
  t.eq(entry.name, "new.txt")
  t.eq(sbx.files:exists(old), false)
  t.eq(sbx.files:read(new), "moving")
end)

t.test("a removed file no longer exists", function(ctx)
  local sbx, path = ctx.base_sandbox, ctx.workdir .. "/gone.txt"
  sbx.files:write(path, "x")
  t.eq(sbx.files:exists(path), true)
  sbx.files:remove(path)
  t.eq(sbx.files:exists(path), false)
  sbx.files:remove(path) -- removing a missing path is not an error
end)

t.test("removing a directory removes its whole tree", function(ctx)
  local sbx, dir = ctx.base_sandbox, ctx.workdir .. "/tree"
  sbx.files:write(dir .. "/a/b/c.txt", "c")
  sbx.files:remove(dir)
  t.eq(sbx.files:exists(dir), false)
end)

t.test("a UTF-8 file name round-trips", function(ctx)
  local sbx = ctx.base_sandbox
  local name = "файл-文件-ü.txt"
  local path = ctx.workdir .. "/" .. name
  sbx.files:write(path, "unicode")
  t.eq(sbx.files:read(path), "unicode")
  t.eq(names(sbx.files:list(ctx.workdir)), name)
  t.eq(sbx.commands:run("ls '" .. ctx.workdir .. "'").stdout, name .. "\n")
end)

t.test("a file name with spaces round-trips", function(ctx)
  local sbx = ctx.base_sandbox
  local path = ctx.workdir .. "/my file  name.txt"
  sbx.files:write(path, "spaces")
  t.eq(sbx.files:read(path), "spaces")
  t.eq(sbx.files:get_info(path).name, "my file  name.txt")
  t.eq(sbx.commands:run("cat '" .. path .. "'; echo").stdout, "spaces\n")
end)

t.test("reading a missing file gives NotFound", function(ctx)
  local err = t.raises("NotFound", function()
    ctx.base_sandbox.files:read(ctx.workdir .. "/missing.txt")
  end)
  t.eq(err.status, 404)
  t.raises("NotFound", function() ctx.base_sandbox.files:get_info(ctx.workdir .. "/missing.txt") end)
end)

t.test("writing under missing directories creates them", function(ctx)
  local sbx = ctx.base_sandbox
  local path = ctx.workdir .. "/x/y/z/file.txt"
  sbx.files:write(path, "deep")
  t.eq(sbx.files:read(path), "deep")
  t.eq(sbx.files:get_info(ctx.workdir .. "/x/y").type, "dir")
  t.eq(sbx.files:get_info(ctx.workdir .. "/x/y/z/file.txt").type, "file")
end)

-- envd writes as `user`, parents included; OpenSandbox's execd makes the parents as its own user
-- (root) and gives only the file its owner (components/execd filesystem_upload.go @ 3bb6fad3).
t.test("the missing directories a write creates belong to user",
  { requires = { "default_user" } }, function(ctx)
  local sbx = ctx.base_sandbox
  sbx.files:write(ctx.workdir .. "/x/y/file.txt", "deep")
  t.eq(sbx.files:get_info(ctx.workdir .. "/x").owner, "user")
  t.eq(sbx.files:get_info(ctx.workdir .. "/x/y").owner, "user")
end)

-- A file handle is sent from its position (E2B: streamed; OpenSandbox: read into memory first,
-- execd's upload being multipart).
t.test("a file handle given as from is uploaded from its position", function(ctx)
  local sbx, path = ctx.base_sandbox, ctx.workdir .. "/from.bin"
  local f <close> = assert(io.tmpfile())
  local bytes = "skip-me|" .. string.rep("\0\1\255abc", 1000)
  f:write(bytes)
  f:seek("set", #"skip-me|")
  sbx.files:write(path, nil, { from = f })
  t.eq(sbx.files:read(path), bytes:sub(#"skip-me|" + 1))
  f:seek("set", 0)
  sbx.files:write(path, f)
  t.eq(sbx.files:read(path), bytes)
  t.raises("InvalidArgument", function() sbx.files:write(path, "x", { from = f }) end)
  t.raises("InvalidArgument", function() sbx.files:write(path, nil, { from = "not a handle" }) end)
end)

t.test("a depth-2 listing includes grandchildren but not deeper entries", function(ctx)
  local sbx, dir = ctx.base_sandbox, ctx.workdir
  sbx.files:write(dir .. "/top/mid/leaf/deep.txt", "d")
  t.eq(names(sbx.files:list(dir, { depth = 1 })), "top")
  local two = sbx.files:list(dir, { depth = 2 })
  t.eq(names(two), "mid,top")
  for _, e in ipairs(two) do
    if e.name == "mid" then t.eq(e.path, dir .. "/top/mid") end
  end
end)

t.test("a file written by default is owned by user",
  { requires = { "default_user" } }, function(ctx)
  local sbx = ctx.base_sandbox
  local mine = ctx.workdir .. "/mine.txt"
  sbx.files:write(mine, "u")
  t.eq(sbx.files:get_info(mine).owner, "user")
  t.eq(sbx.commands:run("stat -c %U '" .. mine .. "'").stdout, "user\n")
end)

t.test("a file written as user is owned by user, as root by root", function(ctx)
  local sbx = ctx.base_sandbox
  local mine = ctx.workdir .. "/mine.txt"
  sbx.files:write(mine, "u", { user = "user" })
  t.eq(sbx.files:get_info(mine).owner, "user")
  t.eq(sbx.commands:run("stat -c %U '" .. mine .. "'").stdout, "user\n")
  local roots = "/tmp/abx-root-" .. ctx.run_id .. ".txt"
  sbx.files:write(roots, "r", { user = "root" })
  t.eq(sbx.files:get_info(roots).owner, "root")
  t.eq(sbx.files:read(roots, { user = "root" }), "r")
end)

-- ---- metadata (§7 X-Metadata-*, §5.1 EntryInfo.metadata) -------------------------------------

t.test("metadata written with a file comes back on write, get_info and list", function(ctx)
  local sbx, path = ctx.base_sandbox, ctx.workdir .. "/meta.txt"
  local entry = sbx.files:write(path, "m", { metadata = { owner = "qa", ["Build-ID"] = "42 x" } })
  local want = { owner = "qa", ["build-id"] = "42 x" } -- envd lower-cases keys
  t.eq(entry.metadata, want)
  t.eq(sbx.files:get_info(path).metadata, want)
  local listed = sbx.files:list(ctx.workdir)
  t.eq(#listed, 1)
  t.eq(listed[1].metadata, want)
end)

t.test("a new write replaces the metadata and a write without it clears it", function(ctx)
  local sbx, path = ctx.base_sandbox, ctx.workdir .. "/meta.txt"
  sbx.files:write(path, "1", { metadata = { owner = "qa", stage = "one" } })
  sbx.files:write(path, "2", { metadata = { owner = "ops" } })
  t.eq(sbx.files:get_info(path).metadata, { owner = "ops" })
  sbx.files:write(path, "3")
  t.eq(sbx.files:get_info(path).metadata, nil)
  t.eq(sbx.files:read(path), "3")
end)

t.test("metadata that is not printable ASCII is refused and nothing is written",
  { requires = { "file_metadata" } }, function(ctx)
  local sbx, path = ctx.base_sandbox, ctx.workdir .. "/refused.txt"
  t.raises("InvalidArgument", function()
    sbx.files:write(path, "x", { metadata = { note = "caf\xe9" } })
  end)
  t.raises("InvalidArgument", function()
    sbx.files:write(path, "x", { metadata = { big = string.rep("v", 4100) } })
  end)
  t.eq(sbx.files:exists(path), false)
end)

-- ---- gzip (§7) -------------------------------------------------------------------------------

t.test("a gzip-encoded upload is stored decoded", function(ctx)
  local sbx, path = ctx.base_sandbox, ctx.workdir .. "/gz-up.bin"
  local parts = {}
  for i = 1, 70000 do parts[i] = string.char(i % 251) end -- more than one 64 KiB deflate block
  local data = table.concat(parts)
  sbx.files:write(path, data, { gzip = true })
  t.eq(remote_sha(sbx, path), files.sha256(data))
  t.eq(sbx.files:get_info(path).size, #data)
end)

t.test("a gzip download is smaller and inflates back to the original", function(ctx)
  local sbx = ctx.base_sandbox
  local path, copy = ctx.workdir .. "/gz-down.txt", ctx.workdir .. "/gz-copy.txt"
  local data = string.rep("abxlua gzip line\n", 20000)
  sbx.files:write(path, data)
  local gz = sbx.files:read_gzip(path)
  t.eq(gz:sub(1, 3), "\31\139\8") -- gzip magic, deflate
  t.ok(#gz < #data // 10, "compressed " .. #data .. " bytes to " .. #gz)
  sbx.files:write(copy, gz, { content_encoding = "gzip" }) -- envd inflates it back
  t.eq(files.sha256(sbx.files:read(copy)), files.sha256(data))
  local r = sbx.commands:run("cmp '" .. path .. "' '" .. copy .. "'")
  t.eq(r.exit_code, 0)
end)

-- ---- signed URLs (§8) ------------------------------------------------------------------------

t.test("the v1 file signature matches the reference test vectors", function()
  t.eq(files.sign("/home/user/a.txt", "read", nil, "tok"),
    "v1_Zkbb3914oLJLvMBzCAHQhm2ydBLxbSx2eQUR/kLdvIY")
  t.eq(files.sign("/home/user/a.txt", "write", "user", "tok", 1700000000),
    "v1_x09R0+VxB2mRzkxWcRyFCpiJmFv0okUrtgQ6q12G0jM")
end)

t.test("a signed download URL reads a file without the access token", { requires = { "secure" } },
  function(ctx)
  local sbx, path = ctx.base_sandbox, ctx.workdir .. "/signed.txt"
  t.eq(sbx.secure, true)
  sbx.files:write(path, "signed bytes")
  local url = sbx.files:download_url(path, { expires_in = 300 })
  t.match(url, "signature=v1_")
  t.match(url, "signature_expiration=%d+")
  t.eq(sbx.files:read_url(url), "signed bytes")
  t.eq(sbx.files:read_url(sbx.files:download_url(path)), "signed bytes") -- no expiration
end)

t.test("a signed upload URL writes a file owned by its user without the access token", function(ctx)
  local sbx, path = ctx.base_sandbox, ctx.workdir .. "/up/signed-up.txt"
  local entry = sbx.files:write_url(sbx.files:upload_url(path, { expires_in = 300 }), "uploaded")
  t.eq(entry.path, path)
  t.eq(sbx.files:read(path), "uploaded")
  t.eq(sbx.files:get_info(path).owner, "user")
end)

t.test("an expired, tampered or unsigned file URL gives Authentication", { requires = { "secure" } },
  function(ctx)
  local sbx, path = ctx.base_sandbox, ctx.workdir .. "/guarded.txt"
  sbx.files:write(path, "guarded")
  local expired = sbx.files:download_url(path, { expires_in = -5 })
  local err = t.raises("Authentication", function() sbx.files:read_url(expired) end)
  t.eq(err.status, 401)
  t.match(err.message, "expired")
  local write_sig = sbx.files:upload_url(path) -- signed for "write", used to read
  t.raises("Authentication", function() sbx.files:read_url(write_sig) end)
  local other = sbx.files:download_url(ctx.workdir .. "/other.txt")
  local moved = other:gsub("other%.txt", "guarded.txt") -- the signature of another path
  t.raises("Authentication", function() sbx.files:read_url(moved) end)
  local unsigned = sbx.files:download_url(path):gsub("&signature=[^&]*", "")
  t.match(t.raises("Authentication", function() sbx.files:read_url(unsigned) end).message,
    "missing signature")
  t.raises("Authentication", function()
    sbx.files:write_url(sbx.files:upload_url(path, { expires_in = -5 }), "overwrite")
  end)
  t.eq(sbx.files:read(path), "guarded")
end)
