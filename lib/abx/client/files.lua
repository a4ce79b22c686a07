-- abx.client.files: `sbx.files`, the sandbox filesystem through envd (REST /files for content, the
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
--        header on RPCs (docs/protocol/envd-protocol.md §6.2).
-- Also:  watch_dir / create_watcher (abx.client.watch), signed URLs (download_url, upload_url, read_url,
--        write_url; §8), metadata on write (X-Metadata-*), gzip on write and read (§7).
-- Source: docs/protocol/envd-protocol.md §5 (filesystem.Filesystem), §7 (GET/POST /files), §8 (file URL
--         signatures), §2.4 (errors).

-- Fail closed: every options table is checked against the specs below (abx.client.options); entries
-- answer an unknown field with InvalidArgument; an entry whose name or path is not UTF-8 text is
-- a Protocol error naming the call (abx.client.decode).

local core = require("abx.core")
local cjson = require("cjson")
local errmap = require("abx.client.errmap")
local envd = require("abx.client.envd")
local api_call = require("abx.client.api_call")
local options = require("abx.client.options")
local decode = require("abx.client.decode")

local files = {}

--- Largest file read() accepts by default, bytes.
files.MAX_READ_BYTES = 1024 * 1024 * 1024

local USER = { "user", "string", "user to act as (default \"user\")" }
local OPTS = {
  write = options.define("files:write", "Writes bytes to a path, creating parent directories; "
    .. "an UploadEntry.", {
      USER,
      { "metadata", "table<string,string>", "stored as user.e2b.* xattrs (X-Metadata-*; a write "
        .. "without it clears them)" },
      { "gzip", "boolean", "send the body gzip-encoded" },
      { "content_encoding", "string", "the data is already encoded so (\"gzip\"): sent as is" },
      { "from", "file", "an open file handle to upload from its position (instead of data)" },
      { "timeout", "number", "seconds for a streamed upload (default none)" },
    }),
  read = options.define("files:read", "Reads a whole file: its bytes as a string.", {
      USER,
      { "format", "string", "\"text\" or \"bytes\" (both give the raw bytes)" },
      { "max_body", "integer", "largest file accepted, bytes (default files.MAX_READ_BYTES)" },
      { "gzip", "boolean", "ask for a gzip transfer and return the decoded bytes" },
      { "to", "file", "an open file handle the bytes are written to as they arrive (returns the count)" },
      { "on_chunk", "function", "on_chunk(bytes) for each chunk as it arrives (returns the count)" },
      { "timeout", "number", "seconds for the transfer" },
    }),
  read_gzip = options.define("files:read_gzip", "Reads a file with Accept-Encoding: gzip: the "
    .. "gzip bytes as served.", {
      USER, { "max_body", "integer", "largest body accepted, bytes" },
    }),
  download_url = options.define("files:download_url", "A URL to GET the file without the access "
    .. "token (signed when the sandbox is secure).", {
      USER, { "expires_in", "number", "seconds from now the signature stays valid" },
    }),
  upload_url = options.define("files:upload_url", "A URL to POST the file without the access "
    .. "token (signed when the sandbox is secure).", {
      USER, { "expires_in", "number", "seconds from now the signature stays valid" },
    }),
  read_url = options.define("files:read_url", "GETs a file URL as a client holding only the URL.", {
      { "max_body", "integer", "largest body accepted, bytes" },
    }),
  list = options.define("files:list", "Lists a directory: EntryInfo[] (the directory itself "
    .. "left out).", {
      USER, { "depth", "integer", "levels to descend; 1 = direct children (default 1)" },
    }),
  get_info = options.define("files:get_info", "Metadata of one path (lstat): EntryInfo.", { USER }),
  exists = options.define("files:exists", "Whether a path exists.", { USER }),
  make_dir = options.define("files:make_dir", "Creates a directory and its parents: true, false "
    .. "when it existed.", { USER }),
  rename = options.define("files:rename", "Moves a path, creating the destination's parents: "
    .. "the destination EntryInfo.", { USER }),
  remove = options.define("files:remove", "Removes a file or a directory tree (missing is fine).",
    { USER }),
}
files.OPTIONS = OPTS

local ENTRY = options.shape("EntryInfo", "A filesystem entry (files:list, get_info, rename; "
  .. "watch events with include_entry).", {
    { "name", "string", "base name" },
    { "path", "string", "absolute path" },
    { "type", "string", "\"file\", \"dir\", \"symlink\" or \"unknown\"" },
    { "size", "integer", "bytes" },
    { "mode", "integer", "permission bits" },
    { "permissions", "string?", "e.g. \"-rw-r--r--\"" },
    { "owner", "string?", "owner's user name" },
    { "group", "string?", "group name" },
    { "modified_time", "string?", "RFC 3339" },
    { "symlink_target", "string?", "for a symlink: its target (type is the target's)" },
    { "metadata", "table<string,string>?", "user.e2b.* xattrs (envd >= 0.6.2)" },
  })
local UPLOAD = options.shape("UploadEntry", "What files:write and files:write_url return.", {
    { "path", "string", "absolute path written" },
    { "name", "string", "base name" },
    { "type", "string", "\"file\"" },
    { "metadata", "table<string,string>?", "the metadata stored, when envd reports it" },
  })

---@class abx.Files
---@field _sbx abx.Sandbox
local Files = {}
options.class(Files, "Files", "sbx.files: the sandbox filesystem through envd.", {}, {
  { "write(path, data, opts)", "writes bytes (options: files:write): UploadEntry" },
  { "read(path, opts)", "reads a whole file (options: files:read): bytes" },
  { "read_gzip(path, opts)", "reads with a gzip transfer: the gzip bytes" },
  { "download_url(path, opts)", "signed GET URL" },
  { "upload_url(path, opts)", "signed POST URL" },
  { "read_url(url, opts)", "GETs a file URL without the access token: bytes" },
  { "write_url(url, data)", "POSTs to a file URL without the access token: UploadEntry" },
  { "watch_dir(path, opts)", "watches a directory as a stream: WatchHandle" },
  { "create_watcher(path, opts)", "creates a polling watcher: Watcher" },
  { "list(path, opts)", "lists a directory: EntryInfo[]" },
  { "get_info(path, opts)", "metadata of one path: EntryInfo" },
  { "exists(path, opts)", "whether a path exists" },
  { "make_dir(path, opts)", "creates a directory: true, false when it existed" },
  { "rename(old, new, opts)", "moves a path: EntryInfo" },
  { "remove(path, opts)", "removes a file or a tree" },
})

--- The files object of a sandbox (internal: abx.client.sandbox builds it).
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

--- Normalizes an EntryInfo (ProtoJSON: camelCase, int64 size as a string, enum names, §3, §5.1)
--- into a strict EntryInfo table. Also used by abx.client.watch for event entries.
--- Raises: Protocol naming `call` when the entry is not an object, its name or path is not UTF-8
--- text, or its size is not a number.
---@param e any
---@param call? string e.g. "files:list" (default "files")
---@param where? string e.g. "entry 3"
---@param request? string
---@return table
function files.entry_of(e, call, where, request)
  call, where = call or "files", where or "entry"
  if type(e) ~= "table" then decode.fail(call, where .. " is not an object", request) end
  local t = e.type
  if type(t) == "number" then t = math.tointeger(t) end
  local size = e.size or 0
  size = math.tointeger(tonumber(size)) or tonumber(size)
  if size == nil then decode.fail(call, "size of " .. where .. " is not a number", request) end
  local function opt(v) if v == cjson.null then return nil end return v end
  return options.strict(ENTRY, {
    name = decode.text(e.name, call, "name of " .. where, request),
    path = decode.text(e.path, call, "path of " .. where, request),
    type = FILE_TYPE[t] or "unknown",
    size = size,
    mode = math.tointeger(e.mode or 0),
    permissions = opt(e.permissions),
    owner = opt(e.owner),
    group = opt(e.group),
    modified_time = opt(e.modifiedTime),
    symlink_target = opt(e.symlinkTarget),
    metadata = type(e.metadata) == "table" and e.metadata or nil,
  })
end
local entry_of = files.entry_of

--- gzip (RFC 1952) of `data` (core.gzip, zlib). Used for `write(..., { gzip = true })`.
--- Raises: nothing.
---@param data string
---@return string
function files.gzip(data)
  return core.gzip(data)
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
    errmap.raise_envd_http(resp.status, resp.body, request, resp.attempts, resp.not_retried)
  end
  local arr = errmap.decode_object(resp.body)
  local e = arr and (arr[1] or (arr.path and arr))
  if type(e) ~= "table" then errmap.raise_protocol(resp.status, request, "a JSON array of entries") end
  return options.strict(UPLOAD, { path = e.path, name = e.name, type = FILE_TYPE[e.type] or e.type,
    metadata = type(e.metadata) == "table" and e.metadata or nil })
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
  opts = options.check(OPTS.write, opts)
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
    -- the same bytes written again leave the same file: after a gateway's bare 502 a file that
    -- can seek is sent again from where it started (a pipe cannot, and is sent once)
    local start = data:seek("cur")
    local resp = api_call.gateway_retry("POST /files", start ~= nil, function()
      if start then data:seek("set", start) end
      return core.request({ method = "POST", url = url, headers = h, body_file = data,
        connect_to = connect_to, timeout = opts.timeout or 0 })
    end)
    return upload_entry(resp, "POST /files")
  end
  local body = opts.gzip and not opts.content_encoding and files.gzip(data) or data
  -- the same bytes written again leave the same file: a gateway's bare 502 is retried
  local resp = client(self):http("POST", files_path(path, opts.user or "user"), {
    body = body, headers = headers, idempotent = true,
  })
  return upload_entry(resp, "POST /files")
end

-- Opens the body stream of GET /files; a gateway's bare 502/503/504 (before any byte of the file)
-- opens it again, with abx.client.api_call's backoff. Returns the stream and its first event,
-- never an "http" one (a refusal is raised here, its stream closed).
local function open_read(self, path, opts)
  local c = client(self)
  local url, connect_to = c:url(files_path(path, opts.user or "user"))
  local deadline, attempt = api_call.retry_deadline(), 1
  while true do
    local st = core.body_stream({ url = url, headers = c:headers(nil),
      connect_to = connect_to, max_body = opts.max_body, timeout = opts.timeout })
    local ok, kind, data = pcall(st.next, st)
    if not ok then st:close(); error(kind, 0) end
    if kind ~= "http" then return st, kind, data end
    local status = st:status()
    st:close()
    if not (errmap.bare_gateway(status, data)
      and api_call.backoff("GET /files", attempt, deadline, status)) then
      errmap.raise_envd_http(status, data, "GET /files", attempt)
    end
    attempt = attempt + 1
  end
end

--- Streams the body of GET /files into `sink` (a file handle: `sink:write`, or a function called
--- with each chunk, in order) and returns the number of bytes. The engine holds at most its
--- stream queue (8 MiB) of the body at a time (core.body_stream).
local function read_into(self, path, opts, sink)
  local st <close>, kind, data = open_read(self, path, opts)
  local n = 0
  while true do
    if kind == nil then return n end
    n = n + #data
    if type(sink) == "function" then
      sink(data)
    else
      local ok, err = sink:write(data)
      if not ok then errmap.raise("InvalidArgument", 0, "files:read: writing to `to`: "
        .. tostring(err)) end
    end
    kind, data = st:next()
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
  opts = options.check(OPTS.read, opts)
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
    return core.gunzip(self:read_gzip(path, { user = opts.user, max_body = opts.max_body }))
  end
  local resp = client(self):http("GET", files_path(path, opts.user or "user"), {
    max_body = opts.max_body or files.MAX_READ_BYTES,
  })
  if resp.status ~= 200 then errmap.raise_envd_http(resp.status, resp.body, "GET /files", resp.attempts) end
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
  opts = options.check(OPTS.read_gzip, opts)
  local resp = client(self):http("GET", files_path(path, opts.user or "user"), {
    max_body = opts.max_body or files.MAX_READ_BYTES, headers = { ["Accept-Encoding"] = "gzip" },
  })
  if resp.status ~= 200 then errmap.raise_envd_http(resp.status, resp.body, "GET /files", resp.attempts) end
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
  local user = opts.user or "user"
  local q = { { "path", path }, { "username", user } }
  local token = client(self):token()
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
  return signed_url(self, path, "read", options.check(OPTS.download_url, opts))
end

--- A URL to upload to `path` with POST without the access token (the SDKs' uploadUrl, §8):
--- signed with operation "write". Options as download_url.
--- Raises: nothing.
---@param path string
---@param opts? {user?: string, expires_in?: number}
---@return string
function Files:upload_url(path, opts)
  return signed_url(self, path, "write", options.check(OPTS.upload_url, opts))
end

--- GETs a file URL (from download_url) as a client holding only the URL would: no access token.
--- Raises: Authentication (401: missing, invalid or expired signature), NotFound, InvalidArgument,
--- SandboxGone, Sandbox, Protocol (over max_body), Transport, Timeout.
---@param url string
---@param opts? {max_body?: integer}
---@return string
function Files:read_url(url, opts)
  opts = options.check(OPTS.read_url, opts)
  local resp = client(self):fetch("GET", url, { max_body = opts.max_body or files.MAX_READ_BYTES })
  if resp.status ~= 200 then errmap.raise_envd_http(resp.status, resp.body, "GET /files", resp.attempts) end
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
  -- bytes in memory: sent again after a gateway's bare 502, they leave the same file
  local resp = client(self):fetch("POST", url, {
    body = data, headers = { ["Content-Type"] = "application/octet-stream" }, idempotent = true,
  })
  return upload_entry(resp, "POST /files")
end

--- Watches a directory as a stream: see abx.client.watch.watch_dir (reference §5.1, §5.2).
--- Raises: as abx.client.watch.watch_dir (NotFound, InvalidArgument, Authentication, Sandbox, Protocol,
--- Transport, Timeout).
---@param path string
---@param opts? {recursive?: boolean, include_entry?: boolean, user?: string, timeout?: number,
---  keepalive?: integer, on_event?: fun(ev: table), on_exit?: fun(err: table|nil)}
---@return abx.WatchHandle
function Files:watch_dir(path, opts)
  return require("abx.client.watch").watch_dir(self, path, opts) -- checks files:watch_dir
end

--- Creates a polling watcher: see abx.client.watch.create_watcher (reference §5.1, §5.2).
--- Raises: as abx.client.watch.create_watcher (NotFound, InvalidArgument, Authentication, Sandbox,
--- Protocol, Transport, Timeout).
---@param path string
---@param opts? {recursive?: boolean, include_entry?: boolean, user?: string}
---@return abx.Watcher
function Files:create_watcher(path, opts)
  return require("abx.client.watch").create_watcher(self, path, opts)
end

--- Lists a directory: filesystem.Filesystem/ListDir (reference §5.2; depth 1 = direct children;
--- the directory itself is left out).
--- Raises: NotFound, InvalidArgument (not a directory), Authentication, Sandbox, Transport, Timeout.
---@param path string
---@param opts? {depth?: integer, user?: string}
---@return table[] entries
function Files:list(path, opts)
  opts = options.check(OPTS.list, opts)
  local resp = client(self):unary("filesystem.Filesystem/ListDir",
    { path = path, depth = opts.depth or 1 }, { user = opts.user or "user" })
  local out = {}
  for i, e in ipairs(type(resp.entries) == "table" and resp.entries or {}) do
    out[#out + 1] = entry_of(e, "files:list", "entry " .. i, "POST /filesystem.Filesystem/ListDir")
  end
  return out
end

--- Calls filesystem.Filesystem/<method> with `msg` as `user` (default "user") and returns the
--- decoded `entry` of the answer, whose message type `answer` names in the Protocol error: the
--- common part of get_info and rename.
--- Raises: as Client:unary; Protocol when the answer has no entry or a bad one.
local function entry_call(self, call, method, msg, user, answer)
  local rpc = "filesystem.Filesystem/" .. method
  local request = "POST /" .. rpc
  local resp = client(self):unary(rpc, msg, { user = user or "user" })
  if type(resp.entry) ~= "table" then
    errmap.raise_protocol(200, request, "a " .. answer .. " with entry")
  end
  return entry_of(resp.entry, call, "the entry", request)
end

--- Metadata of one path: filesystem.Filesystem/Stat (lstat, reference §5.2).
--- Raises: NotFound, InvalidArgument, Authentication, Sandbox, Protocol, Transport, Timeout.
---@param path string
---@param opts? {user?: string}
---@return table entry
function Files:get_info(path, opts)
  opts = options.check(OPTS.get_info, opts)
  return entry_call(self, "files:get_info", "Stat", { path = path }, opts.user, "StatResponse")
end

--- Whether `path` exists (Stat; `not_found` is false).
--- Raises: as get_info, except NotFound.
---@param path string
---@param opts? {user?: string}
---@return boolean
function Files:exists(path, opts)
  local ok, err = pcall(self.get_info, self, path, options.check(OPTS.exists, opts))
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
  opts = options.check(OPTS.make_dir, opts)
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
  opts = options.check(OPTS.rename, opts)
  return entry_call(self, "files:rename", "Move", { source = old, destination = new }, opts.user,
    "MoveResponse")
end

--- Removes a file or a whole directory tree: filesystem.Filesystem/Remove (reference §5.2; a
--- missing path is not an error).
--- Raises: InvalidArgument, Authentication, Sandbox, Transport, Timeout.
---@param path string
---@param opts? {user?: string}
function Files:remove(path, opts)
  opts = options.check(OPTS.remove, opts)
  client(self):unary("filesystem.Filesystem/Remove", { path = path }, { user = opts.user or "user" })
end

--- Makes `e` an EntryInfo (unknown fields raise InvalidArgument), for the OpenSandbox adapter's
--- entries (abx.client.opensandbox_execd). Returns `e`. Raises: nothing.
---@param e table
---@return table
function files.strict_entry(e)
  return options.strict(ENTRY, e)
end

return files
