-- abx.client.opensandbox: the OpenSandbox adapter's control plane: its /v1 lifecycle API mapped
-- onto the Connection and Sandbox objects of the E2B client (abx.client.sandbox), so scenarios do
-- not change. The Sandbox is abx.client.opensandbox_object; processes and files go through execd
-- (abx.client.opensandbox_execd, abx.client.opensandbox_files).
--
--   local opensandbox = require("abx.client.opensandbox")
--   local conn = opensandbox.connection{ api_url = "http://127.0.0.1:8080/v1", api_key = "...",
--     auth_header = "OPEN-SANDBOX-API-KEY", create = { mode = "poll", deadline = 120, interval = 0.2 },
--     ttl = { mode = "expires_at", min = 60 }, pagination = "page" }
--   local sbx = conn:create{ template = "base", timeout = 300 }
--   sbx.commands:run("echo hi"); sbx.files:write("/tmp/a", "x"); sbx:kill()
--
-- The mapping (sandbox-lifecycle.yml):
--   conn:create      POST /sandboxes (202 + Pending) {image.uri = template, timeout, env, metadata,
--                    secureAccess when secure = true}, then GET /sandboxes/{id} every create.interval s until
--                    Running (Failed/Terminated: Sandbox error with the status reason), at most
--                    create.deadline s (Timeout), then execd's GET /ping until it answers.
--   conn:get_info    GET /sandboxes/{id} -> SandboxInfo (state lower-cased).
--   conn:list_page   GET /sandboxes?metadata&state&page&pageSize (abx.client.semantics page style).
--   conn:kill        DELETE /sandboxes/{id}: 204 true, 404 false.
--   conn:pause       POST /sandboxes/{id}/pause (202), then polled until Paused; 409 when it is
--                    already paused: false.
--   conn:resume      POST /sandboxes/{id}/resume (202), then polled until Running.
--   conn:connect     resumes a paused sandbox (resumed = true); a running one gets its expiry moved
--                    to now + timeout when that is later (E2B's connect never shortens a TTL).
--   sbx:set_timeout  POST /sandboxes/{id}/renew-expiration {expiresAt = now + s, RFC 3339 UTC}.
--   sbx:port_url, sbx:http   GET /sandboxes/{id}/endpoints/{port} (the endpoint with the API URL's
--                    scheme when it has none, and its headers).
--   sbx:get_metrics  execd's GET /metrics (abx.client.opensandbox_execd metrics).
--   sbx:run_code and the code contexts   execd's /code routes (abx.client.opensandbox_code).
--   sbx:refresh      renew-expiration to now + s only when that is later (GET, then renew: E2B's
--                    refresh never shortens).
--   snapshots        abx.client.opensandbox_snapshot (a template that is a snapshot id is sent as
--                    snapshotId; 404 SNAPSHOT::NOT_FOUND is NotFound as a missing template is).
--   network          abx.client.opensandbox_egress (create's networkPolicy; update_network and
--                    get_info's rules through the egress sidecar's /policy on port 18080).
--   Anything else (volumes, pty, watch, restarting a code context, the agent server, host
--   names) raises Skipped "provider <name> (opensandbox) has no equivalent of <primitive>:
--   missing capability".
-- api_url: the lifecycle API's base including /v1 (the spec's server URL, config/abxlua.yaml).
-- Units: seconds. Errors: ErrorResponse {code, message} -> abx kinds (abx.client.opensandbox_wire:
-- 401/403 Authentication, 404 SandboxNotFound on sandbox routes, 400 InvalidArgument, 409
-- Conflict, ...); an answer of another shape is Protocol.

local core = require("abx.core")
local errmap = require("abx.client.errmap")
local envd = require("abx.client.envd")
local options = require("abx.client.options")
local pages = require("abx.client.pages")
local semantics = require("abx.client.semantics")
local sandbox = require("abx.client.sandbox") -- its Connection:_call (retries, auth header)
local wire = require("abx.client.opensandbox_wire")
local execd = require("abx.client.opensandbox_execd")
local object = require("abx.client.opensandbox_object")
local snapshots = require("abx.client.opensandbox_snapshot")
local egress = require("abx.client.opensandbox_egress")

local M = {}

