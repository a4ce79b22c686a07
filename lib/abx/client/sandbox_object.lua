-- abx.client.sandbox_object: the Sandbox object scenarios use (`ctx.base_sandbox`, what conn:create,
-- conn:connect and conn:resume return), built by abx.client.sandbox from a control-plane `Sandbox`
-- answer. Its REST calls go through its connection (abx.client.sandbox: retries, error mapping);
-- envd through abx.client.envd; ports through abx.client.http and abx.client.route; the code
-- interpreter through abx.client.code; the agent-sandbox-server through abx.client.server.
--
--   sbx.commands:run("echo hi"); sbx.files:write("/tmp/a", "x"); sbx:set_timeout(60)
--   sbx:pause(); sbx:connect()          -- resumes with the lifetime it was created with
--
-- Ownership: the Sandbox alone holds its id, domain and tokens (id, domain, traffic_access_token,
-- and the envd access token as the private _envd_access_token). Its envd client, sbx:http and
-- run_code keep no copy: each call reads them from the Sandbox through abx.client.route.of, so
-- sbx:connect (which takes the answer's domain and tokens) or a test changing sbx.domain moves
-- all three at once.
--
-- Fail closed: an unknown field or method of a Sandbox raises InvalidArgument naming the valid
-- ones; every options table is checked (abx.client.options).
-- Units: seconds. Errors: abx.error tables via abx.client.errmap.
-- Source: docs/protocol/e2b-control-plane.md §3.2-§3.4 (routes, bodies), §7 (reaching ports).

local core = require("abx.core")
local cjson = require("cjson")
local errmap = require("abx.client.errmap")
local envd = require("abx.client.envd")
local commands = require("abx.client.commands")
local files = require("abx.client.files")
local http = require("abx.client.http")
local snapshot = require("abx.client.snapshot")
local code = require("abx.client.code")
local agent_server = require("abx.client.server")
local wire = require("abx.client.sandbox_wire")
local semantics = require("abx.client.semantics")
local options = require("abx.client.options")

local object = {}

local METRICS = options.define("sbx:get_metrics", "Resource metrics: SandboxMetric[].", {
    { "start", "number", "Unix seconds" }, { "end", "number", "Unix seconds" },
  })
local NETWORK_UPDATE = options.define("sbx:update_network", "Replaces the outbound rules (PUT "
  .. "/sandboxes/{id}/network; an omitted field is cleared).", {
    { "allow_out", "string[]", "outbound destinations allowed" },
    { "deny_out", "string[]", "outbound destinations denied" },
    { "allow_internet_access", "boolean", "outbound internet on or off" },
  })
local WITH = options.define("sbx:with", "A copy of the handle with other envd credentials "
  .. "(negative tests).", {
    { "access_token", "string|boolean", "that token; false sends none" },
  })
local METRIC = options.shape("SandboxMetric", "One sample of sbx:get_metrics.", {
    { "timestamp_unix", "integer", "Unix seconds" },
    { "cpu_count", "integer", "vCPUs" }, { "cpu_used_pct", "number", "percent" },
    { "mem_used", "integer", "bytes" }, { "mem_total", "integer", "bytes" },
    { "mem_cache", "integer", "bytes" }, { "disk_used", "integer", "bytes" },
    { "disk_total", "integer", "bytes" },
  })


---@class abx.Sandbox
---@field id string
---@field template_id string
---@field envd_version string
---@field domain string
---@field secure boolean
---@field traffic_access_token string|nil set when created with network.allow_public_traffic = false
---@field resumed boolean|nil true when connect/resume resumed a paused sandbox (201)
---@field timeout number the TTL (seconds) this handle was created or last connected with
---@field commands abx.Commands
---@field files abx.Files
---@field conn abx.Connection
local Sandbox = {}
options.class(Sandbox, "Sandbox", "One sandbox (conn:create, ctx.base_sandbox, ...).", {
    { "id", "string", "sandbox id" },
    { "template_id", "string", "template id" },
    { "alias", "string?", "template alias" },
    { "envd_version", "string?", "envd version" },
    { "domain", "string", "domain its ports are reached under" },
    { "secure", "boolean", "whether envd needs the access token" },
    { "traffic_access_token", "string?", "set when created with network.allow_public_traffic = false" },
    { "resumed", "boolean?", "after connect/resume: whether it was resumed (201)" },
    { "timeout", "number?", "the TTL (seconds) this handle was created or last connected with; "
      .. "sbx:connect() sends it again" },
    { "commands", "Commands", "processes" },
    { "files", "Files", "filesystem" },
    { "pty", "Pty", "terminals" },
    { "conn", "Connection", "its connection" },
  }, {
    { "kill()", "kills it: true, false when already gone" },
    { "set_timeout(seconds)", "TTL = now + seconds (may shorten it)" },
    { "get_info()", "SandboxInfo" },
    { "is_running()", "whether envd answers /health" },
    { "get_host(port)", "\"<port>-<id>.<domain>\"" },
    { "port_url(port)", "the URL a client outside uses for port" },
    { "http(port, opts)", "one HTTP request to a port inside (options: sbx:http)" },
    { "pause(opts)", "pauses it (options: conn:pause)" },
    { "connect(opts)", "connects again, resuming when paused (options: conn:connect)" },
    { "refresh(duration)", "extends the TTL, never shortens it" },
    { "get_metrics(opts)", "SandboxMetric[] (options: sbx:get_metrics)" },
    { "update_network(opts)", "replaces the outbound rules (options: sbx:update_network)" },
    { "create_snapshot(opts)", "SnapshotInfo (options: sbx:create_snapshot)" },
    { "run_code(src, opts)", "runs code in the code interpreter: Execution" },
    { "create_code_context(opts)", "Context" },
    { "list_code_contexts(opts)", "Context[]" },
    { "restart_code_context(ctx, opts)", "restarts a context's kernel" },
    { "remove_code_context(ctx, opts)", "true, false when it did not exist" },
    { "server(opts)", "a client for the agent-sandbox-server inside (options: sbx:server)" },
    { "envd_request()", "the envd client (internal)" },
    { "with(opts)", "a copy with other envd credentials (options: sbx:with)" },
  })

object.Sandbox = Sandbox

--- Gives a new sandbox handle (object.new, Sandbox:with) its own envd client, commands and files,
--- which read the handle's id, domain and token. Returns sbx. Raises: nothing.
---@param sbx abx.Sandbox
---@return abx.Sandbox
local function attach(sbx)
  sbx._envd = envd.client(sbx)
  sbx.commands = commands.new(sbx)
  sbx.files = files.new(sbx)
  return sbx
end

--- Builds a Sandbox from a `Sandbox` response (reference §3.3). Registers its tokens as secrets.
--- Raises: Protocol (no sandboxID or templateID).
---@param conn abx.Connection
---@param s table decoded `Sandbox`
---@param request string
---@param timeout number the TTL it was created or connected with, seconds (sbx.timeout)
---@return abx.Sandbox
function object.new(conn, s, request, timeout)
  if type(s.sandboxID) ~= "string" or type(s.templateID) ~= "string" then
    errmap.raise_protocol(201, request, "a Sandbox with sandboxID and templateID")
  end
  local token = type(s.envdAccessToken) == "string" and s.envdAccessToken or false
  local traffic = type(s.trafficAccessToken) == "string" and s.trafficAccessToken or nil
  if traffic then core.add_secret(traffic) end
  local domain = type(s.domain) == "string" and s.domain ~= "" and s.domain or conn.domain
  local sbx = setmetatable({
    id = s.sandboxID,
    template_id = s.templateID,
    alias = s.alias ~= cjson.null and s.alias or nil,
    envd_version = s.envdVersion,
    domain = domain,
    secure = token and true or false,
    traffic_access_token = traffic,
    timeout = timeout,
    conn = conn,
    _envd_access_token = token,
  }, Sandbox)
  if token then core.add_secret(token) end
  return attach(sbx)
end

--- Kills this sandbox (see Connection:kill). Raises: as Connection:kill.
---@return boolean true if it was killed now, false if it was already gone
function Sandbox:kill()
  return self.conn:kill(self.id)
end

--- Sets the TTL to now + `seconds`: POST /sandboxes/{id}/timeout (reference §3.4); may shorten it.
--- Raises: SandboxNotFound (404), Conflict, InvalidArgument, Authentication, Sandbox, Transport.
---@param seconds number
function Sandbox:set_timeout(seconds)
  local path = "/sandboxes/" .. envd.quote(self.id) .. "/timeout"
  local t = semantics.check_ttl(self.conn.ttl, seconds, "sbx:set_timeout") -- before the request
  local resp, request = self.conn:_call("POST", path, nil, { timeout = t }, true)
  if resp.status ~= 204 and resp.status ~= 200 then
    self.conn:_gone_if_404(resp, self.id)
    errmap.raise_api(resp, request, "SandboxNotFound")
  end
end

--- Details of this sandbox (see Connection:get_info). Raises: as Connection:get_info.
---@return table info
function Sandbox:get_info()
  return self.conn:get_info(self.id)
end

--- Whether envd answers GET /health through the routing (docs/protocol/envd-protocol.md §9; a 502 from
--- the edge means gone, docs/protocol/e2b-control-plane.md §6.2). A 404 from an ingress that no longer
--- knows the sandbox also counts as not running, and so does the edge's answer for a paused
--- sandbox (502 {sandboxId, canAutoResume}: errmap.edge_kind SandboxPaused). A gateway's bare
--- 502/503/504 (no JSON body) says nothing about the sandbox: it is retried (Client:http), then
--- Unavailable.
--- Raises: Authentication, Sandbox (another status), Unavailable, Transport, Timeout.
---@return boolean
function Sandbox:is_running()
  local resp = self._envd:http("GET", "/health", { timeout = 5 })
  if resp.status == 200 or resp.status == 204 then return true end
  if errmap.bare_gateway(resp.status, resp.body) then
    errmap.raise_envd_http(resp.status, resp.body, "GET /health", resp.attempts)
  end
  if resp.status == 502 or resp.status == 404 then return false end
  if errmap.edge_kind(resp.status, errmap.decode_object(resp.body)) then return false end
  errmap.raise_envd_http(resp.status, resp.body, "GET /health")
end

--- "<port>-<id>.<domain>" (docs/protocol/e2b-control-plane.md §7.1).
--- Raises: nothing.
---@param port integer
---@return string
function Sandbox:get_host(port)
  return string.format("%d-%s.%s", port, self.id, self.domain)
end

--- The URL a client outside the sandbox uses for `port`: "<scheme>://<port>-<id>.<domain>" with
--- the API URL's scheme (reference §7.1). When the API URL is on loopback or an IP literal (the
--- local platform serves its ingress on the API port) that port is added, as such a client needs it.
--- Raises: nothing.
---@param port integer
---@return string
function Sandbox:port_url(port)
  return http.port_url(self, port)
