-- abx.files: `sbx.files`, the sandbox filesystem through envd (REST /files for content, the
-- filesystem.Filesystem Connect service for metadata).
--
--   sbx.files:write("/home/user/a.txt", "hello")          -- {path, name, type}
--   sbx.files:read("/home/user/a.txt")                     -- "hello"
--   sbx.files:read("/home/user/big", { to = fh })          -- bytes written to the open file fh
--   sbx.files:write("/home/user/big", io.open(p, "rb"))    -- uploads the file from its position
--   sbx.files:list("/home/user", { depth = 2 })            -- entries
--
-- Entries: {name, path, type = "file"|"dir"|"symlink", size (bytes, number), mode (permission bits),
--           permissions ("-rw-r--r--"), owner, group, modified_time (RFC 3339 string),
--           symlink_target?}. For a symlink envd reports the target's type and sets symlink_target.
--           metadata? (table of the user.e2b.* xattrs, envd >= 0.6.2)}.
-- Users: every call acts as `opts.user` (default "user"): the `username` query on REST, the Basic
--        header on RPCs (reference/envd-protocol.md §6.2).
-- Also:  watch_dir / create_watcher (abx.watch), signed URLs (download_url, upload_url, read_url,
--        write_url; §8), metadata on write (X-Metadata-*), gzip on write and read (§7).
-- Source: reference/envd-protocol.md §5 (filesystem.Filesystem), §7 (GET/POST /files), §8 (file URL
--         signatures), §2.4 (errors).

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
--- Also used by abx.watch for event entries. Raises: nothing.
---@param e table
---@return table
function files.entry_of(e)
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
local entry_of = files.entry_of

-- CRC-32 (IEEE, as gzip uses), table-driven.
local CRC_TABLE
local function crc32(data)
  if not CRC_TABLE then
    CRC_TABLE = {}
    for i = 0, 255 do
      local c = i
      for _ = 1, 8 do c = (c & 1) ~= 0 and (0xEDB88320 ~ (c >> 1)) or (c >> 1) end
      CRC_TABLE[i] = c
    end
  end
  local crc, tbl = 0xFFFFFFFF, CRC_TABLE
  for i = 1, #data, 4096 do
    for _, b in ipairs({ data:byte(i, i + 4095) }) do
      crc = (crc >> 8) ~ tbl[(crc ~ b) & 0xFF]
    end
  end
  return crc ~ 0xFFFFFFFF
end

