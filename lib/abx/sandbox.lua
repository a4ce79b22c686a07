-- abx.sandbox: the E2B control plane (REST) and the Sandbox object scenarios use.
--
--   local sandbox = require("abx.sandbox")
--   local conn = sandbox.connection{ api_url = "http://127.0.0.1:PORT", api_key = "e2b_...",
--     domain = "localhost", envd_routing = "headers" | "host", envd_url = nil (default api_url),
--     request_timeout = 60, hooks = { before_create = fn(opts), created = fn(sbx), killed = fn(id) },
--     default_metadata = { e2e = "<run id>" } }
--   local sbx = conn:create{ template = "base", timeout = 300 }
--   sbx.commands:run("echo hi"); sbx.files:write("/tmp/a", "x"); sbx:kill()
--
-- Lifecycle: sbx:pause() / conn:connect(id) (sbx.resumed) / conn:resume(id) / sbx:refresh(s) /
--            sbx:set_timeout(s) / sbx:get_metrics() / sbx:update_network{...}.
-- Ports:     sbx:get_host(port), sbx:port_url(port), sbx:http(port, {...}) (abx.http).
-- Code:      sbx:run_code(src, {...}), sbx:create_code_context{...}, list_code_contexts,
--            restart_code_context, remove_code_context (abx.code, port 49999).
-- Snapshots: sbx:create_snapshot{name}, conn:list_snapshots{...}, conn:delete_snapshot(id) are
--            abx.snapshot; restore is conn:create{ template = snapshot_id }.
-- Volumes:   conn:create_volume(name), conn:list_volumes(), conn:get_volume(id),
--            conn:delete_volume(id) are abx.volume; mount with create{ volume_mounts = {...} }.
--
-- Units:  seconds (numbers) for every timeout; times from the API (started_at, end_at) are the RFC 3339
--         strings it sent; sandbox.parse_time turns one into Unix seconds.
-- Errors: abx.error tables via abx.errmap; `request` is "METHOD path", never headers or keys.
-- Source: reference/e2b-control-plane.md §1.2 (X-API-Key), §2 (errors, pagination), §3 (sandbox
--         routes and schemas), §6.1 (error mapping), §7 (reaching envd).

local core = require("abx.core")
local cjson = require("cjson")
local errmap = require("abx.errmap")
local envd = require("abx.envd")
local commands = require("abx.commands")
local files = require("abx.files")
local http = require("abx.http")
local snapshot = require("abx.snapshot")
local volume = require("abx.volume")
local code = require("abx.code")
local wire = require("abx.sandbox_wire")
local options = require("abx.options")

local sandbox = {}

-- Options of every call that takes a table (abx.options: unknown keys and wrong types raise
-- InvalidArgument naming the call), and the fields of what they return.
local CONNECTION_FIELDS = {
  { "api_url", "string", "the control plane's base URL (required)" },
  { "api_key", "string|boolean", "X-API-Key; false sends none (negative tests)" },
  { "domain", "string", "sandbox domain when an answer names none (default e2b.app)" },
  { "envd_routing", "string", "\"headers\" (E2b-Sandbox-* on envd_url) or \"host\" (<port>-<id>.<domain>)" },
  { "envd_url", "string", "the fixed sandbox URL of \"headers\" routing (default api_url)" },
  { "request_timeout", "number", "seconds per control-plane or envd request (default 60)" },
  { "hooks", "table", "{before_create(opts), created(sbx), killed(id), snapshot_created(info), "
    .. "volume_created(info)}" },
  { "default_metadata", "table<string,string>", "metadata every create adds (e2e: the run tag)" },
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
    { "allow_internet_access", "boolean", "false: no outbound traffic" },
    { "network", "table", "see conn:create network" },
    { "volume_mounts", "table", "see conn:create volume_mounts[i]" },
  })