end

--- One HTTP request to a server inside the sandbox on `port`, routed as this connection routes
--- envd (host name or E2b-Sandbox-* headers); see abx.client.http.request. Never raises on an HTTP status.
--- Raises: Transport, Timeout, Protocol.
---@param port integer
---@param opts? {method?: string, path?: string, headers?: table, body?: string,
---  traffic_token?: boolean|string, timeout?: number}
---@return {status: integer, headers: table<string,string>, body: string}
function Sandbox:http(port, opts)
  return http.request(self, port, opts)
end

--- Pauses this sandbox (see Connection:pause): true, or false when it was already paused.
--- Raises: as Connection:pause.
---@param opts? {memory?: boolean}
---@return boolean
function Sandbox:pause(opts)
  return self.conn:pause(self.id, options.check("conn:pause", opts, "sbx:pause"))
end

--- Connects to this sandbox again (see Connection:connect): resumes it when paused, extends its TTL
--- when running. Without `timeout` the sandbox keeps its configured lifetime: the timeout this
--- handle was created or last connected with (`self.timeout`) is sent again, not a fixed 300 s
--- (docs/protocol/e2b-control-plane.md §3.2 ConnectSandbox: TTL = now + timeout; §3.4: only extended
--- when running). This handle takes the answer's tokens and domain; `self.resumed` tells whether
--- it was resumed (201). Returns self.
--- Raises: InvalidArgument (unknown option), and as Connection:connect.
---@param opts? {timeout?: number}
---@return abx.Sandbox
function Sandbox:connect(opts)
  opts = options.check("conn:connect", opts, "sbx:connect")
  local fresh = self.conn:connect(self.id, { timeout = opts.timeout or self.timeout })
  self.timeout = fresh.timeout
  self.domain, self.secure = fresh.domain, fresh.secure
  self._envd_access_token = fresh._envd_access_token
  self.traffic_access_token = fresh.traffic_access_token
  self.envd_version = fresh.envd_version
  self.resumed = fresh.resumed
  return self
