-- abx.files: `sbx.files`, the sandbox filesystem through envd (REST /files for content, the
-- filesystem.Filesystem Connect service for metadata).
--
--   sbx.files:write("/home/user/a.txt", "hello")          -- {path, name, type}
--   sbx.files:read("/home/user/a.txt")                     -- "hello"
--   sbx.files:list("/home/user", { depth = 2 })            -- entries
--
-- Entries: {name, path, type = "file"|"dir"|"symlink", size (bytes, number), mode (permission bits),
--           permissions ("-rw-r--r--"), owner, group, modified_time (RFC 3339 string),
--           symlink_target?}. For a symlink envd reports the target's type and sets symlink_target.
-- Users: every call acts as `opts.user` (default "user"): the `username` query on REST, the Basic
--        header on RPCs (reference/envd-protocol.md §6.2).
-- Source: reference/envd-protocol.md §5 (filesystem.Filesystem), §7 (GET/POST /files), §2.4 (errors).

local core = require("abx.core")
local cjson = require("cjson")
local errmap = require("abx.errmap")
local envd = require("abx.envd")

local files = {}

--- Largest file read() accepts by default, bytes.
files.MAX_READ_BYTES = 1024 * 1024 * 1024

---@class abx.Files
---@field _sbx abx.Sandbox
local Files = {}
Files.__index = Files

--- The files object of a sandbox (internal: abx.sandbox builds it).
---@param sbx abx.Sandbox
---@return abx.Files
function files.new(sbx)
  return setmetatable({ _sbx = sbx }, Files)
end

--- sha256 (lower-case hex) of local bytes, to compare with `sha256sum` inside a sandbox.
--- Raises: nothing.
---@param data string
---@return string
function files.sha256(data)
  return core.sha256(data)
end

local function client(self)
  return self._sbx._envd
end

-- FileType enum by name or number (reference §5.1), and the REST spelling ("file", "dir").
local FILE_TYPE = {
  FILE_TYPE_FILE = "file", FILE_TYPE_DIRECTORY = "dir", FILE_TYPE_SYMLINK = "symlink",
  [1] = "file", [2] = "dir", [3] = "symlink",
  file = "file", dir = "dir", directory = "dir", symlink = "symlink",
}

--- Normalizes an EntryInfo (ProtoJSON: camelCase, int64 size as a string, enum names, §3, §5.1).
---@param e table
---@return table
local function entry_of(e)
  local t = e.type
  if type(t) == "number" then t = math.tointeger(t) end
  local function opt(v) if v == cjson.null then return nil end return v end
  return {
    name = e.name,
    path = e.path,
    type = FILE_TYPE[t] or "unknown",
    size = math.tointeger(tonumber(e.size or 0)) or tonumber(e.size),
    mode = math.tointeger(e.mode or 0),
    permissions = opt(e.permissions),
    owner = opt(e.owner),
    group = opt(e.group),
    modified_time = opt(e.modifiedTime),
    symlink_target = opt(e.symlinkTarget),
    metadata = type(e.metadata) == "table" and e.metadata or nil,
  }
end