local CONNECTION_FIELDS = {
  { "api_url", "string", "the lifecycle API's base URL, including /v1 (required)" },
  { "api_key", "string|boolean", "the API key; false sends none (negative tests)" },
  { "auth_header", "string", "the header the key goes in (default OPEN-SANDBOX-API-KEY)" },
  { "request_timeout", "number", "seconds per request (default 60)" },
  { "default_metadata", "table<string,string>", "metadata every create adds (e2e: the run tag)" },
  { "hooks", "table", "as sandbox.connection's: before_create, created, create_failed, killed, gone" },
  { "ttl", "table", "{mode = \"expires_at\", min?, max?, where?}: bounds checked before create and "
    .. "set_timeout (OpenSandbox: min 60)" },
  { "pagination", "string", "\"page\" (page + pageSize; the only style OpenSandbox speaks)" },
  { "create", "table", "{mode = \"poll\", deadline = s, interval = s}: how long create, resume and "
    .. "pause wait for the state (default deadline 120, interval 0.2: the OpenSandbox SDK's "
    .. "healthCheckPollingInterval)" },
  { "provider_name", "string", "the provider's name, in Skipped messages (default opensandbox)" },
  -- accepted so the E2B provider options can be handed over unchanged; OpenSandbox routes through
  -- endpoints, so these are not used
  { "domain", "string", "not used (endpoints name their host)" },
  { "envd_routing", "string", "not used (endpoints name their host)" },
  { "envd_url", "string", "not used (endpoints name their host)" },
  { "v2_routes", "boolean", "must not be true (OpenSandbox has no E2B routes)" },
}
local CONNECTION = options.define("opensandbox.connection", "Opens a connection to an OpenSandbox "
  .. "lifecycle API (also the keys conn:with may replace).", CONNECTION_FIELDS)
