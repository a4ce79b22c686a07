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

local sandbox = {}

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
Connection.__index = Connection

---@class abx.Sandbox
---@field id string
---@field template_id string
---@field envd_version string
---@field domain string
---@field secure boolean
---@field commands abx.Commands
---@field files abx.Files
---@field conn abx.Connection
local Sandbox = {}
Sandbox.__index = Sandbox

--- Creates a connection to a control plane. `api_key = false` sends no key (for negative tests).
--- Raises: InvalidArgument (missing api_url, bad routing).
---@param o table see the file header
---@return abx.Connection
function sandbox.connection(o)
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

--- Decodes a success body that must be a JSON object (or array when `array`).
--- Raises: Protocol.
local function decode_ok(resp, request, array)
  local ok, v = pcall(cjson.decode, resp.body or "")
  if not ok or type(v) ~= "table" or (array and next(v) ~= nil and v[1] == nil) then
    errmap.raise_protocol(resp.status, request, array and "a JSON array" or "a JSON object")
  end
  return v
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
---@return abx.Sandbox
local function new_sandbox(conn, s, request)
  if type(s.sandboxID) ~= "string" or type(s.templateID) ~= "string" then
    errmap.raise_protocol(201, request, "a Sandbox with sandboxID and templateID")
  end
  local token = type(s.envdAccessToken) == "string" and s.envdAccessToken or false
  if type(s.trafficAccessToken) == "string" then core.add_secret(s.trafficAccessToken) end
  local domain = type(s.domain) == "string" and s.domain ~= "" and s.domain or conn.domain
  local sbx = setmetatable({
    id = s.sandboxID,
    template_id = s.templateID,
    alias = s.alias ~= cjson.null and s.alias or nil,
    envd_version = s.envdVersion,
    domain = domain,
    secure = token and true or false,
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
--- Calls hooks.before_create(opts) before the request and hooks.created(sbx) after success.
--- Raises: Authentication, NotFound (unknown template: 404), InvalidArgument (400), RateLimit,
--- SandboxGone (502/503), Sandbox, Protocol, Transport, Timeout.
---@param opts? {template?: string, timeout?: number, metadata?: table, envs?: table, secure?: boolean}
---@return abx.Sandbox
function Connection:create(opts)
  opts = opts or {}
  if self.hooks.before_create then self.hooks.before_create(opts) end
  local body = {
    templateID = opts.template or "base",
    timeout = math.ceil(opts.timeout or 300), -- SDK default 300 s (reference §3.4)
    metadata = merge_metadata(self.default_metadata, opts.metadata),
    secure = opts.secure ~= false, -- SDK default true (reference §3.2)
  }
  if opts.envs and next(opts.envs) then body.envVars = opts.envs end
  local resp, request = self:_create_once(body)
  if resp.status ~= 201 and resp.status ~= 200 then errmap.raise_api(resp, request) end
  local sbx = new_sandbox(self, decode_ok(resp, request), request)
  if self.hooks.created then self.hooks.created(sbx) end
  return sbx
end

--- Connects to a running (or paused) sandbox: POST /sandboxes/{id}/connect, 200 or 201
--- (reference §3.4). `timeout` (default 300 s) becomes its new TTL if longer.
--- Raises: SandboxNotFound (404), Authentication, Conflict, Sandbox, Protocol, Transport, Timeout.
---@param id string
---@param opts? {timeout?: number}
---@return abx.Sandbox
function Connection:connect(id, opts)
  opts = opts or {}
  local path = "/sandboxes/" .. envd.quote(id) .. "/connect"
  local resp, request = self:_call("POST", path, nil, { timeout = math.ceil(opts.timeout or 300) },
    true)
  if resp.status ~= 200 and resp.status ~= 201 then
    errmap.raise_api(resp, request, "SandboxNotFound")
  end
  return new_sandbox(self, decode_ok(resp, request), request)
end

--- snake_case info table of a SandboxDetail / ListedSandbox (reference §3.3).
local function info_of(d)
  local function opt(v) if v == cjson.null then return nil end return v end
  return {
    sandbox_id = d.sandboxID,
    template_id = d.templateID,
    alias = opt(d.alias),
    state = d.state,
    metadata = type(d.metadata) == "table" and d.metadata or {},
    started_at = d.startedAt,
    end_at = d.endAt,
    envd_version = d.envdVersion,
    cpu_count = math.tointeger(d.cpuCount) or d.cpuCount, -- cjson decodes numbers as floats
    memory_mb = math.tointeger(d.memoryMB) or d.memoryMB,
    disk_size_mb = math.tointeger(opt(d.diskSizeMB)) or opt(d.diskSizeMB),
    domain = opt(d.domain),
  }
end

--- Details of a sandbox: GET /sandboxes/{id} (reference §3.4).
--- Raises: SandboxNotFound (404), Authentication, Sandbox, Protocol, Transport, Timeout.
---@param id string
---@return table info {sandbox_id, template_id, alias, state, metadata, started_at, end_at,
---  envd_version, cpu_count, memory_mb, disk_size_mb, domain}
function Connection:get_info(id)
  local resp, request = self:_call("GET", "/sandboxes/" .. envd.quote(id), nil, nil, true)
  if resp.status ~= 200 then errmap.raise_api(resp, request, "SandboxNotFound") end
  local d = decode_ok(resp, request)
  if type(d.sandboxID) ~= "string" then
    errmap.raise_protocol(resp.status, request, "a SandboxDetail with sandboxID")
  end
  return info_of(d)
end

--- The `metadata` query value as the SDK builds it: `k=v&k2=v2` of percent-encoded keys and values;
--- the whole string is encoded again as the parameter value (reference §3.4, GET /v2/sandboxes).
local function metadata_query(md)
  local keys = {}
  for k in pairs(md) do keys[#keys + 1] = k end
  table.sort(keys)
  local kv = {}
  for _, k in ipairs(keys) do kv[#kv + 1] = { k, tostring(md[k]) } end
  return envd.query(kv)
end

--- One page of GET /v2/sandboxes (reference §2 "Pagination", §3.4). `limit` is the page size
--- (1..100); `state` an array of "running"/"paused" (comma-joined). Returns the items and the
--- X-Next-Token (nil when there are no more pages).
--- Raises: Authentication, InvalidArgument (400), Sandbox, Protocol, Transport, Timeout.
---@param opts? {metadata?: table<string,string>, state?: string[], limit?: integer, next_token?: string}
---@return table[] items, string|nil next_token
function Connection:list_page(opts)
  opts = opts or {}
  local q = {}
  if opts.metadata and next(opts.metadata) then q[#q + 1] = { "metadata", metadata_query(opts.metadata) } end
  if opts.state and #opts.state > 0 then q[#q + 1] = { "state", table.concat(opts.state, ",") } end
  if opts.limit then q[#q + 1] = { "limit", string.format("%d", opts.limit) } end
  if opts.next_token then q[#q + 1] = { "nextToken", opts.next_token } end
  local resp, request = self:_call("GET", "/v2/sandboxes", envd.query(q), nil, true)
  if resp.status ~= 200 then errmap.raise_api(resp, request) end
  local items = {}
  for _, d in ipairs(decode_ok(resp, request, true)) do items[#items + 1] = info_of(d) end
  local token = resp.headers["x-next-token"]
  if token == "" then token = nil end
  return items, token
end

--- Every sandbox matching the filters, following X-Next-Token until exhausted.
--- Raises: as list_page.
---@param opts? {metadata?: table<string,string>, state?: string[], limit?: integer}
---@return table[] infos
function Connection:list(opts)
  opts = copy(opts)
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
  local resp, request = self:_call("DELETE", "/sandboxes/" .. envd.quote(id), nil, nil, true)
  local killed
  if resp.status == 204 or resp.status == 200 then
    killed = true
  elseif resp.status == 404 then
    killed = false
  else
    errmap.raise_api(resp, request)
  end
  if self.hooks.killed then self.hooks.killed(id) end
  return killed
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
--- knows the sandbox also counts as not running.
--- Raises: Authentication, Sandbox (another status), Transport, Timeout.
---@return boolean
function Sandbox:is_running()
  local resp = self._envd:http("GET", "/health", { timeout = 5 })
  if resp.status == 200 or resp.status == 204 then return true end
  if resp.status == 502 or resp.status == 404 then return false end
  errmap.raise_envd_http(resp.status, resp.body, "GET /health")
end

--- "<port>-<id>.<domain>" (reference/e2b-control-plane.md §7.1).
--- Raises: nothing.
---@param port integer
---@return string
function Sandbox:get_host(port)
  return string.format("%d-%s.%s", port, self.id, self.domain)
end

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