local REATTACH = options.define("conn:connect", "Connects to a running or paused sandbox (POST "
  .. "/sandboxes/{id}/connect); also the options of conn:resume and sbx:connect.", {
    { "timeout", "number", "TTL from now, seconds (conn: 300; sbx:connect: the handle's timeout)" },
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
    { "envd_request()", "the envd client (internal)" },
    { "with(opts)", "a copy with other envd credentials (options: sbx:with)" },
  })

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
  if routing ~= "headers" and routing ~= "host" then
    errmap.raise("InvalidArgument", 0, "envd_routing must be \"headers\" or \"host\"")
  end
  if o.api_key then core.add_secret(o.api_key) end
  return setmetatable({
    api_url = (o.api_url:gsub("/+$", "")),
    api_key = o.api_key or false,
    domain = o.domain or "e2b.app",
    envd_routing = routing,
    envd_url = o.envd_url or o.api_url,
    request_timeout = o.request_timeout or 60,
    hooks = o.hooks or {},
    default_metadata = o.default_metadata or {},
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
  return c
end

-- Retries (issue 5, item 3): 429 (honouring Retry-After / RateLimit-Reset), 502, 503, 504 and
-- transport failures are retried on idempotent calls with exponential backoff and jitter, at most
-- RETRY.attempts attempts and RETRY.budget seconds in all. Every retry is logged (masked) on stderr.
local RETRY = { attempts = 4, base = 0.5, cap = 8, budget = 30 }
-- Control-plane answers are small (a full page of 100 sandboxes is ~100 KiB): anything larger
-- than this is a Protocol error rather than memory the engine keeps.
local MAX_API_BODY = 16 * 1024 * 1024
sandbox.RETRY = RETRY
local RETRY_STATUS = { [429] = true, [502] = true, [503] = true, [504] = true }

local function retry_delay(attempt, resp)
  local d = math.min(RETRY.cap, RETRY.base * 2 ^ (attempt - 1))
  d = d * (0.5 + math.random()) -- jitter: 50%..150%
  if resp and resp.headers then
    local hint = tonumber(resp.headers["retry-after"] or resp.headers["ratelimit-reset"] or "")
    if hint and hint >= 0 then d = math.max(d, hint) end
  end
  return d
end

local function log_retry(request, attempt, why, delay)
  core.ewrite(string.format("abxlua: retry %d/%d of %s after %s, in %.2fs\n", attempt,
    RETRY.attempts - 1, request, why, delay))
end

--- One control-plane request. Returns the response whatever its status, and "METHOD path".
--- With `retry = true` (idempotent calls), retryable answers and transport failures are retried
--- (see RETRY above); the last answer or error is what the caller sees.
--- Raises: Transport, Timeout, Protocol (from core.request).
---@param method string
---@param path string without query
---@param query? string already encoded
---@param body? table JSON body
---@param retry? boolean
---@return table resp, string request
function Connection:_call(method, path, query, body, retry)
  local h = { ["Accept"] = "application/json" }
  if self.api_key then h["X-API-Key"] = self.api_key end -- reference §1.2
  local payload
  if body ~= nil then
    h["Content-Type"] = "application/json"
    payload = cjson.encode(body)
  end
  local url = self.api_url .. path .. ((query and query ~= "") and ("?" .. query) or "")
  local request = method .. " " .. path
  local deadline = core.now() + RETRY.budget
  local attempt = 1
  while true do
    local ok, resp = pcall(core.request, { method = method, url = url, headers = h, body = payload,
      timeout = self.request_timeout, max_body = MAX_API_BODY })
    local retryable, why
    if ok then
      retryable, why = RETRY_STATUS[resp.status], "HTTP " .. resp.status
    else
      retryable = core.is_error(resp) and resp.kind == "Transport"
      why = tostring(resp)
    end
    if not (retry and retryable) or attempt >= RETRY.attempts then
      if not ok then error(resp, 0) end
      return resp, request
    end
    local delay = retry_delay(attempt, ok and resp or nil)
    if core.now() + delay > deadline then
      if not ok then error(resp, 0) end
      return resp, request
    end
    log_retry(request, attempt, why, delay)
    core.sleep(delay)
    attempt = attempt + 1
  end
end

local function copy(t)
  local c = {}
  for k, v in pairs(t or {}) do c[k] = v end
  return c
end

--- Builds a Sandbox from a `Sandbox` response (reference §3.3). Registers its tokens as secrets.
---@param conn abx.Connection
---@param s table decoded `Sandbox`
---@param request string
---@param timeout number the TTL it was created or connected with, seconds (sbx.timeout)
---@return abx.Sandbox
local function new_sandbox(conn, s, request, timeout)
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
  }, Sandbox)
  sbx._envd = envd.client({
    sandbox_id = sbx.id, domain = domain, routing = conn.envd_routing, api_url = conn.api_url,
    envd_url = conn.envd_url, access_token = token, request_timeout = conn.request_timeout,
  })
  sbx.commands = commands.new(sbx)
  sbx.files = files.new(sbx)
  return sbx
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
--- Returns the create response (or a synthesized 201 for an adopted sandbox) and "POST /sandboxes".
--- Raises: what core.request raises when every attempt failed.
function Connection:_create_once(body)
  local deadline = core.now() + RETRY.budget
  local attempt = 1
  while true do
    body.metadata = body.metadata or {}
    body.metadata.e2e_attempt = core.random_hex(8)
    local ok, resp = pcall(self._call, self, "POST", "/sandboxes", nil, body, false)
    local request = "POST /sandboxes"
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
    local delay = retry_delay(attempt, ok and resp or nil)
    if attempt >= RETRY.attempts or core.now() + delay > deadline then
      if not ok then error(resp, 0) end
      return resp, request
    end
    log_retry(request, attempt, ok and ("HTTP " .. resp.status) or tostring(resp), delay)
    core.sleep(delay)
    attempt = attempt + 1
  end
