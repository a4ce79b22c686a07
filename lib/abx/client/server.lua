-- abx.client.server: a client for agent-sandbox-server, the in-sandbox HTTP server of the
-- python-hello template (scenarios/templates/python-hello/server/server.py documents the API;
-- docs/templates.md the contract), reached through the sandbox's port routing like any other
-- port (abx.client.http: "<port>-<id>.<domain>" or the E2b-Sandbox-* headers, plus the traffic
-- token when the sandbox has one).
--
--   local srv = ctx.server_sandbox:server()            -- port 8080, token read from the sandbox
--   t.eq(srv:run("echo hi").stdout, "hi\n")
--   srv:write_file("/home/user/a.txt", "x"); t.eq(srv:read_file("/home/user/a.txt"), "x")
--   local p = srv:start_process("sleep 60"); srv:kill_process(p.pid)
--   srv:with({ token = false }):hello()                -- raises Authentication (401)
--
-- Auth: `Authorization: Bearer <token>` on every call but health(). The token is `token` when
-- given (e.g. the AGENT_SERVER_TOKEN the sandbox was created with, `envs`); otherwise it is read
-- once, at the first call that needs it, from the server's token file (`token_file`, default
-- /var/lib/agent-server/token) through envd as root: holding envd access is holding the sandbox.
-- `token = false` sends none (negative tests). The token is registered as a secret.
-- Errors (the server answers {"error": code, "message": text}): 400/405/411/415 InvalidArgument,
-- 401 Authentication, 403 "forbidden" (the OS refused the server's user) Sandbox, 404 NotFound,
-- 409 Conflict, 413 PayloadTooLarge, 500 Sandbox; an
-- answer of the edge (closed port, paused or gone sandbox) PortNotOpen, SandboxPaused or
-- SandboxGone (errmap.raise_server); a success that is not the documented JSON is Protocol;
-- Transport, Timeout from the transfer. `code` of the error is the server's error code.
-- Units: seconds; sizes in bytes.

local core = require("abx.core")
local cjson = require("cjson")
local errmap = require("abx.client.errmap")
local http = require("abx.client.http")
local envd = require("abx.client.envd")
local options = require("abx.client.options")

local server = {}

--- The server's port and token file when the template does not say otherwise (server.py).
server.PORT = 8080
server.TOKEN_FILE = "/var/lib/agent-server/token"

local TRAFFIC = { "traffic_token", "boolean|string", "false: no traffic token; a string: that one" }
local OPEN = options.define("sbx:server", "A client for the agent-sandbox-server in this sandbox "
  .. "(python-hello): an AgentServer.", {
    { "port", "integer", "the server's port (default 8080)" },
    { "token", "string|boolean", "the bearer token (default: read from token_file); false sends none" },
    { "token_file", "string", "where the server wrote its token (default /var/lib/agent-server/token)" },
    { "timeout", "number", "seconds per request (default the connection's request_timeout)" },
    TRAFFIC,
  })
local WITH = options.define("server:with", "A copy of the client with other credentials "
  .. "(negative tests).", {
    { "token", "string|boolean", "that token; false sends none" }, TRAFFIC,
  })
local RUN = options.define("server:run", "Runs a shell command (POST /commands): a "
  .. "ServerCommandResult.", {
    { "cwd", "string", "working directory (default the server user's home)" },
    { "env", "table<string,string>", "extra environment variables" },
    { "timeout", "number", "seconds the server lets it run (default 60, at most 3600)" },
  })
local START = options.define("server:start_process", "Starts a background process (POST "
  .. "/process/start): a ServerProcess.", {
    { "cwd", "string", "working directory" }, { "env", "table<string,string>", "extra environment" },
  })
local KILL = options.define("server:kill_process", "Signals a process's group (POST "
  .. "/process/<pid>/kill).", {
    { "signal", "string", "TERM (default), KILL, INT, HUP, QUIT, USR1 or USR2" },
  })
local WRITE = options.define("server:write_file", "Writes a file, creating parents (PUT "
  .. "/files/<path>).", {
    { "mode", "string", "octal permission bits, e.g. \"0755\"" },
  })
local DELETE = options.define("server:delete_file", "Removes a file or directory (DELETE "
  .. "/files/<path>).", {
    { "recursive", "boolean", "remove a non-empty directory" },
  })
local REQUEST = options.define("server:request", "One raw request to the server: the answer "
  .. "whatever its status.", {
    { "body", "table|string", "a table is sent as JSON, a string as is" },
    { "headers", "table<string,string>", "extra headers (Authorization is set unless given)" },
  })

local CALL = options.define("server:call", "Runs a named command of the server's catalogue "
  .. "(POST /catalogue/<name>) without a shell: a ServerCallResult.", {
    { "cwd", "string", "working directory (default the server user's home)" },
    { "env", "table<string,string>", "extra environment variables" },
    { "timeout", "number", "seconds the server lets it run (default 60, at most 3600)" },
  })
local CALL_RESULT = options.shape("ServerCallResult", "What AgentServer:call returns.", {
    { "name", "string", "the catalogue command" },
    { "argv", "string[]", "the argv the server ran, each argument value intact" },
    { "exit_code", "integer", "the command's exit code (124 after a timeout, 128+N after signal N)" },
    { "stdout", "string", "standard output (UTF-8)" },
    { "stderr", "string", "standard error (UTF-8)" },
    { "timed_out", "boolean", "the server killed it at its timeout" },
    { "duration_ms", "integer", "wall time, milliseconds" },
  })
local COMMAND_RESULT = options.shape("ServerCommandResult", "What AgentServer:run returns.", {
    { "exit_code", "integer", "the command's exit code (124 after a timeout, 128+N after signal N)" },
    { "stdout", "string", "standard output (UTF-8)" },
    { "stderr", "string", "standard error (UTF-8)" },
    { "timed_out", "boolean", "the server killed it at its timeout" },
    { "duration_ms", "integer", "wall time, milliseconds" },
  })
local PROCESS = options.shape("ServerProcess", "A process the server started.", {
    { "pid", "integer", "its pid inside the sandbox" },
    { "cmd", "string", "the command line" },
    { "cwd", "string", "its working directory" },
    { "status", "string", "\"running\", \"exited\" or \"killed\"" },
    { "exit_code", "integer?", "when exited" },
    { "signal", "string?", "when killed: e.g. \"TERM\"" },
    { "started_at", "number", "Unix seconds" },
    { "ended_at", "number?", "Unix seconds, once ended" },
    { "stdout", "string?", "get_process only: the last 1 MiB of its output" },
    { "stderr", "string?", "get_process only: the last 1 MiB of its error output" },
  })
local ENTRY = options.shape("ServerEntry", "One directory entry of AgentServer:list_dir.", {
    { "name", "string", "base name" },
    { "type", "string", "\"file\", \"dir\", \"symlink\" or \"other\"" },
    { "size", "integer", "bytes" },
    { "mode", "string", "octal permission bits, e.g. \"0644\"" },
    { "mtime", "number", "Unix seconds" },
  })
local PORT_INFO = options.shape("ServerPort", "One listening TCP socket (AgentServer:ports).", {
    { "port", "integer", "port number" },
    { "address", "string", "bound address, e.g. \"::\" or \"127.0.0.1\"" },
    { "family", "string", "\"ipv4\" or \"ipv6\"" },
  })

---@class abx.AgentServer
local AgentServer = {}
options.class(AgentServer, "AgentServer", "A client for agent-sandbox-server (sbx:server()).", {
    { "sandbox", "Sandbox", "its sandbox" },
    { "port", "integer", "the server's port" },
  }, {
    { "url()", "the port URL a client outside uses" },
    { "health()", "{status = \"ok\"} (no auth)" },
    { "capabilities()", "{name, version, api_version, port, user, routes, signals}" },
    { "run(cmd, opts)", "ServerCommandResult (options: server:run)" },
    { "read_file(path)", "the file's bytes" },
    { "list_dir(path)", "ServerEntry[] sorted by name" },
    { "write_file(path, data, opts)", "{path, size, created} (options: server:write_file)" },
    { "delete_file(path, opts)", "true (options: server:delete_file)" },
    { "start_process(cmd, opts)", "ServerProcess (options: server:start_process)" },
    { "get_process(pid)", "ServerProcess with its output" },
    { "list_processes()", "ServerProcess[] (without output)" },
    { "kill_process(pid, opts)", "{pid, signal, status} (options: server:kill_process)" },
    { "system_info()", "{hostname, kernel, cpu_count, cpu_quota, memory, uptime_s, user, python}" },
    { "env()", "table<string,string>: the environment commands start with" },
    { "ports()", "ServerPort[]: listening TCP sockets" },
    { "hello()", "{message}: the template's own route" },
    { "catalogue()", "the command catalogue: {name, description, args = {{name, type, required, "
      .. "default?, description}}, argv}[]" },
    { "call(name, args, opts)", "ServerCallResult: a catalogue command run without a shell (options: "
      .. "server:call)" },
    { "request(method, path, opts)", "{status, headers, body} whatever the status (options: server:request)" },
    { "with(opts)", "a copy with other credentials (options: server:with)" },
  })

--- A client for the agent-sandbox-server in `sbx` (see the file header). Nothing is sent yet.
--- Raises: InvalidArgument (unknown option, bad port).
---@param sbx abx.Sandbox
---@param opts? {port?: integer, token?: string|boolean, token_file?: string, timeout?: number,
---  traffic_token?: boolean|string}
---@return abx.AgentServer
function server.new(sbx, opts)
  opts = options.check(OPEN, opts)
  local port = opts.port or server.PORT
  if port < 1 or port > 65535 then
    errmap.raise("InvalidArgument", 0, "sbx:server: port must be 1..65535, got " .. port)
  end
  if opts.token == true then
    errmap.raise("InvalidArgument", 0, "sbx:server: option 'token' must be a string or false")
  end
  if type(opts.token) == "string" then core.add_secret(opts.token) end
  return setmetatable({
    sandbox = sbx, port = port, _token = opts.token, _token_file = opts.token_file or server.TOKEN_FILE,
    _timeout = opts.timeout, _traffic = opts.traffic_token,
  }, AgentServer)
end

--- A copy of this client with other credentials. Raises: InvalidArgument.
---@param o {token?: string|false, traffic_token?: boolean|string}
---@return abx.AgentServer
function AgentServer:with(o)
  o = options.check(WITH, o)
  if o.token == true then
    errmap.raise("InvalidArgument", 0, "server:with: option 'token' must be a string or false")
  end
  local c = setmetatable({}, AgentServer)
  for k, v in pairs(self) do c[k] = v end
  if o.token ~= nil then
    c._token = o.token
    if type(o.token) == "string" then core.add_secret(o.token) end
  end
  if o.traffic_token ~= nil then c._traffic = o.traffic_token end
  return c
end

--- The port URL a client outside the sandbox uses (sbx:port_url). Raises: nothing.
---@return string
function AgentServer:url()
  return self.sandbox:port_url(self.port)
end

--- The bearer token: the given one, or the token file's content read through envd as root
--- (once; cached). false when the client sends none.
--- Raises: NotFound (no token file: the server has not started), and what files:read raises.
local function token(self)
  if self._token == nil then
    local ok, t = pcall(self.sandbox.files.read, self.sandbox.files, self._token_file,
      { user = "root" })
    if not ok then
      if core.is_error(t) and t.kind == "NotFound" then
        -- say what a missing token file means: no agent-sandbox-server has started here
        errmap.raise("NotFound", t.status or 404, "sbx:server: no agent-sandbox-server token at "
          .. self._token_file .. ": the server has not started in this sandbox (a template "
          .. "that runs it, such as python-hello, starts it; or give the token file it wrote)")
      end
      error(t, 0)
    end
    t = t:gsub("%s+$", "")
    if t == "" then
      errmap.raise("Protocol", 0, "sbx:server: the token file " .. self._token_file .. " is empty")
    end
    core.add_secret(t)
    self._token = t
  end
  return self._token
end

--- One request; the answer whatever its status. `body`: a table (JSON) or a string.
local function send(self, method, path, body, headers, auth)
  local h = { Accept = "application/json" }
  if body ~= nil then
    h["Content-Type"] = "application/json"
    if type(body) == "table" then body = cjson.encode(body) end
  end
  if auth ~= false then
    local tok = token(self)
    if tok then h.Authorization = "Bearer " .. tok end
  end
  for k, v in pairs(headers or {}) do h[k] = v end
  return http.request(self.sandbox, self.port, {
    method = method, path = path, headers = h, body = body, traffic_token = self._traffic,
    timeout = self._timeout,
  })
end

--- Sends and decodes a success: the JSON object of a 2xx answer, else the mapped error.
local function call(self, method, path, body, auth, timeout_extra)
  local saved = self._timeout
  if timeout_extra then self._timeout = (saved or self.sandbox.conn.request_timeout) + timeout_extra end
  local ok, resp = pcall(send, self, method, path, body, nil, auth)
  self._timeout = saved
  if not ok then error(resp, 0) end
  local request = method .. " " .. path:gsub("%?.*", "")
  if resp.status < 200 or resp.status > 299 then
    errmap.raise_server(resp.status, resp.body, request)
  end
  local obj = errmap.decode_object(resp.body)
  if not obj or (next(obj) ~= nil and obj[1] ~= nil) then
    errmap.raise_protocol(resp.status, request, "a JSON object")
  end
  return obj, request
end

-- JSON value -> Lua: null is nil, integral numbers are integers.
local function plain(v)
  if v == cjson.null then return nil end
  if type(v) == "number" then return math.tointeger(v) or v end
  if type(v) == "table" then
    local out = {}
    for k, x in pairs(v) do out[k] = plain(x) end
    return out
  end
  return v
end

--- The declared fields of `shape` from `obj`, type-checked; a strict table.
--- Raises: Protocol naming the field when one is missing or of the wrong type.
local function pick(shape, obj, request)
  local out = {}
  for _, f in ipairs(shape.list) do
    local name, ty = f[1], f[2]
    local optional = ty:sub(-1) == "?"
    if optional then ty = ty:sub(1, -2) end
    local v = plain(obj[name])
    if v == nil then
      if not optional then
        errmap.raise_protocol(200, request, shape.name .. " with field '" .. name .. "'")
      end
    elseif not options.type_ok(ty, v) then
      errmap.raise_protocol(200, request, shape.name .. " field '" .. name .. "' of type " .. ty)
    end
    out[name] = v
  end
  return options.strict(shape, out)
end

local function array(obj, key, request)
  local v = obj[key]
  if type(v) ~= "table" or (next(v) ~= nil and v[1] == nil) then
    errmap.raise_protocol(200, request, "an object with an array '" .. key .. "'")
  end
  return v
end

--- "/files" + the absolute path, each segment percent-encoded.
--- Raises: InvalidArgument (not an absolute path).
local function files_path(path, call_name)
  if type(path) ~= "string" or path:sub(1, 1) ~= "/" then
    errmap.raise("InvalidArgument", 0, call_name .. ": path must be an absolute path, got "
      .. tostring(path))
  end
  local parts = {}
  for seg in path:gmatch("[^/]+") do parts[#parts + 1] = envd.quote(seg) end
  return "/files/" .. table.concat(parts, "/")
end

local function pid_of(pid, call_name)
  if type(pid) == "table" then pid = pid.pid end
  if math.type(pid) ~= "integer" then
    errmap.raise("InvalidArgument", 0, call_name .. ": pid must be an integer or a ServerProcess")
  end
  return pid
end

--- GET /health -> {status = "ok"}; sent without the token. Raises: as the file header.
function AgentServer:health()
  return plain((call(self, "GET", "/health", nil, false)))
end

--- GET /capabilities -> {name, version, api_version, port, user, routes = {...}, signals = {...}}.
function AgentServer:capabilities()
  return plain((call(self, "GET", "/capabilities")))
end

--- POST /commands: runs `bash -c cmd` as the server's user; returns a ServerCommandResult.
--- The transfer may last the command's timeout plus the connection's request timeout.
--- Raises: InvalidArgument (unknown option; 400), and as the file header.
---@param cmd string
---@param opts? {cwd?: string, env?: table<string,string>, timeout?: number}
function AgentServer:run(cmd, opts)
  opts = options.check(RUN, opts)
  local body = { cmd = cmd, cwd = opts.cwd, timeout = opts.timeout }
  if opts.env and next(opts.env) then body.env = opts.env end
  local obj, request = call(self, "POST", "/commands", body, nil, opts.timeout or 60)
  return pick(COMMAND_RESULT, obj, request)
end

--- GET /catalogue: the server's named commands, each {name, description, args = {{name, type
--- ("string", "string_array", "integer", "boolean"), required, default?, description}}, argv
--- (the template: literal strings and {arg} / {flag, when} tokens)}, in the server's order.
--- Raises: Protocol (not that shape), and as the file header.
---@return table[]
function AgentServer:catalogue()
  local obj, request = call(self, "GET", "/catalogue")
  local out = {}
  for i, c in ipairs(array(obj, "commands", request)) do
    if type(c) ~= "table" or type(c.name) ~= "string" or type(c.args) ~= "table" then
      errmap.raise_protocol(200, request, "commands[" .. i .. "] with name and args")
    end
    out[i] = plain(c)
  end
  return out
