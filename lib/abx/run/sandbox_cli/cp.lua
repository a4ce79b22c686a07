-- abx.run.sandbox_cli.cp: `abxlua sandbox cp SRC DST`: one regular file to a sandbox (`cp LOCAL
-- ID:PATH`) or from one (`cp ID:PATH LOCAL`), streamed through envd's /files (never held in
-- memory). ID:PATH names a sandbox path when PATH is absolute and ID a sandbox id; exactly one
-- side must. Parent directories in the sandbox are created; a local destination that is a
-- directory gets the source's base name. JSON: {direction ("upload" | "download"), sandbox_id,
-- sandbox_path, local_path, bytes, sha256 (of the local file after the copy)}.
-- A download that fails removes its partial local file (the file is created by this copy; an
-- existing one is replaced only after the transfer completes).
local a = require("abx.run.sandbox_cli.args")
local core = require("abx.core")

local M = {}

M.DESCRIPTION = "Copy a file into (cp LOCAL ID:PATH) or out of (cp ID:PATH LOCAL) a sandbox."

function M.configure(cmd)
  cmd:argument("src", "LOCAL or ID:PATH.")
  cmd:argument("dst", "ID:PATH or LOCAL.")
  cmd:option("--user", "The sandbox user whose permissions the copy has (default envd's: user).")
  cmd:option("--ttl", "The sandbox lives at least this many seconds from now.", "300")
    :convert(a.seconds("--ttl"))
end

---Splits ID:PATH; nil when the argument is not one.
---@param s string
---@return string|nil id, string|nil path
function M.remote(s)
  local id, path = s:match("^([%w][%w%-_]*):(/.*)$")
  if id and a.sandbox_id(id) then return id, path end
  return nil
end

local function sha256_file(path)
  local h = core.sha256_new()
  h:update_file(path)
  return h:hex()
end

function M.execute(args, env)
  local sid, spath = M.remote(args.src)
  local did, dpath = M.remote(args.dst)
  if sid and did then return nil, "cp copies between this machine and one sandbox: not both ID:PATH" end
  if not sid and not did then
    return nil, "cp needs one side as ID:PATH (a sandbox id, a colon, an absolute path)"
  end
  local doc
  if did then -- upload
    local st = core.lstat(args.src)
    if not st then return nil, "cp: no such local file: " .. args.src end
    if st.type ~= "file" then return nil, "cp copies one regular file; " .. args.src .. " is a " .. st.type end
    local sbx = env:open():connect(did, { timeout = args.ttl })
    local f = assert(io.open(args.src, "rb"))
    local ok, err = pcall(sbx.files.write, sbx.files, dpath, nil, { from = f, user = args.user })
    f:close()
    if not ok then error(err, 0) end
    doc = { direction = "upload", sandbox_id = did, sandbox_path = dpath, local_path = args.src,
      bytes = st.size, sha256 = sha256_file(args.src) }
  else -- download
    local dst = args.dst
    if core.isdir(dst) then dst = dst:gsub("/+$", "") .. "/" .. spath:match("([^/]+)/*$") end
    local sbx = env:open():connect(sid, { timeout = args.ttl })
    local tmp = dst .. ".abxlua-cp-" .. core.random_hex(4)
    local f, oerr = io.open(tmp, "wb")
    if not f then return nil, "cp: cannot write " .. tostring(oerr) end
    env:finally(function() os.remove(tmp) end) -- gone once renamed; a partial file otherwise
    local ok, n = pcall(sbx.files.read, sbx.files, spath, { to = f, user = args.user })
    f:close()
    if not ok then error(n, 0) end
    local rok, rerr = os.rename(tmp, dst)
    if not rok then return nil, "cp: cannot move the copy to " .. dst .. ": " .. tostring(rerr) end
    doc = { direction = "download", sandbox_id = sid, sandbox_path = spath, local_path = dst,
      bytes = math.tointeger(n) or n, sha256 = sha256_file(dst) }
  end
  env:emit(doc, string.format("%s %s:%s %s %s (%d bytes, sha256 %s)", doc.direction,
    doc.sandbox_id, doc.sandbox_path, doc.direction == "upload" and "<-" or "->", doc.local_path,
    doc.bytes, doc.sha256))
  return 0
end

return M
