-- abx.client.opensandbox_files: `sbx.files` of an OpenSandbox sandbox through execd's files and
-- directories API (execd-api.yaml Filesystem), with the E2B client's shapes (EntryInfo,
-- UploadEntry) so scenarios do not change. Built by abx.client.opensandbox_object; execd is
-- reached as abx.client.opensandbox_execd reaches it (the endpoint's URL and headers).
--
--   write    POST /files/upload multipart: a `metadata` part (JSON FileMetadata {path, mode 644,
--            owner = user when given}, filename "metadata") then the `file` part; execd creates
--            the parents. A file handle (`data` or `from`) is read from its position into memory
--            first (a multipart body cannot be sent from the handle), at most MAX_FROM bytes.
--   read     GET /files/download?path=        list      GET /directories/list?path=&depth=
--   get_info GET /files/info?path=            exists    get_info, NotFound -> false
--   make_dir POST /directories {path: {mode: 755}} (false when it already existed)
--   rename   POST /files/mv [{src, dest}] (the destination's parent made first, as E2B's rename)
--   remove   DELETE /directories?path= for a directory, DELETE /files?path= otherwise; missing is fine
-- `user` on write is the file's owner; on the other calls execd acts as its own user, so only
-- nil and "root" are honest. Everything else (watch, signed URLs, gzip, xattr metadata) raises
-- Skipped "provider <name> (opensandbox) has no equivalent of <primitive>: missing capability".
-- Errors: execd's ErrorResponse {code, message} through abx.client.opensandbox_wire.raise_error
-- (401 Authentication, 404 NotFound, 400 InvalidArgument, ...); a body of another shape is
-- Protocol.

local core = require("abx.core")
local cjson = require("cjson")
local errmap = require("abx.client.errmap")
local envd = require("abx.client.envd")
local options = require("abx.client.options")
local wire = require("abx.client.opensandbox_wire")
local execd = require("abx.client.opensandbox_execd")

local M = {}

local call = execd._call

local function skip(sbx, primitive)
  wire.skip(sbx.conn.provider_name, primitive)
end

-- The most a file handle given to files:write may hold: it is read into memory (see the header).
M.MAX_FROM = 1024 * 1024 * 1024

--- The bytes of the open file handle `f` from its position to its end, for files:write's `from`.
--- Raises: InvalidArgument (not an open handle, a read error, more than M.MAX_FROM bytes).
---@param f file*
---@return string
function M.read_from(f)
  if io.type(f) ~= "file" then
    errmap.raise("InvalidArgument", 0, "files:write: from must be an open file handle, got "
      .. (io.type(f) or type(f)))
  end
  local parts, n = {}, 0
  while true do
    local chunk, err = f:read(1024 * 1024)
    if chunk == nil then
      if err then errmap.raise("InvalidArgument", 0, "files:write: reading from: " .. tostring(err)) end
      break
    end
    n = n + #chunk
    if n > M.MAX_FROM then
      errmap.raise("InvalidArgument", 0, string.format("files:write: from holds more than %d bytes, "
        .. "the most an OpenSandbox upload takes from a file handle (it is sent from memory)", M.MAX_FROM))
    end
    parts[#parts + 1] = chunk
  end
  return table.concat(parts)
end

local ENTRY_TYPE = { file = "file", directory = "dir", symlink = "symlink", other = "unknown" }

--- The EntryInfo (E2B client's shape) of an execd FileInfo. `mode` is execd's octal digits as a
--- decimal number (755) -> permission bits (493), and `permissions` the ls-style string of the
--- type and those bits ("drwxr-xr-x"). Raises: Protocol (no path, an unknown type,
--- mode not octal digits).
---@param fi table
---@param status integer
---@param request string
---@return table
function M.entry_of(fi, status, request)
  if type(fi) ~= "table" or type(fi.path) ~= "string" then
    errmap.raise_protocol(status, request, "a FileInfo with path")
  end
  local t = fi.type == nil and "unknown" or ENTRY_TYPE[fi.type]
  if not t then
    errmap.raise_protocol(status, request, "FileInfo.type file, directory, symlink or other, got "
      .. tostring(fi.type))
  end
  local mode
  if fi.mode ~= nil then
    local digits = math.tointeger(fi.mode) and string.format("%d", math.tointeger(fi.mode))
    mode = digits and digits:match("^[0-7]+$") and tonumber(digits, 8)
    if not mode then errmap.raise_protocol(status, request, "FileInfo.mode in octal digits") end
  end
  local files = require("abx.client.files")
  local perms
  if mode then -- as envd's EntryInfo.permissions: "-rw-r--r--"
    local b = { ({ file = "-", dir = "d", symlink = "l" })[t] or "?" }
    for shift = 8, 0, -1 do
      b[#b + 1] = (mode >> shift) & 1 == 1 and ("rwx"):sub(3 - shift % 3, 3 - shift % 3) or "-"
    end
    perms = table.concat(b)
  end
  local e = {
    name = fi.path:match("([^/]*)/*$") or fi.path, path = fi.path, type = t,
    size = math.tointeger(fi.size), mode = mode, permissions = perms,
    owner = type(fi.owner) == "string" and fi.owner or nil,
    group = type(fi.group) == "string" and fi.group or nil,
    modified_time = type(fi.modified_at) == "string" and fi.modified_at or nil,
  }
  return files.strict_entry(e)
end

---@class abx.OpenSandboxFiles
local Files = {}
options.class(Files, "OpenSandboxFiles", "sbx.files of an OpenSandbox sandbox: execd's files and "
  .. "directories API.", {}, {
    { "write(path, data, opts)", "uploads bytes (options: files:write): UploadEntry" },
    { "read(path, opts)", "downloads a whole file (options: files:read): bytes" },
    { "list(path, opts)", "lists a directory: EntryInfo[]" },
    { "get_info(path, opts)", "metadata of one path: EntryInfo" },
    { "exists(path, opts)", "whether a path exists" },
    { "make_dir(path, opts)", "creates a directory and its parents: true, false when it existed" },
    { "rename(old, new, opts)", "moves a path: EntryInfo" },
    { "remove(path, opts)", "removes a file or a tree (missing is fine)" },
    { "read_gzip(path, opts)", "Skipped: no equivalent" },
    { "download_url(path, opts)", "Skipped: no equivalent" },
    { "upload_url(path, opts)", "Skipped: no equivalent" },
    { "read_url(url, opts)", "Skipped: no equivalent" },
    { "write_url(url, data)", "Skipped: no equivalent" },
    { "watch_dir(path, opts)", "Skipped: no equivalent" },
    { "create_watcher(path, opts)", "Skipped: no equivalent" },
  })

--- The files object of an OpenSandbox sandbox (internal).
---@param sbx table
---@return abx.OpenSandboxFiles
function M.files(sbx)
  return setmetatable({ _sbx = sbx }, Files)
end

local function check_path(call_name, path)
  if type(path) ~= "string" or path == "" then
    errmap.raise("InvalidArgument", 0, call_name .. ": path must be a non-empty string, got "
      .. tostring(path))
  end
end

-- `user` on a call other than write: execd acts as its own user; only nil or "root" (execd runs
-- as root in OpenSandbox's images) are honest mappings
local function check_user(sbx, call_name, user)
  if user ~= nil and user ~= "root" then
    skip(sbx, call_name .. " user " .. user .. " (execd acts as its own user)")
  end
end

--- The multipart body of POST /files/upload: the metadata part, then the file part.
--- Returns the body and its Content-Type. Raises: nothing.
---@param meta table FileMetadata
---@param data string
---@param boundary string
---@return string body, string content_type
function M.upload_body(meta, data, boundary)
  local name = (meta.path:match("([^/]*)$") or "file"):gsub("[\"\r\n]", "_")
  local body = table.concat({
    "--", boundary, "\r\n",
    "Content-Disposition: form-data; name=\"metadata\"; filename=\"metadata\"\r\n",
    "Content-Type: application/json\r\n\r\n",
    cjson.encode(meta), "\r\n",
    "--", boundary, "\r\n",
    "Content-Disposition: form-data; name=\"file\"; filename=\"", name, "\"\r\n",
    "Content-Type: application/octet-stream\r\n\r\n",
    data, "\r\n",
    "--", boundary, "--\r\n",
  })
  return body, "multipart/form-data; boundary=" .. boundary
end

--- Writes bytes to `path` (POST /files/upload, parents created by execd). `user` becomes the
--- file's owner. Returns {path, name, type = "file"}.
--- `data` may be an open file handle, or nil with `from` one (read into memory: M.read_from).
--- Raises: Skipped (metadata, gzip, content_encoding), InvalidArgument (400; data and from
--- together; a handle over M.MAX_FROM), Authentication, Sandbox, Transport.
---@param path string
---@param data string
---@param opts? table files:write's options
---@return table
function Files:write(path, data, opts)
  opts = options.check("files:write", opts)
  local sbx = self._sbx
  check_path("files:write", path)
  for _, k in ipairs({ "metadata", "gzip", "content_encoding" }) do
    if opts[k] ~= nil then skip(sbx, "files:write " .. k) end
  end
  if opts.from ~= nil then
    if data ~= nil then errmap.raise("InvalidArgument", 0, "files:write takes data or from, not both") end
    data = M.read_from(opts.from)
  elseif io.type(data) == "file" then
    data = M.read_from(data)
  end
  if type(data) ~= "string" then
    errmap.raise("InvalidArgument", 0, "files:write: data must be a string, got " .. type(data))
  end
  local meta = { path = path, mode = 644, owner = opts.user }
  local boundary = "abx" .. core.random_hex(12)
  local body, ctype = M.upload_body(meta, data, boundary)
  local resp, request = call(sbx, "POST", "/files/upload", nil, { body = body,
    headers = { ["Content-Type"] = ctype }, timeout = opts.timeout })
  if resp.status ~= 200 and resp.status ~= 204 then wire.raise_error(resp, request) end
  return { path = path, name = path:match("([^/]*)$"), type = "file" }
end

--- Reads the whole file at `path`: GET /files/download?path= . With `to` or `on_chunk` the body
--- is streamed (core.body_stream) and the byte count returned.
--- Raises: Skipped (gzip), NotFound (404), InvalidArgument (400), Authentication, Protocol (over
--- max_body), Transport, Timeout.
---@param path string
---@param opts? table files:read's options
---@return string|integer
function Files:read(path, opts)
  opts = options.check("files:read", opts)
  local sbx = self._sbx
  check_path("files:read", path)
  check_user(sbx, "files:read", opts.user)
  if opts.gzip then skip(sbx, "files:read gzip") end
  local q = { { "path", path } }
  if opts.to ~= nil or opts.on_chunk ~= nil then
    if opts.to ~= nil and opts.on_chunk ~= nil then
      errmap.raise("InvalidArgument", 0, "files:read: to and on_chunk together")
    end
    local base, h = execd.base(sbx)
    local st <close> = core.body_stream({ url = base .. "/files/download?" .. envd.query(q),
      headers = h, max_body = opts.max_body, timeout = opts.timeout })
    local n = 0
    while true do
      local kind, data = st:next()
      if kind == nil then return n end
      if kind == "http" then
        wire.raise_error({ status = st:status(), body = data }, "GET /files/download")
      end
      n = n + #data
      if opts.on_chunk then opts.on_chunk(data) else
        local ok, err = opts.to:write(data)
        if not ok then errmap.raise("InvalidArgument", 0, "files:read: writing to `to`: " .. tostring(err)) end
      end
    end
  end
  local resp, request = call(sbx, "GET", "/files/download", q, {
    max_body = opts.max_body or require("abx.client.files").MAX_READ_BYTES, timeout = opts.timeout })
  if resp.status ~= 200 then wire.raise_error(resp, request) end
  return resp.body or ""
end

--- Metadata of one path: GET /files/info?path= (a map path -> FileInfo).
--- Raises: NotFound (404), Authentication, Protocol.
---@param path string
---@param opts? {user?: string}
---@return table EntryInfo
function Files:get_info(path, opts)
  opts = options.check("files:get_info", opts)
  check_path("files:get_info", path)
  check_user(self._sbx, "files:get_info", opts.user)
  local resp, request = call(self._sbx, "GET", "/files/info", { { "path", path } })
  if resp.status ~= 200 then wire.raise_error(resp, request) end
  local m = errmap.decode_ok(resp, request)
  local fi = m[path]
  if fi == nil then
    local only
    for _, v in pairs(m) do
      if only ~= nil then only = false break end
      only = v
    end
    fi = only or nil -- one entry under another spelling of the path (execd resolves it)
  end
  if type(fi) ~= "table" then errmap.raise_protocol(resp.status, request, "a FileInfo for " .. path) end
  return M.entry_of(fi, resp.status, request)
end

--- Whether `path` exists (get_info; NotFound -> false). Raises: as get_info otherwise.
---@param path string
---@param opts? {user?: string}
---@return boolean
function Files:exists(path, opts)
  opts = options.check("files:exists", opts)
  local ok, err = pcall(self.get_info, self, path, { user = opts.user })
  if ok then return true end
  if core.is_error(err) and err.kind == "NotFound" then return false end
  error(err, 0)
end

--- Lists a directory: GET /directories/list?path=&depth= -> EntryInfo[] (the directory itself
--- left out). Raises: NotFound (404), InvalidArgument (400: a symlink or not a directory),
--- Authentication, Protocol.
---@param path string
---@param opts? {user?: string, depth?: integer}
---@return table[]
function Files:list(path, opts)
  opts = options.check("files:list", opts)
  check_path("files:list", path)
  check_user(self._sbx, "files:list", opts.user)
  local q = { { "path", path } }
  if opts.depth ~= nil then q[2] = { "depth", string.format("%d", opts.depth) } end
  local resp, request = call(self._sbx, "GET", "/directories/list", q)
  if resp.status ~= 200 then wire.raise_error(resp, request) end
  local out = {}
  for i, fi in ipairs(errmap.decode_ok(resp, request, true)) do
    out[i] = M.entry_of(fi, resp.status, request)
  end
  return out
end

--- Creates a directory and its parents: POST /directories {path: {mode: 755}}. false when it
--- already existed (checked first: execd's mkdir -p does not say).
--- Raises: InvalidArgument (400; the path exists and is not a directory), Authentication.
---@param path string
---@param opts? {user?: string}
---@return boolean
function Files:make_dir(path, opts)
  opts = options.check("files:make_dir", opts)
  check_path("files:make_dir", path)
  local ok, e = pcall(self.get_info, self, path)
  if ok then
    if e.type == "dir" then return false end
    errmap.raise("InvalidArgument", 400, "files:make_dir: " .. path .. " exists and is not a directory")
  elseif not (core.is_error(e) and e.kind == "NotFound") then
    error(e, 0)
  end
  local perm = { mode = 755, owner = opts.user }
  local resp, request = call(self._sbx, "POST", "/directories", nil, {
    body = cjson.encode({ [path] = perm }), headers = { ["Content-Type"] = "application/json" } })
  if resp.status ~= 200 and resp.status ~= 204 then wire.raise_error(resp, request) end
  return true
end

--- Moves `old` to `new` (POST /files/mv [{src, dest}]), making the destination's parent first;
--- returns the destination's EntryInfo. Raises: NotFound (404), InvalidArgument, Authentication.
---@param old string
---@param new string
---@param opts? {user?: string}
---@return table EntryInfo
function Files:rename(old, new, opts)
  opts = options.check("files:rename", opts)
  check_path("files:rename", old)
  check_path("files:rename", new)
  check_user(self._sbx, "files:rename", opts.user)
  local parent = new:match("^(.*)/[^/]+/*$")
  if parent and parent ~= "" then self:make_dir(parent) end
  local resp, request = call(self._sbx, "POST", "/files/mv", nil, {
    body = cjson.encode({ { src = old, dest = new } }),
    headers = { ["Content-Type"] = "application/json" } })
  if resp.status ~= 200 and resp.status ~= 204 then wire.raise_error(resp, request) end
  return self:get_info(new)
end

--- Removes a file or a directory tree; a missing path is fine (as E2B's remove).
--- Raises: Authentication, Sandbox, Transport.
---@param path string
---@param opts? {user?: string}
function Files:remove(path, opts)
  opts = options.check("files:remove", opts)
  check_path("files:remove", path)
  check_user(self._sbx, "files:remove", opts.user)
  local ok, e = pcall(self.get_info, self, path)
  if not ok then
    if core.is_error(e) and e.kind == "NotFound" then return end
    error(e, 0)
  end
  local route = e.type == "dir" and "/directories" or "/files"
  local resp, request = call(self._sbx, "DELETE", route, { { "path", path } })
  if resp.status ~= 200 and resp.status ~= 204 and resp.status ~= 404 then
    wire.raise_error(resp, request)
  end
end

for _, name in ipairs({ "read_gzip", "download_url", "upload_url", "read_url", "write_url",
  "watch_dir", "create_watcher" }) do
  Files[name] = function(self) skip(self._sbx, "files:" .. name) end
end

return M