end

-- The JSON text of a call's arguments: every table value is an array (the catalogue's only
-- structured type is string_array), so {} stays [] and no element is dropped or reordered.
local function args_json(args)
  local keys = {}
  for k in pairs(args) do
    if type(k) ~= "string" then
      errmap.raise("InvalidArgument", 0, "server:call: argument names must be strings, got "
        .. type(k))
    end
    keys[#keys + 1] = k
  end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do
    local v = args[k]
    local enc
    if type(v) == "table" then
      local n = 0
      for _ in pairs(v) do n = n + 1 end
      if n ~= #v then
        errmap.raise("InvalidArgument", 0, "server:call: argument '" .. k .. "' is a table that "
          .. "is not an array (a string array is {\"a\", \"b\"})")
      end
      local items = {}
      for i, x in ipairs(v) do items[i] = cjson.encode(x) end
      enc = "[" .. table.concat(items, ",") .. "]"
    else
      enc = cjson.encode(v)
    end
    parts[#parts + 1] = cjson.encode(k) .. ":" .. enc
  end
  return "{" .. table.concat(parts, ",") .. "}"
end

--- POST /catalogue/<name> {args, cwd?, env?, timeout?}: runs the named command of the catalogue
--- without a shell, each string-array element its own argv entry; returns a ServerCallResult.
--- `args` is a table (strings, integers, booleans, arrays of strings; an empty table is an empty
--- array) or the JSON text of one object, sent as it is (the CLI's --json-args).
--- Raises: InvalidArgument (the server's 400: unknown command, unknown or missing argument, a
--- value of the wrong type; its message names the valid ones), and as the file header.
---@param name string
---@param args table|string
---@param opts? {cwd?: string, env?: table<string,string>, timeout?: number}
---@return table ServerCallResult
function AgentServer:call(name, args, opts)
  opts = options.check(CALL, opts)
  if type(name) ~= "string" or name == "" then
    errmap.raise("InvalidArgument", 0, "server:call: name must be a non-empty string")
  end
  local text
  if type(args) == "string" then
    text = args
  elseif type(args) == "table" then
    text = args_json(args)
  else
    errmap.raise("InvalidArgument", 0, "server:call: args must be a table or a JSON object's text, got "
      .. type(args))
  end
  local rest = {}
  if opts.cwd then rest[#rest + 1] = "\"cwd\":" .. cjson.encode(opts.cwd) end
  if opts.timeout then rest[#rest + 1] = "\"timeout\":" .. cjson.encode(opts.timeout) end
  if opts.env and next(opts.env) then rest[#rest + 1] = "\"env\":" .. cjson.encode(opts.env) end
  table.insert(rest, 1, "\"args\":" .. text)
  local obj, request = call(self, "POST", "/catalogue/" .. envd.quote(name),
    "{" .. table.concat(rest, ",") .. "}", nil, opts.timeout or 60)
  return pick(CALL_RESULT, obj, request)
end

--- GET /files/<path> of a file: its bytes (the server's base64 or UTF-8 content decoded).
--- Raises: NotFound (404), InvalidArgument (a directory: use list_dir), Protocol, and as the header.
---@param path string absolute
---@return string
function AgentServer:read_file(path)
  local obj, request = call(self, "GET", files_path(path, "server:read_file") .. "?encoding=base64")
  if obj.type ~= "file" then
    errmap.raise("InvalidArgument", 0, "server:read_file: " .. path .. " is a " .. tostring(obj.type)
      .. ", not a file (list_dir lists a directory)")
  end
  if obj.encoding ~= "base64" or type(obj.content) ~= "string" then
    errmap.raise_protocol(200, request, "a file with base64 content")
  end
  local bytes = core.b64decode(obj.content)
  if not bytes then errmap.raise_protocol(200, request, "valid base64 content") end
  return bytes
end

--- GET /files/<path> of a directory: ServerEntry[] sorted by name.
--- Raises: NotFound (404), InvalidArgument (a file), Protocol, and as the header.
---@param path string absolute
function AgentServer:list_dir(path)
  local obj, request = call(self, "GET", files_path(path, "server:list_dir"))
  if obj.type ~= "dir" then
    errmap.raise("InvalidArgument", 0, "server:list_dir: " .. path .. " is a " .. tostring(obj.type)
      .. ", not a directory")
  end
  local out = {}
  for i, e in ipairs(array(obj, "entries", request)) do out[i] = pick(ENTRY, e, request) end
  return out
end

--- PUT /files/<path>: writes `data` (bytes, sent base64), creating parents.
--- Returns {path, size, created}. Raises: InvalidArgument, Conflict (a directory), and as the header.
---@param path string absolute
---@param data string bytes
---@param opts? {mode?: string}
function AgentServer:write_file(path, data, opts)
  opts = options.check(WRITE, opts)
  if type(data) ~= "string" then
    errmap.raise("InvalidArgument", 0, "server:write_file: data must be a string")
  end
  local obj = call(self, "PUT", files_path(path, "server:write_file"),
    { content = core.b64encode(data), encoding = "base64", mode = opts.mode })
  return plain(obj)
end

--- DELETE /files/<path>: true. Raises: NotFound (404), Conflict (a non-empty directory without
--- recursive), and as the header.
---@param path string absolute
---@param opts? {recursive?: boolean}
function AgentServer:delete_file(path, opts)
  opts = options.check(DELETE, opts)
  local q = opts.recursive and "?recursive=true" or ""
  call(self, "DELETE", files_path(path, "server:delete_file") .. q)
  return true
end

--- POST /process/start: a ServerProcess (status "running").
---@param cmd string
---@param opts? {cwd?: string, env?: table<string,string>}
function AgentServer:start_process(cmd, opts)
  opts = options.check(START, opts)
  local body = { cmd = cmd, cwd = opts.cwd }
  if opts.env and next(opts.env) then body.env = opts.env end
  local obj, request = call(self, "POST", "/process/start", body)
  return pick(PROCESS, obj, request)
end

--- GET /process/<pid>: a ServerProcess with the tail of its output. Raises: NotFound (404).
---@param pid integer|table a pid or a ServerProcess
function AgentServer:get_process(pid)
  local obj, request = call(self, "GET", "/process/" .. pid_of(pid, "server:get_process"))
  return pick(PROCESS, obj, request)
end

--- GET /process: every ServerProcess the server started (without output), oldest first.
function AgentServer:list_processes()
  local obj, request = call(self, "GET", "/process")
  local out = {}
  for i, p in ipairs(array(obj, "processes", request)) do out[i] = pick(PROCESS, p, request) end
  return out
end

--- POST /process/<pid>/kill: signals the process group; {pid, signal, status}.
--- Raises: NotFound (404), Conflict (409: it has ended), InvalidArgument (a bad signal), ...
---@param pid integer|table
---@param opts? {signal?: string}
function AgentServer:kill_process(pid, opts)
  opts = options.check(KILL, opts)
  local path = "/process/" .. pid_of(pid, "server:kill_process") .. "/kill"
  return plain((call(self, "POST", path, { signal = opts.signal })))
end

--- GET /system/info (see server.py: hostname, kernel, cpu_count, cpu_quota, memory, ...).
function AgentServer:system_info()
  return plain((call(self, "GET", "/system/info")))
end

--- GET /env: the environment the server's commands start with.
---@return table<string,string>
function AgentServer:env()
  local obj, request = call(self, "GET", "/env")
  if type(obj.env) ~= "table" then errmap.raise_protocol(200, request, "{env = {...}}") end
  return plain(obj.env)
end

--- GET /ports: ServerPort[] of the listening TCP sockets (sorted by port).
function AgentServer:ports()
  local obj, request = call(self, "GET", "/ports")
  local out = {}
  for i, p in ipairs(array(obj, "ports", request)) do out[i] = pick(PORT_INFO, p, request) end
  return out
end

--- GET /hello: {message = "hello from python-hello"}.
function AgentServer:hello()
  return plain((call(self, "GET", "/hello")))
end

--- One raw request (negative tests): {status, headers, body} whatever the status.
--- Raises: InvalidArgument (unknown option), Transport, Timeout.
---@param method string
---@param path string starts with "/"
---@param opts? {body?: table|string, headers?: table<string,string>}
function AgentServer:request(method, path, opts)
  opts = options.check(REQUEST, opts)
  return send(self, method, path, opts.body, opts.headers, nil)
end

function AgentServer:__tostring()
  return "abx.agent_server(" .. self.sandbox.id .. ":" .. self.port .. ")"
end

server.AgentServer = AgentServer
return server