end

--- Creates a sandbox: POST /sandboxes (reference §3.1, §3.2 NewSandbox); 201 -> Sandbox.
--- Options beyond the basics: `auto_pause` (pause instead of kill at the TTL), `allow_internet_access`
--- (false: no outbound traffic), `network = {allow_public_traffic=, allow_out=, deny_out=}`
--- (allow_public_traffic = false needs `secure` and gives sbx.traffic_access_token), and
--- `volume_mounts = {{name=, path=, read_only=}}`. `template` may be a snapshot id (restore).
--- Calls hooks.before_create(opts) before the request and hooks.created(sbx) after success.
--- Raises: Authentication, NotFound (unknown template: 404), InvalidArgument (400), RateLimit,
--- SandboxGone (502/503), Sandbox, Protocol, Transport, Timeout.
---@param opts? {template?: string, timeout?: number, metadata?: table, envs?: table, secure?: boolean,
---  auto_pause?: boolean, allow_internet_access?: boolean, network?: table, volume_mounts?: table[]}
---@return abx.Sandbox
function Connection:create(opts)
  opts = options.check(CREATE, opts)
  if opts.network ~= nil then options.check(NETWORK, opts.network) end
  for i, m in ipairs(opts.volume_mounts or {}) do
    options.check(VOLUME_MOUNT, m, "conn:create volume_mounts[" .. i .. "]")
  end
  if self.hooks.before_create then self.hooks.before_create(opts) end
  local body = {
    templateID = opts.template or "base",
    timeout = math.ceil(opts.timeout or 300), -- SDK default 300 s (reference §3.4)
    metadata = merge_metadata(self.default_metadata, opts.metadata),
    secure = opts.secure ~= false, -- SDK default true (reference §3.2)
  }
  if opts.envs and next(opts.envs) then body.envVars = opts.envs end
  if opts.auto_pause ~= nil then body.autoPause = opts.auto_pause and true or false end
  if opts.allow_internet_access ~= nil then
    body.allow_internet_access = opts.allow_internet_access and true or false -- snake_case (§3.2)
  end
  body.network = wire.network_body(opts.network)
  body.volumeMounts = wire.volume_mounts_body(opts.volume_mounts)
  local resp, request = self:_create_once(body)
  if resp.status ~= 201 and resp.status ~= 200 then errmap.raise_api(resp, request) end
  local sbx = new_sandbox(self, errmap.decode_ok(resp, request), request, body.timeout)
  if self.hooks.created then self.hooks.created(sbx) end
  return sbx
end

