-- abx.client.sandbox: the E2B control plane (REST): sandbox.connection and the Connection object. The
-- Sandbox object its calls return is abx.client.sandbox_object (sandbox.Sandbox).
--
--   local sandbox = require("abx.client.sandbox")
--   local conn = sandbox.connection{ api_url = "http://127.0.0.1:PORT", api_key = "e2b_...",
--     domain = "localhost", envd_routing = "headers" | "host", envd_url = nil (default api_url),
--     request_timeout = 60, hooks = { before_create = fn(opts), created = fn(sbx), killed = fn(id) },
--     default_metadata = { e2e = "<run id>" } }
--   local sbx = conn:create{ template = "base", timeout = 300 }
--   sbx.commands:run("echo hi"); sbx.files:write("/tmp/a", "x"); sbx:kill()
--
-- Lifecycle: sbx:pause() / conn:connect(id) (sbx.resumed) / conn:resume(id) / sbx:refresh(s) /
--            sbx:set_timeout(s) / sbx:get_metrics() / sbx:update_network{...}.
-- Ports:     sbx:get_host(port), sbx:port_url(port), sbx:http(port, {...}) (abx.client.http).
-- Code:      sbx:run_code(src, {...}), sbx:create_code_context{...}, list_code_contexts,
--            restart_code_context, remove_code_context (abx.client.code, port 49999).
-- Snapshots: sbx:create_snapshot{name}, conn:list_snapshots{...}, conn:delete_snapshot(id) are
--            abx.client.snapshot; restore is conn:create{ template = snapshot_id }.
-- Volumes:   conn:create_volume(name), conn:list_volumes(), conn:get_volume(id),
--            conn:delete_volume(id) are abx.client.volume; mount with create{ volume_mounts = {...} }.
-- API keys:  conn:create_api_key{name}, conn:list_api_keys(), conn:rename_api_key(id, name),
--            conn:delete_api_key(id) are abx.client.apikey (they take conn.access_token).
--
-- Units:  seconds (numbers) for every timeout; times from the API (started_at, end_at) are the RFC 3339
--         strings it sent; sandbox.parse_time turns one into Unix seconds.
-- Errors: abx.error tables via abx.client.errmap; `request` is "METHOD path", never headers or keys.
-- Source: docs/protocol/e2b-control-plane.md §1.2 (X-API-Key), §2 (errors, pagination), §3 (sandbox
--         routes and schemas), §6.1 (error mapping), §7 (reaching envd).

local core = require("abx.core")
local errmap = require("abx.client.errmap")
local envd = require("abx.client.envd")
local snapshot = require("abx.client.snapshot")
local volume = require("abx.client.volume")
local apikey = require("abx.client.apikey")
local wire = require("abx.client.sandbox_wire")
local semantics = require("abx.client.semantics")
local options = require("abx.client.options")
local object = require("abx.client.sandbox_object")
local api_call = require("abx.client.api_call")
local pages = require("abx.client.pages")

local sandbox = {}

--- The Sandbox class (abx.client.sandbox_object), for code that checks what a handle is.
sandbox.Sandbox = object.Sandbox