local function files_path(path, user)
  local q = { { "path", path } }
  if user then q[#q + 1] = { "username", user } end
  return "/files?" .. envd.query(q)
end

--- Writes `data` (any bytes) to `path`, creating parent directories; the file is owned by the user
--- (reference §7 "POST /files": application/octet-stream, envd >= 0.5.7).
--- Raises: InvalidArgument (400), Authentication (401), NotEnoughSpace (507), SandboxGone (502),
--- Sandbox, Protocol (the 200 body is not an entry array), Transport, Timeout.
---@param path string
---@param data string
---@param opts? {user?: string}
---@return {path: string, name: string, type: string}
function Files:write(path, data, opts)
  opts = opts or {}
  local request = "POST /files"
  local resp = client(self):http("POST", files_path(path, opts.user or "user"), {
    body = data, headers = { ["Content-Type"] = "application/octet-stream" },
  })
  if resp.status ~= 200 and resp.status ~= 201 then
    errmap.raise_envd_http(resp.status, resp.body, request)
  end
  local arr = errmap.decode_object(resp.body)
  local e = arr and (arr[1] or (arr.path and arr))
  if type(e) ~= "table" then errmap.raise_protocol(resp.status, request, "a JSON array of entries") end
  return { path = e.path, name = e.name, type = FILE_TYPE[e.type] or e.type }
end

--- Reads the whole file at `path` (reference §7 "GET /files"). `format` "text" and "bytes" both
--- return the raw bytes as a Lua string (Lua strings are byte strings).
--- Raises: NotFound (404), InvalidArgument (400: a directory or bad path), Authentication,
--- SandboxGone, Sandbox, Protocol (over max_body), Transport, Timeout.
---@param path string
---@param opts? {user?: string, format?: "text"|"bytes", max_body?: integer}
---@return string
function Files:read(path, opts)
  opts = opts or {}
  if opts.format and opts.format ~= "text" and opts.format ~= "bytes" then
    errmap.raise("InvalidArgument", 0, "format must be \"text\" or \"bytes\"")
  end
  local resp = client(self):http("GET", files_path(path, opts.user or "user"), {
    max_body = opts.max_body or files.MAX_READ_BYTES,
  })
  if resp.status ~= 200 then errmap.raise_envd_http(resp.status, resp.body, "GET /files") end
  return resp.body
end

--- Lists a directory: filesystem.Filesystem/ListDir (reference §5.2; depth 1 = direct children;
--- the directory itself is left out).
--- Raises: NotFound, InvalidArgument (not a directory), Authentication, Sandbox, Transport, Timeout.
---@param path string
---@param opts? {depth?: integer, user?: string}
---@return table[] entries
function Files:list(path, opts)
  opts = opts or {}
  local resp = client(self):unary("filesystem.Filesystem/ListDir",
    { path = path, depth = opts.depth or 1 }, { user = opts.user or "user" })
  local out = {}
  for _, e in ipairs(resp.entries or {}) do out[#out + 1] = entry_of(e) end
  return out
end

--- Metadata of one path: filesystem.Filesystem/Stat (lstat, reference §5.2).
--- Raises: NotFound, InvalidArgument, Authentication, Sandbox, Protocol, Transport, Timeout.
---@param path string
---@param opts? {user?: string}
---@return table entry
function Files:get_info(path, opts)
  opts = opts or {}
  local resp = client(self):unary("filesystem.Filesystem/Stat", { path = path },
    { user = opts.user or "user" })
  if type(resp.entry) ~= "table" then
    errmap.raise_protocol(200, "POST /filesystem.Filesystem/Stat", "a StatResponse with entry")
  end
  return entry_of(resp.entry)
end

--- Whether `path` exists (Stat; `not_found` is false).
--- Raises: as get_info, except NotFound.
---@param path string
---@param opts? {user?: string}
---@return boolean
function Files:exists(path, opts)
  local ok, err = pcall(self.get_info, self, path, opts)
  if ok then return true end
  if errmap.has_code(err, "not_found") then return false end
  error(err, 0)
end

--- Creates a directory and its parents: filesystem.Filesystem/MakeDir (reference §5.2). true when
--- created, false when it already existed (`already_exists`, as the SDK's makeDir, §2.4).
--- Raises: InvalidArgument (exists as a non-directory), Authentication, Sandbox, Transport, Timeout.
---@param path string
---@param opts? {user?: string}
---@return boolean
function Files:make_dir(path, opts)
  opts = opts or {}
  local ok, err = pcall(client(self).unary, client(self), "filesystem.Filesystem/MakeDir",
    { path = path }, { user = opts.user or "user" })
  if ok then return true end
  if errmap.has_code(err, "already_exists") then return false end
  error(err, 0)
end

--- Renames (moves) `old` to `new`, creating the destination's parents: filesystem.Filesystem/Move
--- (reference §5.2). Returns the destination entry.
--- Raises: NotFound (missing source), InvalidArgument, Authentication, Sandbox, Transport, Timeout.
---@param old string
---@param new string
---@param opts? {user?: string}
---@return table entry
function Files:rename(old, new, opts)
  opts = opts or {}
  local resp = client(self):unary("filesystem.Filesystem/Move",
    { source = old, destination = new }, { user = opts.user or "user" })
  if type(resp.entry) ~= "table" then
    errmap.raise_protocol(200, "POST /filesystem.Filesystem/Move", "a MoveResponse with entry")
  end
  return entry_of(resp.entry)
end

--- Removes a file or a whole directory tree: filesystem.Filesystem/Remove (reference §5.2; a
--- missing path is not an error).
--- Raises: InvalidArgument, Authentication, Sandbox, Transport, Timeout.
---@param path string
---@param opts? {user?: string}
function Files:remove(path, opts)
  opts = opts or {}
  client(self):unary("filesystem.Filesystem/Remove", { path = path }, { user = opts.user or "user" })
end

return files
