-- abx.client.opensandbox_object: the Sandbox of an OpenSandbox connection (abx.client.opensandbox):
-- the same fields and methods as the E2B client's Sandbox (abx.client.sandbox_object), so
-- scenarios do not change. Lifecycle calls go through its connection; ports through the
-- sandbox's endpoints (GET /sandboxes/{id}/endpoints/{port}, kept per handle); processes and files
-- through execd (abx.client.opensandbox_execd, abx.client.opensandbox_files); get_metrics is
-- execd's GET /metrics; the code interpreter is execd's /code routes (abx.client.opensandbox_code).
-- create_snapshot is abx.client.opensandbox_snapshot's; update_network and get_info's rules go
-- through the egress sidecar (abx.client.opensandbox_egress); refresh is renew-expiration when
-- later; the agent server (abx.client.server) through the port's endpoint. A method with no
-- OpenSandbox equivalent (restarting a code context, host names, pty) raises Skipped "provider
-- <name> (opensandbox) has no equivalent of <primitive>: missing capability".
-- Source: alibaba/OpenSandbox @3bb6fad specs/sandbox-lifecycle.yml (Endpoint, renew-expiration).

local core = require("abx.core")
local cjson = require("cjson")
local errmap = require("abx.client.errmap")
local options = require("abx.client.options")
local wire = require("abx.client.opensandbox_wire")
local execd = require("abx.client.opensandbox_execd")
local files = require("abx.client.opensandbox_files")
local code = require("abx.client.opensandbox_code")
local egress = require("abx.client.opensandbox_egress")

local M = {}

---@class abx.OpenSandbox
local Sandbox = {}
options.class(Sandbox, "OpenSandbox", "One OpenSandbox sandbox: the Sandbox of a protocol: "
  .. "opensandbox provider (same fields and methods; no equivalent: Skipped).", {
    { "id", "string", "sandbox id" },
    { "template_id", "string", "image URI (the template name)" },
    { "alias", "string?", "never set" },
    { "envd_version", "string?", "never set (execd, not envd)" },
    { "domain", "string?", "never set (endpoints name their host)" },
    { "secure", "boolean", "whether secureAccess was asked for" },
    { "traffic_access_token", "string?", "never set" },
    { "resumed", "boolean?", "after connect/resume: whether it was resumed" },
    { "timeout", "number?", "the TTL (seconds) this handle was created or last connected with" },
    { "commands", "Commands", "processes through execd" },
    { "files", "Files", "filesystem through execd" },
    { "pty", "table", "Skipped on use: no equivalent" },
    { "conn", "OpenSandboxConnection", "its connection" },
  }, {
    { "kill()", "kills it: true, false when already gone" },
    { "set_timeout(seconds)", "expiry = now + seconds (renew-expiration)" },
    { "get_info()", "SandboxInfo" },
    { "is_running()", "whether its state is Running and execd answers /ping" },
    { "get_host(port)", "Skipped: no host names" },
    { "port_url(port)", "the endpoint URL of port" },
    { "http(port, opts)", "one HTTP request to a port through its endpoint (options: sbx:http)" },
    { "pause(opts)", "pauses it" },
    { "connect(opts)", "connects again, resuming when paused" },
    { "refresh(duration)", "expiry = now + duration when later (GET, renew-expiration)" },
    { "get_metrics(opts)", "execd's GET /metrics: one sample of now, no disk figures" },
    { "update_network(opts)", "replaces the rules: the egress sidecar's POST /policy" },
    { "create_snapshot(opts)", "SnapshotInfo (abx.client.opensandbox_snapshot)" },
    { "run_code(src, opts)", "runs code through execd's POST /code: Execution" },
    { "create_code_context(opts)", "POST /code/context: Context" },
    { "list_code_contexts(opts)", "GET /code/contexts: Context[]" },
    { "restart_code_context(ctx, opts)", "Skipped: no equivalent" },
    { "remove_code_context(ctx, opts)", "DELETE /code/contexts/{id}: true, false when gone" },
    { "server(opts)", "the agent-sandbox-server client, through the endpoint (options: sbx:server)" },
    { "envd_request()", "Skipped: no envd" },
    { "with(opts)", "a copy with another execd token (options: sbx:with)" },
  })
M.Sandbox = Sandbox
-- abx.client.http (http.request, http.get, http.port_url) routes an OpenSandbox sandbox through
-- these instead of E2B's routing (it looks for them on the handle's metatable)
Sandbox._port_request = function(sbx, port, opts) return sbx:http(port, opts) end
Sandbox._port_url = function(sbx, port) return sbx:port_url(port) end