end

--- Sends `method` /sandboxes/{id}/<what> with the JSON `body` (retried as Connection:_call
--- retries) and raises unless it answered 204 or 200: the common part of refresh and
--- update_network.
--- Raises: SandboxNotFound (404), and what errmap.raise_api maps another status to.
local function update(self, method, what, body)
  local path = "/sandboxes/" .. envd.quote(self.id) .. "/" .. what
  local resp, request = self.conn:_call(method, path, nil, body, true)
  if resp.status ~= 204 and resp.status ~= 200 then
    errmap.raise_api(resp, request, "SandboxNotFound")
  end
end

--- Extends the TTL to now + `duration` seconds, never shortening it: POST /sandboxes/{id}/refreshes
--- (reference §3.2 SandboxRefreshRequest: 0..3600, raised to 15 by the server).
--- Raises: SandboxNotFound (404, also when paused), InvalidArgument (400), Authentication, Sandbox.
---@param duration? number seconds (default: the server's 15)
function Sandbox:refresh(duration)
  update(self, "POST", "refreshes", duration and { duration = math.ceil(duration) } or nil)
end

--- Resource metrics: GET /sandboxes/{id}/metrics?start&end (Unix seconds, reference §3.1, §3.3
--- SandboxMetric). Returns an array of {timestamp_unix, cpu_count, cpu_used_pct, mem_used,
--- mem_total, mem_cache, disk_used, disk_total} (bytes; cpu_used_pct in percent).
--- Raises: SandboxNotFound (404), InvalidArgument (400), Authentication, Sandbox, Protocol.
---@param opts? {start?: number, ["end"]?: number}
---@return table[]
function Sandbox:get_metrics(opts)
  opts = options.check(METRICS, opts)
  local q = {}
  if opts.start then q[#q + 1] = { "start", string.format("%d", math.floor(opts.start)) } end
  if opts["end"] then q[#q + 1] = { "end", string.format("%d", math.floor(opts["end"])) } end
  local path = "/sandboxes/" .. envd.quote(self.id) .. "/metrics"
  local resp, request = self.conn:_call("GET", path, envd.query(q), nil, true)
  if resp.status ~= 200 then errmap.raise_api(resp, request, "SandboxNotFound") end
  local out = {}
  local function int(v) return math.tointeger(v) or v end
  for i, m in ipairs(errmap.decode_ok(resp, request, true)) do
    if type(m) ~= "table" then errmap.raise_protocol(resp.status, request, "SandboxMetric objects") end
    out[i] = options.strict(METRIC, {
      timestamp_unix = int(m.timestampUnix), cpu_count = int(m.cpuCount), cpu_used_pct = m.cpuUsedPct,
      mem_used = int(m.memUsed), mem_total = int(m.memTotal), mem_cache = int(m.memCache),
      disk_used = int(m.diskUsed), disk_total = int(m.diskTotal),
    })
  end
  return out
end

--- Replaces the outbound rules: PUT /sandboxes/{id}/network (reference §3.2
--- SandboxNetworkUpdateConfig: an omitted field is cleared, so `{}` restores the defaults).
--- Raises: SandboxNotFound (404), InvalidArgument (400), Conflict, Authentication, Sandbox.
---@param o {allow_out?: string[], deny_out?: string[], allow_internet_access?: boolean}
function Sandbox:update_network(o)
  o = options.check(NETWORK_UPDATE, o)
  local body = { allowOut = wire.json_array(o.allow_out), denyOut = wire.json_array(o.deny_out) }
  if o.allow_internet_access ~= nil then
    body.allow_internet_access = o.allow_internet_access and true or false
  end
  update(self, "PUT", "network", body)
end

--- Snapshots this sandbox (see abx.client.snapshot.create): {snapshot_id, names}.
--- Raises: as abx.client.snapshot.create.
---@param opts? {name?: string}
---@return {snapshot_id: string, names: string[]}
function Sandbox:create_snapshot(opts)
  return snapshot.create(self, opts)
end

--- The code interpreter on port 49999 (see abx.client.code for shapes, options and errors;
--- docs/protocol/envd-protocol.md §10): run_code(src, {language, context, envs, timeout,
--- request_timeout, on_stdout, on_stderr, on_result, on_error}) -> Execution {logs = {stdout,
--- stderr}, results, error, execution_count, text}; create_code_context{language, cwd} ->
--- Context {id, language, cwd}; list_code_contexts() -> Context[]; restart_code_context(ctx);
--- remove_code_context(ctx) -> true / false when it did not exist.
--- Raises: as the abx.client.code functions (NotFound for an unknown context, InvalidArgument,
--- Protocol for a malformed stream, Timeout, SandboxGone, Sandbox, Transport).
function Sandbox:run_code(src, opts) return code.run(self, src, opts) end
function Sandbox:create_code_context(opts) return code.create_context(self, opts) end
function Sandbox:list_code_contexts(opts) return code.list_contexts(self, opts) end
function Sandbox:restart_code_context(ctx, opts) return code.restart_context(self, ctx, opts) end
function Sandbox:remove_code_context(ctx, opts) return code.remove_context(self, ctx, opts) end

--- A client for the agent-sandbox-server in this sandbox (the python-hello template's server;
--- see abx.client.server): port 8080 unless `port`, the bearer token given or read from the
--- server's token file through envd. Nothing is sent until a method is called.
--- Raises: InvalidArgument (unknown option, bad port).
---@param opts? {port?: integer, token?: string|boolean, token_file?: string, timeout?: number,
---  traffic_token?: boolean|string}
---@return abx.AgentServer
function Sandbox:server(opts) return agent_server.new(self, opts) end

--- The envd client (internal: used by abx.client.commands, abx.client.files and abx.client.code).
--- It reads the id, domain and access token from this Sandbox at every call.
--- Raises: nothing.
---@return abx.EnvdClient
function Sandbox:envd_request()
  return self._envd
end

--- A copy of this sandbox handle with other envd credentials, for negative tests:
--- `access_token = "x"` sends that token, `access_token = false` sends none.
--- Raises: nothing.
---@param o {access_token: string|false}
---@return abx.Sandbox
function Sandbox:with(o)
  o = options.check(WITH, o)
  local c = setmetatable({}, Sandbox)
  for k, v in pairs(self) do c[k] = v end
  if o.access_token ~= nil then
    c._envd_access_token = o.access_token or false
    if type(o.access_token) == "string" then core.add_secret(o.access_token) end
  end
  return attach(c)
end

function Sandbox:__tostring()
  return "abx.sandbox(" .. self.id .. ")"
end

return object