--- gzip (RFC 1952) of `data`. abx.core has no deflate, so this is a valid gzip member whose
--- deflate data (RFC 1951) is made of stored (uncompressed) blocks: any gunzip reads it, it is
--- only not smaller than the input. Used for `write(..., { gzip = true })`.
--- Raises: nothing.
---@param data string
---@return string
function files.gzip(data)
  if core.gzip then return core.gzip(data) end -- should the engine ever provide one
  local out = { "\31\139\8\0\0\0\0\0\0\255" } -- magic, deflate, no flags, mtime 0, OS unknown
  local n = #data
  local i = 1
  repeat
    local len = math.min(65535, n - i + 1)
    local final = (i + len > n) and 1 or 0
    out[#out + 1] = string.pack("<BI2I2", final, len, len ~ 0xFFFF)
    out[#out + 1] = data:sub(i, i + len - 1)
    i = i + len
  until i > n
  out[#out + 1] = string.pack("<I4I4", crc32(data), n & 0xFFFFFFFF)
  return table.concat(out)
end

--- The v1 signature of a file URL: "v1_" .. base64 (standard alphabet, no padding) of the raw
--- sha256 of "path:operation:username:token[:expiration]" (reference §8). `user` nil or "" is the
--- empty username; `expiration` is Unix seconds.
--- Raises: nothing.
---@param path string the `path` query value exactly as sent
---@param operation "read"|"write"
---@param user string|nil
---@param token string the sandbox's envd access token
---@param expiration? integer
---@return string
function files.sign(path, operation, user, token, expiration)
  local raw = path .. ":" .. operation .. ":" .. (user or "") .. ":" .. token
  if expiration then raw = raw .. ":" .. string.format("%d", expiration) end
  local bin = core.sha256(raw):gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end)
  return "v1_" .. (core.b64encode(bin):gsub("=+$", ""))
end

local function files_path(path, user)
  local q = { { "path", path } }
  if user then q[#q + 1] = { "username", user } end
  return "/files?" .. envd.query(q)
end

--- The first entry of a POST /files answer (reference §7: a JSON array of EntryInfo).
local function upload_entry(resp, request)
  if resp.status ~= 200 and resp.status ~= 201 then
    errmap.raise_envd_http(resp.status, resp.body, request)
  end
  local arr = errmap.decode_object(resp.body)
  local e = arr and (arr[1] or (arr.path and arr))
  if type(e) ~= "table" then errmap.raise_protocol(resp.status, request, "a JSON array of entries") end
  return { path = e.path, name = e.name, type = FILE_TYPE[e.type] or e.type,
    metadata = type(e.metadata) == "table" and e.metadata or nil }
end

--- Headers of an octet-stream upload with metadata and encoding options (reference §7).
local function upload_headers(opts)
  local h = { ["Content-Type"] = "application/octet-stream" }
  for k, v in pairs(opts.metadata or {}) do
    if type(k) ~= "string" or type(v) ~= "string" then
      errmap.raise("InvalidArgument", 0, "metadata keys and values must be strings")
    end
    if k == "" or k:find("[^%w%-_%.]") then
      errmap.raise("InvalidArgument", 0, "metadata key " .. string.format("%q", k)
        .. " cannot be an HTTP header name (letters, digits, '-', '_', '.')")
    end
    h["X-Metadata-" .. k] = v
  end
  if opts.gzip or opts.content_encoding then
    h["Content-Encoding"] = opts.content_encoding or "gzip"
  end
  return h
end

--- Writes `data` (any bytes) to `path`, creating parent directories; the file is owned by the user
--- (reference §7 "POST /files": application/octet-stream, envd >= 0.5.7).
--- `data` may also be an open Lua file handle (or `opts.from`, with `data` nil): the engine sends
--- it from its current position as it reads (core.request `body_file`), so a file of any size
--- costs no more engine memory than a small one; the handle stays open (the caller closes it).
--- `metadata` is sent as `X-Metadata-<key>: <value>` headers; envd stores it as xattrs (keys
--- lower-cased) and every write replaces the whole set, so a write without it clears it (§7,
--- envd >= 0.6.2). `gzip = true` sends the body gzip-encoded (`Content-Encoding: gzip`, see
--- files.gzip); `content_encoding = "gzip"` sends `data` as is, as bytes that are already gzip.
--- Raises: InvalidArgument (400: e.g. metadata not printable ASCII or over 4096 bytes; a metadata
--- key that is no header name, checked here; `gzip = true` with a file handle; `data` and `from`
--- together), Authentication (401), PayloadTooLarge (413), NotEnoughSpace (507), SandboxPaused,
--- SandboxGone, PortNotOpen, Sandbox, Protocol (the 200 body is not an entry array), Transport,
--- Timeout.
---@param path string
---@param data string|file*|nil
---@param opts? {user?: string, metadata?: table<string,string>, gzip?: boolean,
---  content_encoding?: string, from?: file*, timeout?: number}
---@return {path: string, name: string, type: string, metadata?: table<string,string>}
function Files:write(path, data, opts)
  opts = opts or {}
  local headers = upload_headers(opts)
  if opts.from ~= nil then
    if data ~= nil then errmap.raise("InvalidArgument", 0, "files:write takes data or from, not both") end
    data = opts.from
  end
  if io.type(data) == "file" or opts.from ~= nil then
    if io.type(data) ~= "file" then
      errmap.raise("InvalidArgument", 0, "files:write: from must be an open file handle, got "
        .. (io.type(data) or type(data)))
    end
    if opts.gzip and not opts.content_encoding then
      errmap.raise("InvalidArgument", 0, "files:write: gzip = true needs the bytes in memory; "
        .. "write a gzip file with content_encoding = \"gzip\" instead")
    end
    local c = client(self)
    local url, connect_to = c:url(files_path(path, opts.user or "user"))
    local h = c:headers(nil)
    for k, v in pairs(headers) do h[k] = v end
    local resp = core.request({ method = "POST", url = url, headers = h, body_file = data,
      connect_to = connect_to, timeout = opts.timeout or 0 })
    return upload_entry(resp, "POST /files")
  end
  local body = opts.gzip and not opts.content_encoding and files.gzip(data) or data
  local resp = client(self):http("POST", files_path(path, opts.user or "user"), {
    body = body, headers = headers,
  })
  return upload_entry(resp, "POST /files")
end

--- Streams the body of GET /files into `sink` (a file handle: `sink:write`, or a function called
--- with each chunk, in order) and returns the number of bytes. The engine holds at most its
--- stream queue (8 MiB) of the body at a time (core.body_stream).
local function read_into(self, path, opts, sink)
  local c = client(self)
  local url, connect_to = c:url(files_path(path, opts.user or "user"))
  local st <close> = core.body_stream({ url = url, headers = c:headers(nil),
    connect_to = connect_to, max_body = opts.max_body, timeout = opts.timeout })
  local n = 0
  while true do
    local kind, data = st:next()
    if kind == nil then return n end
    if kind == "http" then errmap.raise_envd_http(st:status(), data, "GET /files") end
    n = n + #data
    if type(sink) == "function" then
      sink(data)
    else
      local ok, err = sink:write(data)
      if not ok then errmap.raise("InvalidArgument", 0, "files:read: writing to `to`: "
        .. tostring(err)) end
    end
  end
end

--- Reads the whole file at `path` (reference §7 "GET /files"). `format` "text" and "bytes" both
--- return the raw bytes as a Lua string (Lua strings are byte strings).
--- `gzip = true` asks for a gzip transfer (`Accept-Encoding: gzip`) and returns the decoded bytes;
--- that needs a gunzip in abx.core (core.gunzip), which this engine does not have yet: without it
--- the option raises InvalidArgument (read_gzip gives the encoded bytes).
--- Streaming: with `to` (an open file handle) or `on_chunk` (a function called with each chunk of
--- bytes, in order) the body is handed over as it arrives and read returns the number of bytes;
--- the engine never holds more than about 8 MiB of it, and `max_body` (default none) is checked
--- against the announced Content-Length before any byte is read.
--- Raises: NotFound (404), InvalidArgument (400: a directory or bad path; gzip without
--- core.gunzip; `to` not an open file, both `to` and `on_chunk`, gzip with either, a failed
--- write to `to`), Authentication, SandboxPaused, SandboxGone, PortNotOpen, Sandbox, Protocol
--- (over max_body, as soon as the Content-Length or the running count passes it), Transport,
--- Timeout.
---@param path string
---@param opts? {user?: string, format?: "text"|"bytes", max_body?: integer, gzip?: boolean,
---  to?: file*, on_chunk?: fun(chunk: string), timeout?: number}
---@return string|integer
function Files:read(path, opts)
  opts = opts or {}
  if opts.format and opts.format ~= "text" and opts.format ~= "bytes" then
    errmap.raise("InvalidArgument", 0, "format must be \"text\" or \"bytes\"")
  end
  if opts.to ~= nil or opts.on_chunk ~= nil then
    if opts.to ~= nil and opts.on_chunk ~= nil then
      errmap.raise("InvalidArgument", 0, "files:read takes to or on_chunk, not both")
    end
    if opts.to ~= nil and io.type(opts.to) ~= "file" then
      errmap.raise("InvalidArgument", 0, "files:read: to must be an open file handle, got "
        .. (io.type(opts.to) or type(opts.to)))
    end
    if opts.on_chunk ~= nil and type(opts.on_chunk) ~= "function" then
      errmap.raise("InvalidArgument", 0, "files:read: on_chunk must be a function")
    end
    if opts.gzip then
      errmap.raise("InvalidArgument", 0, "files:read: gzip does not stream (use to/on_chunk "
        .. "without gzip)")
    end
    return read_into(self, path, opts, opts.to or opts.on_chunk)
  end
  if opts.gzip then
    if not core.gunzip then
      errmap.raise("InvalidArgument", 0, "read with gzip = true needs core.gunzip, which this "
        .. "engine lacks; files:read_gzip returns the gzip bytes as served")
    end
    return core.gunzip(self:read_gzip(path, opts))
  end
  local resp = client(self):http("GET", files_path(path, opts.user or "user"), {
    max_body = opts.max_body or files.MAX_READ_BYTES,
  })
  if resp.status ~= 200 then errmap.raise_envd_http(resp.status, resp.body, "GET /files") end
  return resp.body
end

--- Reads `path` with `Accept-Encoding: gzip` and returns the body as served, gzip bytes
--- (reference §7 "GET /files": `Content-Encoding: gzip`). Write them back with
--- `write(p, bytes, { content_encoding = "gzip" })` and envd inflates them.
--- Raises: Protocol (the answer was not gzip-encoded, or over max_body), and as read.
---@param path string
---@param opts? {user?: string, max_body?: integer}
---@return string
function Files:read_gzip(path, opts)
  opts = opts or {}
  local resp = client(self):http("GET", files_path(path, opts.user or "user"), {
    max_body = opts.max_body or files.MAX_READ_BYTES, headers = { ["Accept-Encoding"] = "gzip" },
  })
  if resp.status ~= 200 then errmap.raise_envd_http(resp.status, resp.body, "GET /files") end
  local ce = resp.headers["content-encoding"]
  if ce ~= "gzip" or resp.body:sub(1, 2) ~= "\31\139" then
    errmap.raise_protocol(resp.status, "GET /files", "a gzip body (Content-Encoding: gzip), got "
      .. tostring(ce or "identity"))
  end
  return resp.body
end

--- A URL of `path` for GET (operation "read") or POST (operation "write"), signed when the
--- sandbox is secure (reference §8): `<envd url>/files?path=..&username=..&signature=..
--- [&signature_expiration=..]`. The caller needs no access token to use it.
local function signed_url(self, path, operation, opts)
  opts = opts or {}
  local user = opts.user or "user"
  local q = { { "path", path }, { "username", user } }
  local token = client(self).access_token
  if token then
    local exp
    if opts.expires_in then
      exp = math.floor(core.time()) + math.floor(opts.expires_in)
    end
    q[#q + 1] = { "signature", files.sign(path, operation, user, token, exp) }
    if exp then q[#q + 1] = { "signature_expiration", string.format("%d", exp) } end
  end
  return (client(self):url("/files?" .. envd.query(q)))
end

--- A URL to download `path` without the access token (the SDKs' downloadUrl, reference §8):
--- signed with operation "read" when the sandbox is secure; unsigned otherwise. `expires_in`
--- (seconds from now) adds `signature_expiration`; after it envd answers 401.
--- In "headers" routing the URL is the fixed sandbox URL and also needs the E2b-Sandbox-* headers
--- (files:read_url adds them).
--- Raises: nothing.
---@param path string
---@param opts? {user?: string, expires_in?: number}
---@return string
function Files:download_url(path, opts)
  return signed_url(self, path, "read", opts)
end

--- A URL to upload to `path` with POST without the access token (the SDKs' uploadUrl, §8):
--- signed with operation "write". Options as download_url.
--- Raises: nothing.
---@param path string
---@param opts? {user?: string, expires_in?: number}
---@return string
function Files:upload_url(path, opts)
  return signed_url(self, path, "write", opts)
end

--- GETs a file URL (from download_url) as a client holding only the URL would: no access token.
--- Raises: Authentication (401: missing, invalid or expired signature), NotFound, InvalidArgument,
--- SandboxGone, Sandbox, Protocol (over max_body), Transport, Timeout.
---@param url string
---@param opts? {max_body?: integer}
---@return string
function Files:read_url(url, opts)
  opts = opts or {}
  local resp = client(self):fetch("GET", url, { max_body = opts.max_body or files.MAX_READ_BYTES })
  if resp.status ~= 200 then errmap.raise_envd_http(resp.status, resp.body, "GET /files") end
  return resp.body
end

--- POSTs `data` (application/octet-stream) to a file URL (from upload_url) without the access
--- token. Returns the written entry.
--- Raises: Authentication (401: missing, invalid or expired signature), InvalidArgument,
--- NotEnoughSpace, SandboxGone, Sandbox, Protocol, Transport, Timeout.
---@param url string
---@param data string
---@return {path: string, name: string, type: string}
function Files:write_url(url, data)
  local resp = client(self):fetch("POST", url, {
    body = data, headers = { ["Content-Type"] = "application/octet-stream" },
  })
  return upload_entry(resp, "POST /files")
end

--- Watches a directory as a stream: see abx.watch.watch_dir (reference §5.1, §5.2).
--- Raises: as abx.watch.watch_dir (NotFound, InvalidArgument, Authentication, Sandbox, Protocol,
--- Transport, Timeout).
---@param path string
---@param opts? {recursive?: boolean, include_entry?: boolean, user?: string, timeout?: number,
---  keepalive?: integer, on_event?: fun(ev: table), on_exit?: fun(err: table|nil)}
---@return abx.WatchHandle
function Files:watch_dir(path, opts)
  return require("abx.watch").watch_dir(self, path, opts)
end

--- Creates a polling watcher: see abx.watch.create_watcher (reference §5.1, §5.2).
--- Raises: as abx.watch.create_watcher (NotFound, InvalidArgument, Authentication, Sandbox,
--- Protocol, Transport, Timeout).
---@param path string
---@param opts? {recursive?: boolean, include_entry?: boolean, user?: string}
---@return abx.Watcher
function Files:create_watcher(path, opts)
  return require("abx.watch").create_watcher(self, path, opts)
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