-- sbx.pty: every use is Skipped. execd has terminals, but only as a WebSocket (`/pty`, OpenSandbox
-- @3bb6fad components/execd/PTY.md) that specs/execd-api.yaml does not describe; this adapter
-- speaks the spec, and the local flavour does not serve `/pty` (docs/providers.md).
local Pty = setmetatable({}, { __index = function(_, k)
  if type(k) == "string" and k:sub(1, 1) ~= "_" then
    return function(self)
      wire.skip(rawget(self, "_provider"), "sbx.pty:" .. k
        .. " (execd's /pty is a WebSocket outside specs/execd-api.yaml)")
    end
  end
  return nil
end })

local function attach(sbx)
  sbx.commands = execd.commands(sbx)
  sbx.files = files.files(sbx)
  sbx.pty = setmetatable({ _provider = sbx.conn.provider_name }, { __index = Pty })
  return sbx
end

--- Builds the Sandbox of an OpenSandbox `Sandbox` answer (internal).
--- Raises: Protocol (no id).
---@param conn abx.OpenSandboxConnection
---@param d table
---@param timeout number|nil
---@param secure boolean|nil
---@return abx.OpenSandbox
function M.new(conn, d, timeout, secure)
  if type(d.id) ~= "string" then errmap.raise_protocol(200, "GET /sandboxes/{id}", "a Sandbox with id") end
  local template = type(d.image) == "table" and d.image.uri ~= cjson.null and d.image.uri
    or (d.snapshotId ~= cjson.null and d.snapshotId) or nil
  return attach(setmetatable({
    id = d.id, template_id = template, secure = secure == true, timeout = timeout, conn = conn,
  }, Sandbox))
end

--- Kills this sandbox (Connection:kill). Raises: as Connection:kill.
---@return boolean
function Sandbox:kill() return self.conn:kill(self.id) end

--- Moves the expiry to now + `seconds` (renew-expiration with an absolute expiresAt; the server
--- refuses an expiry before the current one with 400: InvalidArgument).
--- Raises: InvalidArgument, SandboxNotFound, Conflict, Authentication, Protocol.
---@param seconds number
function Sandbox:set_timeout(seconds)
  self.conn:_renew(self.id, seconds, "sbx:set_timeout")
end

--- SandboxInfo of this sandbox, with network and allow_internet_access from its egress
--- sidecar's policy when that answers (abx.client.opensandbox_egress read).
--- Raises: as Connection:get_info.
---@return table
function Sandbox:get_info()
  local info = self.conn:get_info(self.id)
  local net, internet = egress.read(self) -- the egress sidecar's policy, when it answers
  if net then info.network, info.allow_internet_access = net, internet end
  return info
end

--- Whether it runs: its state is Running and execd answers GET /ping. A 404 (it is gone) is
--- false. Raises: Authentication, Sandbox, Transport, Timeout.
---@return boolean
function Sandbox:is_running()
  local ok, d = pcall(self.conn._get, self.conn, self.id)
  if not ok then
    if core.is_error(d) and d.kind == "SandboxNotFound" then return false end
    error(d, 0)
  end
  if d.status.state ~= "Running" then return false end
  return execd.ping(self)
end

function Sandbox:get_host() wire.skip(self.conn.provider_name, "sbx:get_host (host-name routing)") end

--- The URL a client outside uses for `port`: its endpoint (GET .../endpoints/{port}).
--- Raises: as Connection:endpoint.
---@param port integer
---@return string
function Sandbox:port_url(port)
  return (self:_endpoint(port))
end