-- Options of every call that takes a table (abx.client.options: unknown keys and wrong types raise
-- InvalidArgument naming the call), and the fields of what they return.
local CONNECTION_FIELDS = {
  { "api_url", "string", "the control plane's base URL (required)" },
  { "api_key", "string|boolean", "X-API-Key; false sends none (negative tests)" },
  { "domain", "string", "sandbox domain when an answer names none (default e2b.app)" },
  { "envd_routing", "string", "\"headers\" (E2b-Sandbox-* on envd_url), \"host\" (<port>-<id>.<domain>) "
    .. "or \"path\" (<domain>/kruise/<id>/<port>, ACS)" },
  { "auth_header", "string", "the header the API key goes in (default X-API-Key)" },
  { "ttl", "table", "{mode = \"lifetime\", min?, max?, where?}: the provider's TTL bounds, checked "
    .. "before create, connect, resume and set_timeout (abx.client.semantics.check_ttl)" },
  { "pagination", "string", "\"cursor\" (limit + nextToken, X-Next-Token; default) or \"page\" "
    .. "(page + pageSize, body pagination.hasNextPage)" },
  { "envd_url", "string", "the fixed sandbox URL of \"headers\" routing (default api_url)" },
  { "request_timeout", "number", "seconds per control-plane or envd request (default 60)" },
  { "create_timeout", "number", "seconds a create, connect or resume request may take, when "
    .. "more than request_timeout (a local platform answers once the template's start_cmd and "
    .. "ready_cmd are done, within its ready_timeout; default: request_timeout)" },
  { "hooks", "table", "{before_create(opts) (may return metadata to add), created(sbx, opts), "
    .. "create_failed(opts), killed(id), gone(id) (a 404 for it), snapshot_created(info), "
    .. "snapshot_deleted(id), volume_created(info), volume_deleted(id), api_key_created(info), "
    .. "api_key_deleted(id)}" },
  { "default_metadata", "table<string,string>", "metadata every create adds (e2e: the run tag)" },
  { "v2_routes", "boolean", "create and connect through POST /v2/sandboxes and "
    .. "/v2/sandboxes/{id}/connect (the provider's v2_routes capability; default false: v1)" },
  { "config_entry", "string", "the config entry the connection's settings come from "
    .. "(\"providers.<name>\"), named where an error says which setting to change" },
  { "kind", "string", "the provider's kind as abx.run.provider opened it: \"local\" (the embedded "
    .. "platform) or \"remote\" (default: nil, unknown)" },
  { "access_token", "string|boolean", "the admin credential of the API-key routes (Authorization: "
    .. "Bearer; abx.client.apikey); false or absent: none" },
  { "team_id", "string", "X-Team-ID sent with the access token (E2B's AuthProviderTeamAuth)" },
  { "ca_file", "string", "the CA bundle (PEM) the run's HTTPS transfers trust, when not the "
    .. "system's (informational: core.set_ca_file applies it; a child run is given it)" },
}
local CONNECTION = options.define("sandbox.connection", "Opens a connection to a control plane "
  .. "(also the keys conn:with may replace).", CONNECTION_FIELDS)
local NETWORK = options.define("conn:create network", "The `network` option of conn:create "
  .. "(NewSandbox.network).", {
    { "allow_public_traffic", "boolean", "false: ports need the traffic token (needs secure)" },
    { "allow_out", "string[]", "outbound destinations allowed (CIDR or host)" },
    { "deny_out", "string[]", "outbound destinations denied" },
    { "mask_request_host", "string", "Host the sandbox's servers see" },
  })
local VOLUME_MOUNT = options.define("conn:create volume_mounts[i]", "One entry of the "
  .. "`volume_mounts` option of conn:create.", {
    { "name", "string", "volume name (required)" },
    { "path", "string", "mount point in the sandbox (required)" },
    { "read_only", "boolean", "mount read-only (the local platform's extension)" },
  })
local CREATE = options.define("conn:create", "Creates a sandbox (POST /sandboxes): a Sandbox. "
  .. "ctx.sandbox_factory takes the same options.", {
    { "template", "string", "template id or alias, or a snapshot id (default \"base\")" },
    { "timeout", "number", "TTL, seconds (default 300)" },
    { "metadata", "table<string,string>", "metadata; the run tag e2e is always added" },
    { "envs", "table<string,string>", "environment of every process" },
    { "secure", "boolean", "envd needs the access token (default true)" },
    { "auto_pause", "boolean", "pause instead of kill when the TTL ends" },
    { "auto_pause_memory", "boolean", "false: the TTL's pause keeps only the filesystem (needs "
      .. "auto_pause)" },
    { "auto_resume", "boolean", "traffic to the paused sandbox resumes it" },
    { "allow_internet_access", "boolean", "false: no outbound traffic" },
    { "network", "table", "see conn:create network" },
    { "volume_mounts", "table", "see conn:create volume_mounts[i]" },
  })
local REATTACH = options.define("conn:connect", "Connects to a running or paused sandbox (POST "
  .. "/sandboxes/{id}/connect); also the options of conn:resume and sbx:connect.", {
    { "timeout", "number", "TTL from now, seconds (conn: 300; sbx:connect: the handle's timeout)" },
    { "memory", "boolean", "false: a paused sandbox comes back from its filesystem as a fresh boot "
      .. "(v2 connect only)" },
  })
local LIST_PAGE = options.define("conn:list_page", "One page of GET /v2/sandboxes: SandboxInfo[] "
  .. "and the next token.", {
    { "metadata", "table<string,string>", "only sandboxes with this metadata" },
    { "state", "string[]", "\"running\" and/or \"paused\" (default both)" },
    { "limit", "integer", "page size, 1..100" },
    { "next_token", "string", "the token of the previous page" },
  })