-- the object's fields: the option `create` is kept as `create_mode` (conn:create is the method)
local OBJECT_FIELDS = {}
for _, f in ipairs(CONNECTION_FIELDS) do
  OBJECT_FIELDS[#OBJECT_FIELDS + 1] = f[1] == "create" and { "create_mode", f[2], f[3] } or f
end

---@class abx.OpenSandboxConnection
local Connection = {}
options.class(Connection, "OpenSandboxConnection", "An OpenSandbox control plane (ctx.conn with a "
  .. "protocol: opensandbox provider).", OBJECT_FIELDS, {
    { "with(overrides)", "a copy with some fields replaced (options: opensandbox.connection)" },
    { "create(opts)", "creates a sandbox and waits until Running (options: conn:create): Sandbox" },
    { "connect(id, opts)", "resumes or extends a sandbox: Sandbox (resumed set)" },
    { "resume(id, opts)", "resumes a paused sandbox: Sandbox" },
    { "pause(id, opts)", "pauses and waits until Paused: true, false when already paused" },
    { "get_info(id)", "SandboxInfo" },
    { "list_page(opts)", "one page: SandboxInfo[], next token" },
    { "list(opts)", "every matching sandbox: SandboxInfo[]" },
    { "kill(id)", "kills: true, false when already gone" },
    { "endpoint(id, port)", "a port's endpoint: base URL and headers" },
    { "list_snapshots(opts)", "Skipped: no equivalent" },
    { "list_snapshots_page(opts)", "Skipped: no equivalent" },
    { "delete_snapshot(id)", "Skipped: no equivalent" },
    { "create_volume(name)", "Skipped: no equivalent" },
    { "list_volumes()", "Skipped: no equivalent" },
    { "get_volume(id)", "Skipped: no equivalent" },
    { "delete_volume(id)", "Skipped: no equivalent" },
  })
M.Connection = Connection

-- The poll interval, seconds: the official SDK's healthCheckPollingInterval, 200 ms
-- (sdks/sandbox/javascript/README.md @ 3bb6fad3, opensandbox-group/OpenSandbox).
local POLL_INTERVAL = 0.2

local function check_create_mode(c, where)
  if c == nil then return { deadline = 120, interval = POLL_INTERVAL } end
  if c.mode ~= nil and c.mode ~= "poll" then
    errmap.raise("InvalidArgument", 0, where .. ": create.mode must be poll (OpenSandbox answers "
      .. "create with 202 and the client polls), got " .. tostring(c.mode))
  end
  local d, i = c.deadline or 120, c.interval or POLL_INTERVAL
  if type(d) ~= "number" or d <= 0 or type(i) ~= "number" or i <= 0 then
    errmap.raise("InvalidArgument", 0, where .. ": create.deadline and create.interval must be "
      .. "positive numbers of seconds")
  end
  return { mode = "poll", deadline = d, interval = i }
end

--- Opens a connection to an OpenSandbox lifecycle API. Takes the opts shape of
--- sandbox.connection (plus `create` and `provider_name`). `api_key = false` sends no key.
--- Raises: InvalidArgument (missing api_url, ttl.mode other than expires_at, pagination other
--- than page, create.mode other than poll, v2_routes = true, an unknown option).
---@param o table
---@return abx.OpenSandboxConnection
function M.connection(o)
  if o ~= nil then options.check(CONNECTION, o) end
  if type(o) ~= "table" or type(o.api_url) ~= "string" then
    errmap.raise("InvalidArgument", 0, "opensandbox.connection: api_url is required")
  end
  if o.ttl ~= nil and o.ttl.mode ~= nil and o.ttl.mode ~= "expires_at" then
    errmap.raise("InvalidArgument", 0, "opensandbox.connection: ttl.mode must be expires_at "
      .. "(renew-expiration takes an absolute expiresAt), got " .. tostring(o.ttl.mode))
  end
  if o.pagination ~= nil and o.pagination ~= "page" then
    errmap.raise("InvalidArgument", 0, "opensandbox.connection: pagination must be page (page + "
      .. "pageSize), got " .. tostring(o.pagination))
  end
  if o.v2_routes then
    errmap.raise("InvalidArgument", 0, "opensandbox.connection: v2_routes is E2B's; OpenSandbox "
      .. "has its own /v1 routes")
  end
  if o.api_key then core.add_secret(o.api_key) end
  return setmetatable({
    api_url = (o.api_url:gsub("/+$", "")),
    api_key = o.api_key or false,
    auth_header = o.auth_header or "OPEN-SANDBOX-API-KEY",
    request_timeout = o.request_timeout or 60,
    default_metadata = o.default_metadata or {},
    hooks = o.hooks or {},
    ttl = o.ttl,
    pagination = "page",
    create_mode = check_create_mode(o.create, "opensandbox.connection"),
    provider_name = o.provider_name or "opensandbox",
    domain = o.domain, envd_routing = o.envd_routing, envd_url = o.envd_url, v2_routes = false,
  }, Connection)
end

--- A copy of the connection with some fields replaced (`api_key = false`: send no key).
--- Raises: InvalidArgument (an unknown option).
---@param overrides table
---@return abx.OpenSandboxConnection
function Connection:with(overrides)
  options.check(CONNECTION, overrides, "conn:with")
  local c = setmetatable({}, Connection)
  for k, v in pairs(self) do c[k] = v end
  for k, v in pairs(overrides) do
    if k == "create" then c.create_mode = check_create_mode(v, "conn:with") else c[k] = v end
  end
  if c.api_key then core.add_secret(c.api_key) end
  return c
end

--- One request (sandbox.Connection._call: the key in auth_header, retries when `retry`).
--- Raises: Transport, Timeout, Protocol.
function Connection:_call(method, path, query, body, retry)
  return sandbox.Connection._call(self, method, path, query, body, retry)
end

--- Raises Skipped for a primitive with no equivalent.
function Connection:_skip(primitive)
  wire.skip(self.provider_name, primitive)
end

local function sandbox_path(id, rest)
  if type(id) ~= "string" or id == "" then
    errmap.raise("InvalidArgument", 0, "a sandbox id must be a non-empty string, got " .. tostring(id))
  end
  return "/sandboxes/" .. envd.quote(id) .. (rest or "")
end

function Connection:_gone_if_404(resp, id)
  if resp.status == 404 and self.hooks.gone then self.hooks.gone(id) end
end

--- GET /sandboxes/{id}: the decoded Sandbox. Raises: SandboxNotFound (404) and the mapped kinds.
function Connection:_get(id)
  local resp, request = self:_call("GET", sandbox_path(id), nil, nil, true)
  if resp.status ~= 200 then
    self:_gone_if_404(resp, id)
    wire.raise_error(resp, request, "SandboxNotFound")
  end
  local d = errmap.decode_ok(resp, request)
  if type(d.id) ~= "string" then errmap.raise_protocol(resp.status, request, "a Sandbox with id") end
  wire.state_of(d, resp.status, request)
  return d, request
end

--- Polls GET /sandboxes/{id} every create.interval s until its state is `want`; returns the
--- Sandbox. Raises: Sandbox (Failed, Terminated or Stopping: the status reason and message),
--- Timeout (still not `want` after create.deadline s), and what _get raises.
---@param id string
---@param want string a SandboxState
---@param what string the call, for messages
---@return table
function Connection:_wait_state(id, want, what)
  local deadline = core.now() + self.create_mode.deadline
  while true do
    local d, request = self:_get(id)
    local state, reason, message = wire.state_of(d, 200, request)
    if state == want then return d end
    if wire.is_final(state) then
      errmap.raise("Sandbox", 0, string.format("%s: sandbox %s is %s (reason: %s%s) instead of %s",
        what, id, state, reason or "none", message and ("; " .. message) or "", want),
        { request = request, code = reason })
    end
    if core.now() + self.create_mode.interval > deadline then
      errmap.raise("Timeout", 0, string.format("%s: sandbox %s is still %s after %g s (create.deadline), "
        .. "waiting for %s", what, id, state, self.create_mode.deadline, want), { request = request })
    end
    core.sleep(self.create_mode.interval)
  end
end

local function copy(t)
  local c = {}
  for k, v in pairs(t or {}) do c[k] = v end
  return c
end

-- conn:create options OpenSandbox has an equivalent of (the rest raise Skipped when given)
local CREATE_MAPPED = { template = true, timeout = true, metadata = true, envs = true, secure = true,
  network = true, allow_internet_access = true }

--- Creates a sandbox: POST /sandboxes (202, Pending), polled until Running, then execd answers
--- /ping (see the file header). Options are conn:create's (abx.client.sandbox); `template` is the
--- image URI (default "base"), `timeout` the TTL in seconds (default 300, the provider's bounds
--- checked first), `secure = true` asks for secureAccess (execd then needs the endpoint's
--- X-EXECD-ACCESS-TOKEN). Unlike the E2B client the default is unsecured: OpenSandbox's own
--- default, and its Docker runtime refuses secureAccess with 400. Hooks as
--- sandbox's Connection:create. A sandbox that failed to start is killed before the error.
--- Raises: Skipped (auto_pause, auto_resume, network, volume_mounts, ...: no equivalent),
--- NotFound (an error code ending in IMAGE_PULL_FAILED: the server's
--- DOCKER::SANDBOX_IMAGE_PULL_FAILED, server/opensandbox_server/services/constants.py: the image,
--- i.e. the template, is not there), InvalidArgument (400, bounds), Authentication, Conflict,
--- Sandbox (Failed/Terminated), Timeout, Protocol, Transport.
---@param opts? table
---@return table Sandbox
function Connection:create(opts)
  opts = options.check("conn:create", opts)
  for k in pairs(opts) do
    if not CREATE_MAPPED[k] then self:_skip("conn:create option " .. k) end
  end
  local timeout = semantics.check_ttl(self.ttl, opts.timeout or 300, "conn:create")
  local md = copy(opts.metadata)
  for k, v in pairs(self.default_metadata) do
    if k == "e2e" or md[k] == nil then md[k] = v end
  end
  local body = wire.create_body({ template = opts.template or "base", timeout = timeout,
    envs = opts.envs, metadata = md, secure = opts.secure == true })
  if opts.network ~= nil or opts.allow_internet_access ~= nil then -- the egress sidecar's policy
    local n = opts.network or {}
    for k in pairs(n) do
      if k ~= "allow_out" and k ~= "deny_out" then self:_skip("conn:create option network." .. k) end
    end
    body.networkPolicy = egress.policy(n.allow_out, n.deny_out, opts.allow_internet_access)
  end
  if snapshots.is_snapshot_id(body.image.uri) then -- a snapshot id: restore it (snapshotId)
    body.snapshotId, body.image = body.image.uri, nil
  end
  if self.hooks.before_create then self.hooks.before_create(opts) end
  local created_id
  local ok, sbx = pcall(function()
    -- not retried: a create is not idempotent (a lost answer would leak a sandbox)
    local resp, request = self:_call("POST", "/sandboxes", nil, body, false)
    if resp.status ~= 202 and resp.status ~= 200 and resp.status ~= 201 then
      -- an image that cannot be pulled is a template the provider does not have (E2B's 404)
      local obj = errmap.decode_object(resp.body)
      local code = obj and type(obj.code) == "string" and obj.code or ""
      if code:match("IMAGE_PULL_FAILED$") or code == "SNAPSHOT::NOT_FOUND" then
        errmap.raise("NotFound", resp.status, type(obj.message) == "string" and obj.message
          or code, { request = request, code = code })
      end
      wire.raise_error(resp, request)
    end
    local d = errmap.decode_ok(resp, request)
    if type(d.id) ~= "string" or d.id == "" then
      errmap.raise_protocol(resp.status, request, "a CreateSandboxResponse with id")
    end
    wire.state_of(d, resp.status, request)
    created_id = d.id
    local s = self:_wait_state(d.id, "Running", "conn:create")
    local obj = M.new_sandbox(self, s, timeout, body.secureAccess == true)
    execd.wait_ready(obj, self.create_mode.deadline, self.create_mode.interval)
    return obj
  end)
  if not ok then
    if created_id then pcall(self.kill, self, created_id) end -- never leak a half-made sandbox
    if self.hooks.create_failed then self.hooks.create_failed(opts) end
    error(sbx, 0)
  end
  if self.hooks.created then self.hooks.created(sbx, opts) end
  return sbx
end

--- Details of a sandbox: GET /sandboxes/{id} -> SandboxInfo.
--- Raises: SandboxNotFound (404), Authentication, Sandbox, Protocol, Transport, Timeout.
---@param id string
---@return table
function Connection:get_info(id)
  local d, request = self:_get(id)
  return wire.info_of(d, 200, request)
end

--- Moves the expiry to now + `seconds`: POST /sandboxes/{id}/renew-expiration {expiresAt}
--- (200 {expiresAt}). Returns the new expiresAt.
--- Raises: InvalidArgument (bounds; 400, e.g. not after the current expiry), SandboxNotFound,
--- Conflict, Authentication, Protocol.
function Connection:_renew(id, seconds, what)
  local t = semantics.check_ttl(self.ttl, seconds, what)
  local resp, request = self:_call("POST", sandbox_path(id, "/renew-expiration"), nil,
    { expiresAt = semantics.expires_at(core.time(), t) }, true)
  if resp.status ~= 200 then
    self:_gone_if_404(resp, id)
    wire.raise_error(resp, request, "SandboxNotFound")
  end
  local d = errmap.decode_ok(resp, request)
  if type(d.expiresAt) ~= "string" then
    errmap.raise_protocol(resp.status, request, "a RenewSandboxExpirationResponse with expiresAt")
  end
  return d.expiresAt, t
end

--- Pauses a sandbox: POST /sandboxes/{id}/pause (202), then polled until Paused. false when it
--- was already paused (409 while Paused). `memory` has no equivalent (Skipped when given).
--- Raises: Skipped, SandboxNotFound (404), Conflict (409 in another state), Sandbox, Timeout.
---@param id string
---@param opts? {memory?: boolean}
---@return boolean
function Connection:pause(id, opts)
  opts = options.check("conn:pause", opts)
  if opts.memory ~= nil then self:_skip("conn:pause memory") end
  local resp, request = self:_call("POST", sandbox_path(id, "/pause"), nil, nil, false)
  if resp.status == 409 then
    local d = self:_get(id)
    if d.status.state == "Paused" then return false end
    wire.raise_error(resp, request)
  end
  if resp.status ~= 202 and resp.status ~= 200 and resp.status ~= 204 then
    self:_gone_if_404(resp, id)
    wire.raise_error(resp, request, "SandboxNotFound")
  end
  self:_wait_state(id, "Paused", "conn:pause")
  return true
end

local function resume_and_wait(conn, id, what)
  local resp, request = conn:_call("POST", sandbox_path(id, "/resume"), nil, nil, false)
  if resp.status ~= 202 and resp.status ~= 200 and resp.status ~= 204 then
    conn:_gone_if_404(resp, id)
    wire.raise_error(resp, request, "SandboxNotFound")
  end
  return conn:_wait_state(id, "Running", what)
end

--- Moves a sandbox's expiry to now + `seconds` when that is later than its current one.
--- renew-expiration only moves it later (the spec: "after the current expiresAt"), so a later
--- current expiry is kept; no expiresAt (manual cleanup) is left alone.
--- Raises: as Connection:_renew.
local function renew_if_later(conn, id, d, seconds, what)
  local cur = type(d.expiresAt) == "string" and semantics.parse_rfc3339(d.expiresAt) or nil
  -- compared with the whole second _renew sends (semantics.expires_at), so an expiry equal to it
  -- (the server's 400 "not after the current expiresAt") is never asked for
  if cur and cur < math.floor(core.time() + math.ceil(seconds)) then conn:_renew(id, seconds, what) end
end

--- E2B's refresh on renew-expiration: GET the sandbox, then renew to now + `seconds` only when
--- that is later (never shortens, as E2B's POST /sandboxes/{id}/refreshes).
--- Raises: SandboxNotFound (404), InvalidArgument, Conflict, Authentication, Protocol.
---@param id string
---@param seconds number
function Connection:_refresh(id, seconds)
  if type(seconds) ~= "number" or seconds <= 0 then
    errmap.raise("InvalidArgument", 0, "sbx:refresh: duration must be a positive number of seconds, "
      .. "got " .. tostring(seconds))
  end
  local d = self:_get(id)
  renew_if_later(self, id, d, seconds, "sbx:refresh")
end

--- Resumes a paused sandbox: POST /sandboxes/{id}/resume (202), polled until Running, then the
--- expiry is moved to now + timeout (default 300 s) when that is later than its current one.
--- `resumed = true`.
--- Raises: Conflict (409: not paused), SandboxNotFound, Sandbox, Timeout, and as _renew.
---@param id string
---@param opts? {timeout?: number}
---@return table Sandbox
function Connection:resume(id, opts)
  opts = options.check("conn:connect", opts, "conn:resume")
  if opts.memory ~= nil then self:_skip("conn:resume memory") end
  local seconds = opts.timeout or 300
  semantics.check_ttl(self.ttl, seconds, "conn:resume")
  local d = resume_and_wait(self, id, "conn:resume")
  renew_if_later(self, id, d, seconds, "conn:resume")
  local sbx = M.new_sandbox(self, d, math.ceil(seconds), nil)
  sbx.resumed = true
  return sbx
end

--- Connects to a sandbox: a paused (or pausing) one is resumed (`resumed = true`); then its
--- expiry is moved to now + timeout (default 300 s) when that is later than its current one
--- (renew-expiration cannot move it earlier; E2B's connect of a running sandbox only extends
--- too). Pending or Resuming sandboxes are waited for.
--- Raises: SandboxNotFound (404), Sandbox (Failed/Terminated), Timeout, and as _renew.
---@param id string
---@param opts? {timeout?: number}
---@return table Sandbox
function Connection:connect(id, opts)
  opts = options.check("conn:connect", opts)
  if opts.memory ~= nil then self:_skip("conn:connect memory") end
  local seconds = opts.timeout or 300
  semantics.check_ttl(self.ttl, seconds, "conn:connect")
  local d = self:_get(id)
  local state = d.status.state
  local resumed = false
  if state == "Pausing" then
    self:_wait_state(id, "Paused", "conn:connect")
    state = "Paused"
  end
  if state == "Paused" then
    d = resume_and_wait(self, id, "conn:connect")
    resumed = true
  elseif state ~= "Running" then
    d = self:_wait_state(id, "Running", "conn:connect")
  end
  renew_if_later(self, id, d, seconds, "conn:connect")
  local sbx = M.new_sandbox(self, d, math.ceil(seconds), nil)
  sbx.resumed = resumed
  return sbx
end

--- One page of GET /sandboxes (page + pageSize; `next_token` is the page number as a string,
--- semantics.page_query). `state` values are E2B's lower-case ("running", "paused") or
--- OpenSandbox's states; sent as repeated `state` parameters with OpenSandbox's spelling;
--- none given: Running and Paused (E2B's default list).
--- Raises: InvalidArgument (400, a bad page token or state), Authentication, Protocol.
---@param opts? {metadata?: table, state?: string[], limit?: integer, next_token?: string}
---@return table[] items, string|nil next_token
function Connection:list_page(opts)
  opts = options.check("conn:list_page", opts)
  local q = {}
  if opts.metadata and next(opts.metadata) then
    q[#q + 1] = { "metadata", wire.metadata_filter(opts.metadata, envd.quote) }
  end
  -- no state asked: E2B's list (running and paused, reference §3.4), so a scenario sees the
  -- same set on both wires; a starting (Pending) or dying sandbox is asked for by its state
  local states = opts.state
  if not states or #states == 0 then states = { "Running", "Paused" } end
  for _, s in ipairs(states) do
    local spelled
    for _, known in ipairs(wire.STATES) do
      if known:lower() == tostring(s):lower() then spelled = known end
    end
    if not spelled then
      errmap.raise("InvalidArgument", 0, "conn:list_page: state must be one of "
        .. table.concat(wire.STATES, ", ") .. " (any case), got " .. tostring(s))
    end
    q[#q + 1] = { "state", spelled }
  end
  for _, kv in ipairs(semantics.page_query("page", opts.limit, opts.next_token)) do q[#q + 1] = kv end
  local resp, request = self:_call("GET", "/sandboxes", envd.query(q), nil, true)
  if resp.status ~= 200 then wire.raise_error(resp, request) end
  local body = errmap.decode_ok(resp, request)
  local items = wire.list_items(body, resp.status, request)
  return items, semantics.next_token("page", resp.headers, body)
end

--- Every sandbox matching the filters, page after page until hasNextPage is false.
--- Raises: as list_page.
---@param opts? {metadata?: table, state?: string[], limit?: integer}
---@return table[]
function Connection:list(opts)
  opts = copy(options.check("conn:list", opts))
  return pages.follow("GET /sandboxes", "page", function(token)
    opts.next_token = token
    return self:list_page(opts)
  end, function(info) return info.sandbox_id end)
end

--- Kills a sandbox: DELETE /sandboxes/{id}. true on 204/200, false on 404; hooks.killed(id) in
--- both cases. Raises: Authentication, Conflict, Sandbox, Protocol, Transport, Timeout.
---@param id string
---@return boolean
function Connection:kill(id)
  local resp, request = self:_call("DELETE", sandbox_path(id), nil, nil, true)
  if resp.status ~= 204 and resp.status ~= 200 and resp.status ~= 404 then
    wire.raise_error(resp, request)
  end
  if self.hooks.killed then self.hooks.killed(id) end
  return resp.status ~= 404
end

--- Snapshots (abx.client.opensandbox_snapshot): GET /snapshots, DELETE /snapshots/{id}.
--- Raises: as opensandbox_snapshot's list, list_page and delete.
function Connection:list_snapshots(opts) return snapshots.list(self, opts) end
function Connection:list_snapshots_page(opts) return snapshots.list_page(self, opts) end
function Connection:delete_snapshot(id) return snapshots.delete(self, id) end
function Connection:create_volume() self:_skip("conn:create_volume") end
function Connection:list_volumes() self:_skip("conn:list_volumes") end
function Connection:get_volume() self:_skip("conn:get_volume") end
function Connection:delete_volume() self:_skip("conn:delete_volume") end

--- The endpoint of `port`: GET /sandboxes/{id}/endpoints/{port} -> base URL and headers
--- (abx.client.opensandbox_wire.endpoint_url).
--- Raises: InvalidArgument (bad port), SandboxNotFound (404), Authentication, Protocol.
---@param id string
---@param port integer
---@return string url, table<string,string> headers
function Connection:endpoint(id, port)
  if math.type(port) ~= "integer" or port < 1 or port > 65535 then
    errmap.raise("InvalidArgument", 0, "port must be an integer 1..65535, got " .. tostring(port))
  end
  local resp, request = self:_call("GET", sandbox_path(id, "/endpoints/" .. port), nil, nil, true)
  if resp.status ~= 200 then
    self:_gone_if_404(resp, id)
    wire.raise_error(resp, request, "SandboxNotFound")
  end
  return wire.endpoint_url(self.api_url, errmap.decode_ok(resp, request), resp.status, request)
end

-- The Sandbox of these connections (abx.client.opensandbox_object).
M.Sandbox = object.Sandbox
M.new_sandbox = object.new

return M