--- The endpoint of `port` for this handle, asked once and kept (so a request after a kill still
--- goes to the ingress and gets its answer, as E2B's edge gives one). Returns the URL and a fresh
--- copy of its headers. Raises: as Connection:endpoint.
function Sandbox:_endpoint(port)
  self._endpoints = self._endpoints or {}
  local e = self._endpoints[port]
  if not e then
    local url, h = self.conn:endpoint(self.id, port)
    e = { url = url, headers = h }
    self._endpoints[port] = e
  end
  local h = {}
  for k, v in pairs(e.headers) do h[k] = v end
  return e.url, h
end

--- One HTTP request to `port` through its endpoint and the endpoint's headers; the answer
--- whatever its status. `traffic_token` has no equivalent (Skipped when given).
--- Raises: Skipped, InvalidArgument, Transport, Timeout, Protocol.
---@param port integer
---@param opts? table sbx:http's options
---@return {status: integer, headers: table, body: string}
function Sandbox:http(port, opts)
  opts = options.check("sbx:http", opts)
  if opts.traffic_token ~= nil then wire.skip(self.conn.provider_name, "sbx:http traffic_token") end
  local path = opts.path or "/"
  if path:sub(1, 1) ~= "/" then
    errmap.raise("InvalidArgument", 0, "sbx:http: path must start with \"/\", got " .. path)
  end
  local url, h = self:_endpoint(port)
  for k, v in pairs(opts.headers or {}) do h[k] = v end
  return core.request({ method = opts.method or "GET", url = url .. path, headers = h,
    body = opts.body, timeout = opts.timeout or self.conn.request_timeout, max_body = opts.max_body })
end

--- Pauses this sandbox (Connection:pause). Raises: as Connection:pause.
---@param opts? {memory?: boolean}
---@return boolean
function Sandbox:pause(opts)
  return self.conn:pause(self.id, options.check("conn:pause", opts, "sbx:pause"))
end

--- Connects again (Connection:connect) with this handle's timeout unless given; this handle
--- forgets its execd endpoint (it is asked again) and takes `resumed`. Returns self.
--- Raises: as Connection:connect.
---@param opts? {timeout?: number}
---@return abx.OpenSandbox
function Sandbox:connect(opts)
  opts = options.check("conn:connect", opts, "sbx:connect")
  local fresh = self.conn:connect(self.id, { timeout = opts.timeout or self.timeout })
  self.timeout, self.resumed = fresh.timeout, fresh.resumed
  self._execd, self._endpoints = nil, nil
  return self
end

--- A copy of the handle with another execd token (`false`: none), for negative tests.
--- Raises: InvalidArgument (an unknown option).
---@param opts {access_token: string|boolean}
---@return abx.OpenSandbox
function Sandbox:with(opts)
  opts = options.check("sbx:with", opts)
  local c = setmetatable({}, Sandbox)
  for k, v in pairs(self) do c[k] = v end
  c._execd, c._endpoints = nil, nil
  c._token_override = opts.access_token
  return attach(c)
end

--- Resource metrics: execd's GET /metrics as one SandboxMetric (abx.client.opensandbox_execd
--- metrics: no history, so start/end do not select; no disk figures).
--- Raises: InvalidArgument (an unknown option), SandboxNotFound, Authentication, Sandbox, Protocol.
---@param opts? {start?: number, ["end"]?: number}
---@return table[]
function Sandbox:get_metrics(opts)
  options.check("sbx:get_metrics", opts)
  return execd.metrics(self)
end

--- The code interpreter through execd's /code routes (abx.client.opensandbox_code: the mapping,
--- options and shapes of abx.client.code). restart_code_context raises Skipped.
--- Raises: as abx.client.opensandbox_code.
function Sandbox:run_code(src, opts) return code.run(self, src, opts) end
function Sandbox:create_code_context(opts) return code.create_context(self, opts) end
function Sandbox:list_code_contexts(opts) return code.list_contexts(self, opts) end
function Sandbox:restart_code_context() code.restart_context(self) end
function Sandbox:remove_code_context(ctx, opts) return code.remove_context(self, ctx, opts) end

--- A client for the agent-sandbox-server in this sandbox (abx.client.server: its options,
--- shapes and errors): its requests go through the port's endpoint (Sandbox._port_request), its
--- token is read from the server's token file through execd. Nothing is sent until a method is
--- called. Raises: InvalidArgument (bad options).
---@param opts? table sbx:server's options
---@return abx.AgentServer
function Sandbox:server(opts) return require("abx.client.server").new(self, opts) end

function Sandbox:envd_request() wire.skip(self.conn.provider_name, "sbx:envd_request") end

--- Replaces the outbound rules (abx.client.opensandbox_egress update).
--- Raises: InvalidArgument, SandboxNotFound, Authentication, Protocol, Transport.
---@param opts? {allow_out?: string[], deny_out?: string[], allow_internet_access?: boolean}
function Sandbox:update_network(opts)
  egress.update(self, opts)
end

--- Extends the expiry to now + `duration` seconds, never shortening it (Connection:_refresh).
--- Raises: SandboxNotFound, InvalidArgument, Authentication, Protocol.
---@param duration? number seconds (default 300, E2B's)
function Sandbox:refresh(duration)
  self.conn:_refresh(self.id, duration or 300)
end

--- Snapshots this sandbox (abx.client.opensandbox_snapshot create): a SnapshotInfo.
--- Raises: SandboxNotFound, Conflict, InvalidArgument, Sandbox, Timeout, Protocol.
---@param opts? {name?: string}
---@return {snapshot_id: string, names: string[]}
function Sandbox:create_snapshot(opts)
  return require("abx.client.opensandbox_snapshot").create(self, opts)
end

return M