local LIST = options.define("conn:list", "Every sandbox matching the filters, following "
  .. "X-Next-Token: SandboxInfo[].", {
    { "metadata", "table<string,string>", "only sandboxes with this metadata" },
    { "state", "string[]", "\"running\" and/or \"paused\" (default both)" },
    { "limit", "integer", "page size, 1..100" },
  })
local PAUSE = options.define("conn:pause", "Pauses a sandbox: true, false when already paused "
  .. "(also the options of sbx:pause).", {
    { "memory", "boolean", "false: keep only the filesystem (sent only when given)" },
  })
---@class abx.Connection
---@field api_url string
---@field api_key string|false
---@field domain string
---@field envd_routing "headers"|"host"
---@field envd_url string
---@field request_timeout number
---@field hooks table
---@field default_metadata table<string,string>
local Connection = {}
options.class(Connection, "Connection", "A control plane (ctx.conn, sandbox.connection).",
  CONNECTION_FIELDS, {
    { "with(overrides)", "a copy with some fields replaced (options: sandbox.connection)" },
    { "create(opts)", "creates a sandbox (options: conn:create): Sandbox" },
    { "connect(id, opts)", "connects to or resumes a sandbox: Sandbox (resumed set)" },
    { "resume(id, opts)", "resumes through the deprecated route: Sandbox" },
    { "pause(id, opts)", "pauses: true, false when already paused" },
    { "get_info(id)", "details: SandboxInfo" },
    { "list_page(opts)", "one page: SandboxInfo[], next token" },
    { "list(opts)", "every matching sandbox: SandboxInfo[]" },
    { "kill(id)", "kills: true, false when already gone" },
    { "list_snapshots(opts)", "every snapshot: SnapshotInfo[]" },
    { "list_snapshots_page(opts)", "one page of snapshots" },
    { "delete_snapshot(id)", "true, false when it did not exist" },
    { "create_volume(name)", "VolumeInfo" },
    { "list_volumes()", "VolumeInfo[]" },
    { "get_volume(id)", "VolumeInfo" },
    { "delete_volume(id)", "true, false when it did not exist" },
    { "create_api_key(opts)", "a managed API key {name} (the access token's): CreatedApiKey" },
    { "list_api_keys()", "ApiKeyInfo[] (never a key's value)" },
    { "rename_api_key(id, name)", "true" },
    { "delete_api_key(id)", "true, false when it did not exist" },
  })

--- The Connection class, whose _call (retries, auth header) the OpenSandbox adapter shares.
sandbox.Connection = Connection

--- Creates a connection to a control plane. `api_key = false` sends no key (for negative tests).
--- Raises: InvalidArgument (missing api_url, bad routing).
---@param o table see the file header
---@return abx.Connection
function sandbox.connection(o)
  if o ~= nil then options.check(CONNECTION, o) end
  if type(o) ~= "table" or type(o.api_url) ~= "string" then
    errmap.raise("InvalidArgument", 0, "sandbox.connection: api_url is required")
  end
  local routing = o.envd_routing or "headers"
  if routing ~= "headers" and routing ~= "host" and routing ~= "path" then
    errmap.raise("InvalidArgument", 0, "envd_routing must be \"headers\", \"host\" or \"path\", got "
      .. tostring(routing))
  end
  if o.ttl ~= nil and o.ttl.mode ~= nil and o.ttl.mode ~= "lifetime" then
    -- every E2B route takes `timeout` seconds from now; an absolute expiry is OpenSandbox's
    -- renew-expiration (its adapter), not this client's
    errmap.raise("InvalidArgument", 0, "sandbox.connection: ttl.mode " .. tostring(o.ttl.mode)
      .. " is not spoken by the E2B client (lifetime only)")
  end
  if o.pagination ~= nil and o.pagination ~= "cursor" and o.pagination ~= "page" then
    errmap.raise("InvalidArgument", 0, "sandbox.connection: pagination must be cursor or page, got "
      .. tostring(o.pagination))
  end
  if o.api_key then core.add_secret(o.api_key) end
  if o.access_token then core.add_secret(o.access_token) end
  return setmetatable({
    api_url = (o.api_url:gsub("/+$", "")),
    api_key = o.api_key or false,
    domain = o.domain or "e2b.app",
    envd_routing = routing,
    envd_url = o.envd_url or o.api_url,
    request_timeout = o.request_timeout or 60,
    create_timeout = o.create_timeout or o.request_timeout or 60,
    hooks = o.hooks or {},
    default_metadata = o.default_metadata or {},
    v2_routes = o.v2_routes == true,
    auth_header = o.auth_header or "X-API-Key",
    ttl = o.ttl,
    pagination = o.pagination or "cursor",
    kind = o.kind,
    config_entry = o.config_entry,
    access_token = o.access_token or false,
    team_id = o.team_id,
    ca_file = o.ca_file,
  }, Connection)