--- POST /sandboxes/{id}/<action> {timeout} (connect or resume): 200 or 201 -> Sandbox and status.
--- Raises: SandboxNotFound (404) and the other kinds of errmap.raise_api, Protocol.
local function reattach(conn, id, action, opts, retry)
  opts = options.check(REATTACH, opts, "conn:" .. action)
  local path = "/sandboxes/" .. envd.quote(id) .. "/" .. action
  local timeout = math.ceil(opts.timeout or 300)
  local resp, request = conn:_call("POST", path, nil, { timeout = timeout }, retry)
  if resp.status ~= 200 and resp.status ~= 201 then
    errmap.raise_api(resp, request, "SandboxNotFound")
  end
  return new_sandbox(conn, errmap.decode_ok(resp, request), request, timeout), resp.status
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
--- {timeout} (reference §3.1, §3.4; SDKs before Oct 2025). 201 -> Sandbox with `resumed = true`.
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
  if resp.status ~= 200 then errmap.raise_api(resp, request, "SandboxNotFound") end
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
  if opts.limit then q[#q + 1] = { "limit", string.format("%d", opts.limit) } end
  if opts.next_token then q[#q + 1] = { "nextToken", opts.next_token } end
  local resp, request = self:_call("GET", "/v2/sandboxes", envd.query(q), nil, true)
  if resp.status ~= 200 then errmap.raise_api(resp, request) end
  local items = {}
  for _, d in ipairs(errmap.decode_ok(resp, request, true)) do items[#items + 1] = wire.info_of(d) end
  local token = resp.headers["x-next-token"]
  if token == "" then token = nil end
  return items, token
end

--- Every sandbox matching the filters, following X-Next-Token until exhausted.
--- Raises: as list_page.
---@param opts? {metadata?: table<string,string>, state?: string[], limit?: integer}
---@return table[] infos
function Connection:list(opts)
  opts = copy(options.check(LIST, opts))
  local all = {}
  repeat
    local items, token = self:list_page(opts)
    for _, it in ipairs(items) do all[#all + 1] = it end
    opts.next_token = token
  until not token
  return all
end

--- Kills a sandbox: DELETE /sandboxes/{id}. true on 204, false on 404 (reference §3.4). Calls
--- hooks.killed(id) in both cases (the sandbox no longer exists).
--- Raises: Authentication, Sandbox, Protocol, Transport, Timeout.
---@param id string
---@return boolean
function Connection:kill(id)
  local killed = self:_delete("/sandboxes/" .. envd.quote(id))
  if self.hooks.killed then self.hooks.killed(id) end
  return killed
end

--- DELETE of a resource, retried like every idempotent call: true on 204/200, false on 404 (it
--- was already gone: reference §6.1, kill and delete_snapshot).
--- Raises: the mapped kind of any other status (errmap.raise_api), Transport, Timeout.
---@param path string already quoted
---@return boolean
function Connection:_delete(path)
  local resp, request = self:_call("DELETE", path, nil, nil, true)
  if resp.status == 204 or resp.status == 200 then return true end
  if resp.status == 404 then return false end
  errmap.raise_api(resp, request)
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
  local resp, request = self.conn:_call("POST", path, nil, { timeout = math.ceil(seconds) }, true)
  if resp.status ~= 204 and resp.status ~= 200 then
    errmap.raise_api(resp, request, "SandboxNotFound")
  end
end

--- Details of this sandbox (see Connection:get_info). Raises: as Connection:get_info.
---@return table info
function Sandbox:get_info()
  return self.conn:get_info(self.id)
end

--- Whether envd answers GET /health through the routing (reference/envd-protocol.md §9; a 502 from
--- the edge means gone, reference/e2b-control-plane.md §6.2). A 404 from an ingress that no longer
--- knows the sandbox also counts as not running, and so does the edge's answer for a paused
--- sandbox (409 {sandboxId, canAutoResume}: errmap.edge_kind SandboxPaused).
--- Raises: Authentication, Sandbox (another status), Transport, Timeout.
---@return boolean
function Sandbox:is_running()
  local resp = self._envd:http("GET", "/health", { timeout = 5 })
  if resp.status == 200 or resp.status == 204 then return true end
  if resp.status == 502 or resp.status == 404 then return false end
  if errmap.edge_kind(resp.status, errmap.decode_object(resp.body)) then return false end
  errmap.raise_envd_http(resp.status, resp.body, "GET /health")
end

--- "<port>-<id>.<domain>" (reference/e2b-control-plane.md §7.1).
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
--- envd (host name or E2b-Sandbox-* headers); see abx.http.request. Never raises on an HTTP status.
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
  return self.conn:pause(self.id, options.check(PAUSE, opts, "sbx:pause"))
end

--- Connects to this sandbox again (see Connection:connect): resumes it when paused, extends its TTL
--- when running. Without `timeout` the sandbox keeps its configured lifetime: the timeout this
--- handle was created or last connected with (`self.timeout`) is sent again, not a fixed 300 s
--- (reference/e2b-control-plane.md §3.2 ConnectSandbox: TTL = now + timeout; §3.4: only extended
--- when running). This handle takes the answer's tokens and domain; `self.resumed` tells whether
--- it was resumed (201). Returns self.
--- Raises: InvalidArgument (unknown option), and as Connection:connect.
---@param opts? {timeout?: number}
---@return abx.Sandbox
function Sandbox:connect(opts)
  opts = options.check(REATTACH, opts, "sbx:connect")
  local fresh = self.conn:connect(self.id, { timeout = opts.timeout or self.timeout })
  self.timeout = fresh.timeout
  self.domain, self.secure, self._envd = fresh.domain, fresh.secure, fresh._envd
  self.traffic_access_token = fresh.traffic_access_token
  self.envd_version = fresh.envd_version
  self.resumed = fresh.resumed
  return self
end

--- Extends the TTL to now + `duration` seconds, never shortening it: POST /sandboxes/{id}/refreshes
--- (reference §3.2 SandboxRefreshRequest: 0..3600, raised to 15 by the server).
--- Raises: SandboxNotFound (404, also when paused), InvalidArgument (400), Authentication, Sandbox.
---@param duration? number seconds (default: the server's 15)
function Sandbox:refresh(duration)
  local path = "/sandboxes/" .. envd.quote(self.id) .. "/refreshes"
  local body = duration and { duration = math.ceil(duration) } or nil
  local resp, request = self.conn:_call("POST", path, nil, body, true)
  if resp.status ~= 204 and resp.status ~= 200 then
    errmap.raise_api(resp, request, "SandboxNotFound")
  end
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
  local path = "/sandboxes/" .. envd.quote(self.id) .. "/network"
  local resp, request = self.conn:_call("PUT", path, nil, body, true)
  if resp.status ~= 204 and resp.status ~= 200 then
    errmap.raise_api(resp, request, "SandboxNotFound")
  end
end

--- Snapshots this sandbox (see abx.snapshot.create): {snapshot_id, names}.
--- Raises: as abx.snapshot.create.
---@param opts? {name?: string}
---@return {snapshot_id: string, names: string[]}
function Sandbox:create_snapshot(opts)
  return snapshot.create(self, opts)
end

--- Snapshots, following X-Next-Token (see abx.snapshot.list). Raises: as abx.snapshot.list.
---@param opts? {sandbox_id?: string, name?: string, limit?: integer}
---@return {snapshot_id: string, names: string[]}[]
function Connection:list_snapshots(opts)
  return snapshot.list(self, opts)
end

--- One page of snapshots (see abx.snapshot.list_page). Raises: as abx.snapshot.list_page.
function Connection:list_snapshots_page(opts)
  return snapshot.list_page(self, opts)
end

--- Deletes a snapshot (see abx.snapshot.delete): true, or false when it did not exist.
--- Raises: as abx.snapshot.delete.
---@param id string
---@return boolean
function Connection:delete_snapshot(id)
  return snapshot.delete(self, id)
end

--- Volumes (see abx.volume): create -> {volume_id, name, token}; list -> {{volume_id, name}};
--- get -> {volume_id, name, token}; delete -> true / false when it did not exist.
--- Raises: as the abx.volume functions.
function Connection:create_volume(name) return volume.create(self, name) end
function Connection:list_volumes() return volume.list(self) end
function Connection:get_volume(id) return volume.get(self, id) end
function Connection:delete_volume(id) return volume.delete(self, id) end

--- The code interpreter on port 49999 (see abx.code for shapes, options and errors;
--- reference/envd-protocol.md §10): run_code(src, {language, context, envs, timeout,
--- request_timeout, on_stdout, on_stderr, on_result, on_error}) -> Execution {logs = {stdout,
--- stderr}, results, error, execution_count, text}; create_code_context{language, cwd} ->
--- Context {id, language, cwd}; list_code_contexts() -> Context[]; restart_code_context(ctx);
--- remove_code_context(ctx) -> true / false when it did not exist.
--- Raises: as the abx.code functions (NotFound for an unknown context, InvalidArgument,
--- Protocol for a malformed stream, Timeout, SandboxGone, Sandbox, Transport).
function Sandbox:run_code(src, opts) return code.run(self, src, opts) end
function Sandbox:create_code_context(opts) return code.create_context(self, opts) end
function Sandbox:list_code_contexts(opts) return code.list_contexts(self, opts) end
function Sandbox:restart_code_context(ctx, opts) return code.restart_context(self, ctx, opts) end
function Sandbox:remove_code_context(ctx, opts) return code.remove_context(self, ctx, opts) end

--- The envd client (internal: used by abx.commands and abx.files).
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
  if o.access_token ~= nil then c._envd = self._envd:with_token(o.access_token) end
  c.commands = commands.new(c)
  c.files = files.new(c)
  return c
end

function Sandbox:__tostring()
  return "abx.sandbox(" .. self.id .. ")"
end

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