end

--- A copy of the connection with some fields replaced (`api_key = false`: send no key).
--- Raises: nothing.
---@param overrides table
---@return abx.Connection
function Connection:with(overrides)
  options.check(CONNECTION, overrides, "conn:with")
  local c = setmetatable({}, Connection)
  for k, v in pairs(self) do c[k] = v end
  for k, v in pairs(overrides) do c[k] = v end
  if c.api_key then core.add_secret(c.api_key) end
  if c.access_token then core.add_secret(c.access_token) end
  return c
end

-- The control-plane request with its retries lives in abx.client.api_call; RETRY is its table
-- (tests and the fault-injection cases tune it through sandbox.RETRY).
sandbox.RETRY = api_call.RETRY

--- One control-plane request: abx.client.api_call.call on this connection (its doc gives the
--- retries, the parameters and the errors).
---@return table resp, string request
function Connection:_call(method, path, query, body, retry, headers, timeout, first_attempt)
  return api_call.call(self, method, path, query, body, retry, headers, timeout, first_attempt)
end

local create_deadline, create_timeout_error = api_call.create_deadline, api_call.create_timeout_error

local function copy(t)
  local c = {}
  for k, v in pairs(t or {}) do c[k] = v end
  return c
end

--- What to change when a route the connection's v2_routes chose is missing: for a 405, or a 404
--- whose body is not the platform's JSON (a router's "404 page not found"), on a v2 create or
--- connect (CubeSandbox#1784: e2b 2.51's POST /v2/sandboxes answers 405 on a "compatible"
--- backend), the setting that picks the v1 routes (abx.run.config: route_version, which must
--- agree with the v2_routes capability). nil for any other answer.
---@param conn abx.Connection
---@param resp table
---@param path string the route's path
---@return string|nil
local function route_hint(conn, resp, path)
  if not (conn.v2_routes and path:find("^/v2/sandboxes")) then return nil end
  if resp.status ~= 405 and not (resp.status == 404 and not errmap.decode_object(resp.body)) then
    return nil
  end
  local entry = conn.config_entry or "the provider's config entry"
  return string.format("(the v2 route comes from %s: route_version v2, or its v2_routes "
    .. "capability; a platform without E2B's v2 routes needs `route_version: v1` there, with "
    .. "v2_routes left out of its capabilities)", entry)
end

--- Merges default_metadata with the caller's: the caller's keys win, except `e2e` (the run tag).
local function merge_metadata(defaults, mine)
  local m = copy(mine)
  for k, v in pairs(defaults) do
    if k == "e2e" or m[k] == nil then m[k] = v end
  end
  return m
end

--- POST /sandboxes without ever leaking a duplicate: each attempt carries a unique tag
--- (metadata e2e_attempt). A 429 is a known rejection and is retried like any idempotent call;
--- when the outcome is unknown (transport failure, 502/503/504), the attempt's tag is looked up
--- first and a sandbox it created is adopted (GET /sandboxes/{id} gives its tokens) instead of
--- creating another one.
--- `path` is "/sandboxes" or "/v2/sandboxes" (Connection.v2_routes).
--- Returns the create response (or a synthesized 201 for an adopted sandbox) and "POST <path>".
--- Raises: what core.request raises when every attempt failed.
function Connection:_create_once(path, body)
  local RETRY = api_call.RETRY
  local deadline = core.now() + RETRY.budget
  local attempt = 1
  while true do
    body.metadata = body.metadata or {}
    body.metadata.e2e_attempt = core.random_hex(8)
    local started = core.now()
    local ok, resp = pcall(self._call, self, "POST", path, nil, body, false, nil,
      create_deadline(self), attempt)
    if not ok then resp = create_timeout_error(self, resp, started) end
    local request = "POST " .. path
    local unknown = (not ok and core.is_error(resp) and resp.kind == "Transport")
      or (ok and (resp.status == 502 or resp.status == 503 or resp.status == 504))
    if not ok and not unknown then error(resp, 0) end -- Timeout, Interrupted, ...: not retried
    if ok and not unknown and resp.status ~= 429 then return resp, request end
    if unknown then
      local lok, items = pcall(self.list, self, { metadata = { e2e_attempt = body.metadata.e2e_attempt } })
      if lok and #items > 0 then
        local gok, dresp = pcall(self._call, self, "GET", "/sandboxes/" .. envd.quote(items[1].sandbox_id),
          nil, nil, true)
        if gok and dresp.status == 200 then
          core.ewrite(string.format("abxlua: create outcome was unknown (%s); adopted sandbox %s "
            .. "found by its attempt tag\n", ok and ("HTTP " .. resp.status) or tostring(resp),
            items[1].sandbox_id))
          dresp.status = 201
          return dresp, request
        end
      end
    end
    local delay = api_call.retry_delay(attempt, ok and resp or nil)
    if attempt >= RETRY.attempts or core.now() + delay > deadline then
      if not ok then error(resp, 0) end
      resp.attempts, resp.not_retried = attempt, nil -- retried here, with its attempt tag
      return resp, request
    end
    api_call.log_retry(request, attempt, ok and ("HTTP " .. resp.status) or tostring(resp), delay)
    core.sleep(delay)
    attempt = attempt + 1
  end
end

--- Creates a sandbox: POST /sandboxes (reference §3.1, §3.2 NewSandbox), or POST /v2/sandboxes
--- when the connection has v2_routes (docs/protocol/e2b-v2-and-peers.md §1.2 NewSandboxV2: no `secure` field,
--- every sandbox is secured, so `secure = false` raises InvalidArgument there); 201 -> Sandbox.
--- `auto_pause_memory = false` (with auto_pause) makes the TTL's pause keep only the filesystem;
--- `auto_resume` lets traffic resume a paused sandbox (autoResume {enabled}, both route versions).
--- Options beyond the basics: `auto_pause` (pause instead of kill at the TTL), `allow_internet_access`
--- (false: no outbound traffic), `network = {allow_public_traffic=, allow_out=, deny_out=}`
--- (allow_public_traffic = false needs `secure` and gives sbx.traffic_access_token), and
--- `volume_mounts = {{name=, path=, read_only=}}`. `template` may be a snapshot id (restore).
--- Calls hooks.before_create(opts) before the request, then hooks.created(sbx, opts) after
--- success or hooks.create_failed(opts) when it raised (the run's tracker takes and frees slots).
--- Raises: Authentication, NotFound (unknown template: 404), InvalidArgument (400), RateLimit,
--- SandboxGone (502/503), Sandbox, Protocol, Transport, Timeout.
---@param opts? {template?: string, timeout?: number, metadata?: table, envs?: table, secure?: boolean,
---  auto_pause?: boolean, auto_pause_memory?: boolean, auto_resume?: boolean,
---  allow_internet_access?: boolean, network?: table, volume_mounts?: table[]}
---@return abx.Sandbox
function Connection:create(opts)
  opts = options.check(CREATE, opts)
  if opts.network ~= nil then options.check(NETWORK, opts.network) end
  for i, m in ipairs(opts.volume_mounts or {}) do
    options.check(VOLUME_MOUNT, m, "conn:create volume_mounts[" .. i .. "]")
  end
  if self.v2_routes and opts.secure == false then
    errmap.raise("InvalidArgument", 0, "conn:create: secure = false is not available through "
      .. "POST /v2/sandboxes (every v2 sandbox is secured); use a provider without v2_routes")
  end
  -- the hook may return metadata to add (the run's --keep-failed tags: abx.run.keep)
  local extra = self.hooks.before_create and self.hooks.before_create(opts)
  local body = {
    templateID = opts.template or "base",
    -- SDK default 300 s (reference §3.4); the provider's bounds before any request
    timeout = semantics.check_ttl(self.ttl, opts.timeout or 300, "conn:create"),
    metadata = merge_metadata(self.default_metadata, opts.metadata),
  }
  for k, v in pairs(type(extra) == "table" and extra or {}) do body.metadata[k] = v end
  if not self.v2_routes then body.secure = opts.secure ~= false end -- SDK default true (§3.2)
  if opts.auto_pause_memory ~= nil then body.autoPauseMemory = opts.auto_pause_memory and true or false end
  if opts.auto_resume ~= nil then body.autoResume = { enabled = opts.auto_resume and true or false } end
  if opts.envs and next(opts.envs) then body.envVars = opts.envs end
  if opts.auto_pause ~= nil then body.autoPause = opts.auto_pause and true or false end
  if opts.allow_internet_access ~= nil then
    body.allow_internet_access = opts.allow_internet_access and true or false -- snake_case (§3.2)
  end
  body.network = wire.network_body(opts.network)
  body.volumeMounts = wire.volume_mounts_body(opts.volume_mounts)
  local ok, sbx = pcall(function()
    local path = self.v2_routes and "/v2/sandboxes" or "/sandboxes"
    local resp, request = self:_create_once(path, body)
    if resp.status ~= 201 and resp.status ~= 200 then
      errmap.raise_api(resp, request, nil, route_hint(self, resp, path))
    end
    return object.new(self, errmap.decode_ok(resp, request), request, body.timeout)
  end)
  if not ok then
    if self.hooks.create_failed then self.hooks.create_failed(opts) end
    error(sbx, 0)
  end
  if self.hooks.created then self.hooks.created(sbx, opts) end
  return sbx
end

--- POST /sandboxes/{id}/<action> {timeout} (connect or resume), or for connect on a v2_routes
--- connection POST /v2/sandboxes/{id}/connect {timeout, memory?} (docs/protocol/e2b-v2-and-peers.md §1.3):
--- 200 or 201 -> Sandbox and status. `memory` is v2 only (InvalidArgument on v1).
--- Raises: SandboxNotFound (404) and the other kinds of errmap.raise_api, Protocol.
local function reattach(conn, id, action, opts, retry)
  opts = options.check(REATTACH, opts, "conn:" .. action)
  local v2 = conn.v2_routes and action == "connect"
  if opts.memory ~= nil and not v2 then
    errmap.raise("InvalidArgument", 0, "conn:" .. action .. ": memory needs the v2 connect route "
      .. "(a provider with v2_routes)")
  end
  local path = (v2 and "/v2/sandboxes/" or "/sandboxes/") .. envd.quote(id) .. "/" .. action
  local timeout = semantics.check_ttl(conn.ttl, opts.timeout or 300, "conn:" .. action)
  local body = { timeout = timeout }
  if opts.memory ~= nil then body.memory = opts.memory and true or false end
  -- a cold resume boots the sandbox again, start_cmd and ready_cmd included: a create's deadline
  local resp, request = conn:_call("POST", path, nil, body, retry, nil, create_deadline(conn))
  if action == "resume" and resp.status == 204 then
    -- OpenKruise answers the deprecated resume with 204 and no body (docs/protocol/e2b-v2-and-peers.md §5):
    -- the sandbox's details (id, envd version and token, domain) come from GET /sandboxes/{id}
    local got, greq = conn:_call("GET", "/sandboxes/" .. envd.quote(id), nil, nil, true)
    if got.status ~= 200 then
      conn:_gone_if_404(got, id)
      errmap.raise_api(got, greq, "SandboxNotFound")
    end
    return object.new(conn, errmap.decode_ok(got, greq), greq, timeout), 201
  end
  if resp.status ~= 200 and resp.status ~= 201 then
    local hint = route_hint(conn, resp, path)
    if not hint then conn:_gone_if_404(resp, id) end -- a missing route says nothing of the sandbox
    errmap.raise_api(resp, request, hint and "NotFound" or "SandboxNotFound", hint)
  end
  return object.new(conn, errmap.decode_ok(resp, request), request, timeout), resp.status
end

--- Connects to a running or paused sandbox: POST /sandboxes/{id}/connect (reference §3.4). 200:
--- it was running, its TTL is only extended to now + `timeout` (never shortened); 201: it was
--- paused and is resumed with TTL now + `timeout`. The returned Sandbox has `resumed = true` after
--- a 201, false after a 200. `timeout` defaults to 300 s.
--- Raises: SandboxNotFound (404), Authentication, Conflict (409), Sandbox, Protocol, Transport, Timeout.
---@param id string
---@param opts? {timeout?: number}
---@return abx.Sandbox
function Connection:connect(id, opts)
  local sbx, status = reattach(self, id, "connect", opts, true)
  sbx.resumed = status == 201
  return sbx
end

--- Resumes a paused sandbox through the deprecated route: POST /sandboxes/{id}/resume
--- {timeout} (reference §3.1, §3.4; SDKs before Oct 2025). 201 -> Sandbox with `resumed = true`;
--- 204 (OpenKruise, docs/protocol/e2b-v2-and-peers.md §5) -> the same, its details from GET /sandboxes/{id}.
--- `timeout` defaults to 300 s (the route's own default is 15 s).
--- Raises: Conflict (409: it is already running), SandboxNotFound (404), Authentication, Sandbox,
--- Protocol, Transport, Timeout.
---@param id string
---@param opts? {timeout?: number}
---@return abx.Sandbox
function Connection:resume(id, opts)
  local sbx = reattach(self, id, "resume", opts, false) -- not idempotent: never retried
  sbx.resumed = true
  return sbx
end

--- Pauses a sandbox: POST /sandboxes/{id}/pause (reference §3.4). true on 204; false on 409 (it is
--- already paused, or in a state that cannot be paused), as the SDKs do. `memory = false` asks for
--- a filesystem-only pause (sent only when given).
--- Raises: SandboxNotFound (404), Authentication, Sandbox, Protocol, Transport, Timeout.
---@param id string
---@param opts? {memory?: boolean}
---@return boolean
function Connection:pause(id, opts)
  opts = options.check(PAUSE, opts)
  local body = nil
  if opts.memory ~= nil then body = { memory = opts.memory and true or false } end
  local resp, request = self:_call("POST", "/sandboxes/" .. envd.quote(id) .. "/pause", nil, body,
    true)
  if resp.status == 204 or resp.status == 200 then return true end
  if resp.status == 409 then return false end
  self:_gone_if_404(resp, id)
  errmap.raise_api(resp, request, "SandboxNotFound")
end

--- Details of a sandbox: GET /sandboxes/{id} (reference §3.4).
--- Raises: SandboxNotFound (404), Authentication, Sandbox, Protocol, Transport, Timeout.
---@param id string
---@return table info {sandbox_id, template_id, alias, state, metadata, started_at, end_at,
---  envd_version, cpu_count, memory_mb, disk_size_mb, domain, allow_internet_access?,
---  network? {allow_public_traffic, allow_out, deny_out}, lifecycle? {auto_resume, on_timeout},
---  volume_mounts? {{name, path, read_only}}, abx_network? {host_address, sandbox_address} (local
---  platform only: the sandbox's link)}
function Connection:get_info(id)
  local resp, request = self:_call("GET", "/sandboxes/" .. envd.quote(id), nil, nil, true)
  if resp.status ~= 200 then
    self:_gone_if_404(resp, id)
    errmap.raise_api(resp, request, "SandboxNotFound")
  end
  local d = errmap.decode_ok(resp, request)
  if type(d.sandboxID) ~= "string" then
    errmap.raise_protocol(resp.status, request, "a SandboxDetail with sandboxID")
  end
  return wire.info_of(d)
end

--- One page of GET /v2/sandboxes (reference §2 "Pagination", §3.4). `limit` is the page size
--- (1..100); `state` an array of "running"/"paused" (comma-joined). Returns the items and the
--- X-Next-Token (nil when there are no more pages).
--- Raises: Authentication, InvalidArgument (400), Sandbox, Protocol, Transport, Timeout.
---@param opts? {metadata?: table<string,string>, state?: string[], limit?: integer, next_token?: string}
---@return table[] items, string|nil next_token
function Connection:list_page(opts)
  opts = options.check(LIST_PAGE, opts)
  local q = {}
  if opts.metadata and next(opts.metadata) then q[#q + 1] = { "metadata", wire.metadata_query(opts.metadata) } end
  if opts.state and #opts.state > 0 then q[#q + 1] = { "state", table.concat(opts.state, ",") } end
  for _, kv in ipairs(semantics.page_query(self.pagination, opts.limit, opts.next_token)) do
    q[#q + 1] = kv
  end
  local resp, request = self:_call("GET", "/v2/sandboxes", envd.query(q), nil, true)
  if resp.status ~= 200 then errmap.raise_api(resp, request) end
  local body = errmap.decode_ok(resp, request, self.pagination == "cursor")
  -- page pagination answers {items, pagination} (docs/protocol/e2b-v2-and-peers.md §4); cursor a bare array
  local list = body
  if self.pagination == "page" then
    if type(body) ~= "table" or type(body.items) ~= "table" then
      errmap.raise_protocol(resp.status, request, "{items, pagination} (page pagination)")
    end
    list = body.items
  end
  local items = {}
  for _, d in ipairs(list) do items[#items + 1] = wire.info_of(d) end
  return items, semantics.next_token(self.pagination, resp.headers, body)
end

--- Every sandbox matching the filters, following X-Next-Token until exhausted (abx.client.pages:
--- a repeated next token or sandbox id, or more than pages.MAX_PAGES pages, is a Protocol error).
--- Raises: as list_page; Protocol (a list that does not page honestly).
---@param opts? {metadata?: table<string,string>, state?: string[], limit?: integer}
---@return table[] infos
function Connection:list(opts)
  opts = copy(options.check(LIST, opts))
  return pages.follow("GET /v2/sandboxes", self.pagination, function(token)
    opts.next_token = token
    return self:list_page(opts)
  end, function(info) return info.sandbox_id end)
end

--- Kills a sandbox: DELETE /sandboxes/{id}. true on 204, false on 404 (reference §3.4). Calls
--- hooks.killed(id) in both cases (the sandbox no longer exists).
--- Raises: Authentication, Sandbox, Protocol, Transport, Timeout.
---@param id string
---@return boolean
function Connection:kill(id)
  return self:_delete("/sandboxes/" .. envd.quote(id), "killed", id)
end

--- A 404 for sandbox `id` means it no longer exists (killed, or its TTL ran out): tells
--- hooks.gone(id), so the run's tracker frees its slot. Raises: nothing.
---@param resp table
---@param id string
function Connection:_gone_if_404(resp, id)
  if resp.status == 404 and self.hooks.gone then self.hooks.gone(id) end
end

--- DELETE of a resource, retried like every idempotent call: true on 204/200, false on 404 (it
--- was already gone: reference §6.1, kill and delete_snapshot). Either way the resource no longer
--- exists, and hooks[hook](id) is called when given (the run's tracker forgets it).
--- Raises: the mapped kind of any other status (errmap.raise_api), Transport, Timeout.
---@param path string already quoted
---@param hook? string "killed", "snapshot_deleted" or "volume_deleted"
---@param id? string what the hook is told
---@return boolean
function Connection:_delete(path, hook, id)
  local resp, request = self:_call("DELETE", path, nil, nil, true)
  if resp.status ~= 204 and resp.status ~= 200 and resp.status ~= 404 then
    errmap.raise_api(resp, request)
  end
  if hook and self.hooks[hook] then self.hooks[hook](id) end -- gone either way
  return resp.status ~= 404
end

--- Snapshots, following X-Next-Token (see abx.client.snapshot.list). Raises: as abx.client.snapshot.list.
---@param opts? {sandbox_id?: string, name?: string, limit?: integer}
---@return {snapshot_id: string, names: string[]}[]
function Connection:list_snapshots(opts)
  return snapshot.list(self, opts)
end

--- One page of snapshots (see abx.client.snapshot.list_page). Raises: as abx.client.snapshot.list_page.
function Connection:list_snapshots_page(opts)
  return snapshot.list_page(self, opts)
end

--- Deletes a snapshot (see abx.client.snapshot.delete): true, or false when it did not exist.
--- Raises: as abx.client.snapshot.delete.
---@param id string
---@return boolean
function Connection:delete_snapshot(id)
  return snapshot.delete(self, id)
end

--- Volumes (see abx.client.volume): create -> {volume_id, name, token}; list -> {{volume_id, name}};
--- get -> {volume_id, name, token}; delete -> true / false when it did not exist.
--- Raises: as the abx.client.volume functions.
function Connection:create_volume(name) return volume.create(self, name) end
function Connection:list_volumes() return volume.list(self) end
function Connection:get_volume(id) return volume.get(self, id) end
function Connection:delete_volume(id) return volume.delete(self, id) end
function Connection:create_api_key(opts) return apikey.create(self, opts) end
function Connection:list_api_keys() return apikey.list(self) end
function Connection:rename_api_key(id, name) return apikey.rename(self, id, name) end
function Connection:delete_api_key(id) return apikey.delete(self, id) end

--- Unix seconds of an RFC 3339 time ("2026-01-02T03:04:05.123Z" or with an offset).
--- Raises: InvalidArgument (not RFC 3339).
---@param s string
---@return number
function sandbox.parse_time(s)
  local y, mo, d, h, mi, sec, rest = tostring(s):match(
    "^(%d+)-(%d+)-(%d+)[Tt ](%d+):(%d+):(%d+%.?%d*)(.*)$")
  if not y then errmap.raise("InvalidArgument", 0, "not an RFC 3339 time: " .. tostring(s)) end
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  -- days from civil (H. Hinnant), proleptic Gregorian
  y = mo <= 2 and y - 1 or y
  local era = (y >= 0 and y or y - 399) // 400
  local yoe = y - era * 400
  local doy = (153 * (mo + (mo > 2 and -3 or 9)) + 2) // 5 + d - 1
  local doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
  local days = era * 146097 + doe - 719468
  local t = days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(sec)
  local sign, oh, om = rest:match("^([+-])(%d%d):?(%d%d)$")
  if sign then
    local off = tonumber(oh) * 3600 + tonumber(om) * 60
    t = sign == "+" and t - off or t + off
  end
  return t
end

return sandbox
