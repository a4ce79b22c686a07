-- abx.client.envd: the plumbing every envd call shares (routing, headers, unary and streaming Connect calls,
-- REST), used by abx.client.sandbox, abx.client.commands and abx.client.files. Scenarios never require it. The URL,
-- connect_to and routing headers come from abx.client.route, as for every other port.
--
-- Shapes: a client is created per Sandbox handle by abx.client.sandbox_object: envd.client(sbx).
--   It holds no routing facts of its own: the sandbox id, domain and envd access token are read
--   from the Sandbox at every call (sbx.id, sbx.domain, sbx._envd_access_token), the routing,
--   URLs and request timeout from its connection (abx.client.route.of), so whatever the Sandbox
--   holds (after sbx:connect, or set by a test) is what envd, sbx:http and run_code all use.
-- Units:  seconds everywhere; Connect-Timeout-Ms is derived once here.
-- Errors: every non-success answer is raised through abx.client.errmap (Connect and plain-HTTP tables).
-- Source: docs/protocol/envd-protocol.md §2 (Connect over HTTP/1.1 in JSON), §6 (auth, users, headers),
--         §7 (REST); docs/protocol/e2b-control-plane.md §7 (routing by host or by E2b-Sandbox-* headers).

local core = require("abx.core")
local cjson = require("cjson")
local errmap = require("abx.client.errmap")
local route = require("abx.client.route")
local api_call = require("abx.client.api_call")
local envd_checked = require("abx.client.envd_checked")

local envd = {}

--- envd's port inside every sandbox (docs/protocol/e2b-control-plane.md §7.2).
envd.PORT = core.E2B.envd_port -- proto/e2b.h (docs/protocol/envd-protocol.md §1)

--- The envd RPCs that start no work, or whose repeat leaves what one call leaves: a gateway's
--- bare 502/503/504 (abx.client.errmap.bare_gateway) to one of them is retried with
--- abx.client.api_call's backoff (issue 27). Start is retried only when envd lists no process with
--- its tag; Move, SendSignal and CreateWatcher only when the sandbox's state shows the first
--- request did no work (both in abx.client.envd_checked). Every other RPC
--- (SendInput, StreamInput, GetWatcherEvents, RemoveWatcher, ...) is sent once: a retry could do
--- its work twice.
envd.IDEMPOTENT = {
  ["process.Process/List"] = true, ["process.Process/Connect"] = true,
  ["filesystem.Filesystem/Stat"] = true, ["filesystem.Filesystem/ListDir"] = true,
  ["filesystem.Filesystem/WatchDir"] = true,
  -- doing these twice leaves what doing them once does: a directory that exists (a repeat of a
  -- MakeDir that did reach envd answers "already there"), a PTY of the same size, a closed stdin
  ["filesystem.Filesystem/MakeDir"] = true, ["process.Process/Update"] = true,
  ["process.Process/CloseStdin"] = true,
  -- a missing path is no error to Remove (§5.2): a repeat of one that did remove answers {} too
  ["filesystem.Filesystem/Remove"] = true,
}

--- Interval the server is asked to send keepalives at on streams, seconds
--- (docs/protocol/envd-protocol.md §4.4, the SDKs' KEEPALIVE_PING_INTERVAL_SEC).
envd.KEEPALIVE_S = 50

--- Percent-encodes every byte but RFC 3986 unreserved characters (as `encodeURIComponent`).
---@param s string
---@return string
function envd.quote(s)
  return (tostring(s):gsub("[^%w%-%._~]", function(c)
    return string.format("%%%02X", c:byte())
  end))
end

--- Builds "k=v&k2=v2" from an array of {key, value} pairs, each part percent-encoded.
---@param pairs_ {[1]: string, [2]: string}[]
---@return string
function envd.query(pairs_)
  local parts = {}
  for _, kv in ipairs(pairs_) do
    parts[#parts + 1] = envd.quote(kv[1]) .. "=" .. envd.quote(kv[2])
  end
  return table.concat(parts, "&")
end

--- "HOST:PORT" of an http(s) URL (see abx.client.route.host_port).
--- Raises: InvalidArgument (not an http(s) URL).
envd.host_port = route.host_port

---@class abx.EnvdClient
---@field _sbx abx.Sandbox the Sandbox it reads the id, domain, token and connection from
local Client = {}
Client.__index = Client

--- Creates the envd client of one Sandbox handle (see the file header). The Sandbox registers
--- its token as a secret when it takes one.
--- Raises: nothing.
---@param sbx abx.Sandbox
---@return abx.EnvdClient
function envd.client(sbx)
  return setmetatable({ _sbx = sbx }, Client)
end

--- The access token envd calls send: the Sandbox's, false when it has none (not secure, or a
--- copy made with sbx:with{access_token = false}).
--- Raises: nothing.
---@return string|false
function Client:token()
  return self._sbx._envd_access_token or false
end

--- Seconds a plain request is allowed: the Sandbox's connection's request_timeout.
--- Raises: nothing.
---@return number
function Client:request_timeout()
  return self._sbx.conn.request_timeout or 60
end

--- URL for `path` on envd's port and the connect_to override of the routing: abx.client.route.target
--- (docs/protocol/e2b-control-plane.md §7.1, §7.3, §7.4).
--- Raises: InvalidArgument (bad path or URL).
---@param path string starts with "/"
---@return string url, string|nil connect_to
function Client:url(path)
  local url, connect_to = route.target(route.of(self._sbx), envd.PORT, path)
  return url, connect_to
end

--- Headers for an envd call: the routing headers (abx.client.route: E2b-Sandbox-* in "headers" routing,
--- docs/protocol/e2b-control-plane.md §7.4), the access token in `X-Access-Token`
--- (docs/protocol/envd-protocol.md §6.1), and for `user` `Authorization: Basic base64("<user>:")`
--- (§6.2).
--- Raises: nothing.
---@param user string|nil
---@return table<string, string>
function Client:headers(user)
  local _, _, h = route.target(route.of(self._sbx), envd.PORT, "/")
  local token = self:token()
  if token then h["X-Access-Token"] = token end
  if user then h["Authorization"] = "Basic " .. core.b64encode(user .. ":") end
  return h
end

--- Sends one plain HTTP request to `url` with the headers `h` and, over them, opts.headers (the
--- common part of Client:http and Client:fetch). Returns the response whatever its status.
--- Raises: Transport, Timeout, Protocol (from core.request).
local function plain(self, method, url, connect_to, h, opts)
  opts = opts or {}
  for k, v in pairs(opts.headers or {}) do h[k] = v end
  return core.request({
    method = method, url = url, headers = h, body = opts.body,
    timeout = opts.timeout or self:request_timeout(), max_body = opts.max_body,
    connect_to = connect_to,
  })
end

-- A GET or HEAD starts no work: a gateway's bare answer to it is retried.
local SAFE_METHOD = { GET = true, HEAD = true }

--- One plain HTTP request to envd (REST: /health, /files). Returns the response whatever its
--- status, with `attempts` (requests sent) set: a GET or HEAD (or a request the caller marks
--- `idempotent`: an upload of bytes in memory, which sent again leaves the same file) answered by
--- a gateway's bare 502/503/504 is sent again (abx.client.api_call.gateway_retry); for any other
--- such an answer has `not_retried` set (errmap.raise_envd_http names both).
--- Raises: Transport, Timeout, Protocol (from core.request).
---@param method string
---@param path string may carry a query string
---@param opts? {body?: string, headers?: table<string,string>, timeout?: number, max_body?: integer,
---  idempotent?: boolean}
---@return {status: integer, headers: table<string,string>, body: string, attempts: integer}
function Client:http(method, path, opts)
  local url, connect_to = self:url(path)
  local idempotent = SAFE_METHOD[method] == true or (opts ~= nil and opts.idempotent == true)
  return api_call.gateway_retry(method .. " " .. (path:match("^[^?]*")), idempotent,
    function() return plain(self, method, url, connect_to, self:headers(nil), opts) end)
end

--- One plain HTTP request to a full envd URL (one that Client:url built, e.g. a signed file URL),
--- sent the way a browser or curl given only the URL would: no X-Access-Token, no Authorization.
--- Only what this run's routing needs to reach the sandbox is added (the E2b-Sandbox-* headers in
--- "headers" routing, the connect_to override for a loopback platform in "host" routing).
--- Returns the response whatever its status; a gateway's bare 502/503/504 to a GET, HEAD or a
--- request marked `idempotent` (an upload of bytes in memory) is sent again.
--- Raises: Transport, Timeout, Protocol (from core.request).
---@param method string
---@param url string
---@param opts? {body?: string, headers?: table<string,string>, timeout?: number, max_body?: integer,
---  idempotent?: boolean}
---@return {status: integer, headers: table<string,string>, body: string}
function Client:fetch(method, url, opts)
  local path = url:match("^%a+://[^/]*(/[^?]*)") or "/"
  local again = SAFE_METHOD[method] == true or (opts ~= nil and opts.idempotent == true)
  return api_call.gateway_retry(method .. " " .. path, again, function()
    local _, connect_to, h = route.target(route.of(self._sbx), envd.PORT, "/")
    return plain(self, method, url, connect_to, h, opts)
  end)
end

--- The request line, URL, connect_to and headers (with Connect-Protocol-Version: 1, §2.1) of a
--- Connect call of `rpc` as `user`: the common start of Client:unary and Client:stream.
--- Raises: nothing.
local function connect_call(self, rpc, user)
  local url, connect_to = self:url("/" .. rpc)
  local h = self:headers(user)
  h["Connect-Protocol-Version"] = "1"
  return "POST /" .. rpc, url, connect_to, h
end

--- What abx.client.api_call.gateway_retry's `again` is for an envd `rpc` with message `msg`:
--- true for the RPCs that start no work (envd.IDEMPOTENT), the state check of
--- abx.client.envd_checked (it reads the state now, before the request), else false.
local function again_of(self, rpc, msg, user)
  return envd.IDEMPOTENT[rpc] == true or envd_checked.before(self, rpc, msg, { user = user }) or false
end

--- A unary Connect call in JSON: POST /<service>/<Method>, `application/json`, bare message
--- (docs/protocol/envd-protocol.md §2.1). An empty message is still sent as `{}` (§2.1).
--- Raises: the kind mapped from the Connect or HTTP error (abx.client.errmap), Protocol on a 200 that is
--- not a JSON object, Transport, Timeout.
---@param rpc string e.g. "process.Process/List"
---@param msg table|nil request message
---@param opts? {user?: string, timeout?: number}
---@return table decoded response message
function Client:unary(rpc, msg, opts)
  opts = opts or {}
  local request, url, connect_to, h = connect_call(self, rpc, opts.user)
  h["Content-Type"] = "application/json"
  local body = (msg == nil or next(msg) == nil) and "{}" or cjson.encode(msg)
  local again = again_of(self, rpc, msg or {}, opts.user)
  local resp = api_call.gateway_retry(request, again, function()
    return core.request({
      method = "POST", url = url, headers = h, body = body,
      timeout = opts.timeout or self:request_timeout(), connect_to = connect_to,
    })
  end)
  if resp.status ~= 200 then
    errmap.raise_envd_http(resp.status, resp.body, request, resp.attempts, resp.not_retried)
  end
  local obj = errmap.decode_object(resp.body)
  if not obj then errmap.raise_protocol(resp.status, request, "a JSON object") end
  return obj
end

--- Starts a server-streaming Connect call (`application/connect+json`, one request envelope,
--- docs/protocol/envd-protocol.md §2.3) and returns the open stream once its headers arrived.
--- `timeout` (seconds, 0 = none) becomes `Connect-Timeout-Ms` (§2.2); on Start envd then kills the
--- process when it elapses (§4.4). The transfer itself is allowed `timeout` + request_timeout
--- (no limit when `timeout` is 0). `keepalive` (whole seconds >= 1, default envd.KEEPALIVE_S) is
--- sent as `Keepalive-Ping-Interval`: envd sends a keepalive event after that much silence (§4.4,
--- §9); tests ask for 1 s to see keepalives on a short stream.
--- A gateway's bare 502/503/504 opens the stream again when the RPC starts no work
--- (envd.IDEMPOTENT) or, for a Start, when envd lists no process with its tag
--- (abx.client.envd_checked), with abx.client.api_call's backoff.
--- Raises: the kind mapped from a non-200 answer (envd's 401 is plain HTTP, §2.3; Unavailable
--- for a gateway's bare answer, after N attempts), Transport, Timeout, Protocol.
---@param rpc string e.g. "process.Process/Start"
---@param msg table request message
---@param opts? {user?: string, timeout?: number, keepalive?: integer}
---@return table stream (core stream), string request
function Client:stream(rpc, msg, opts)
  opts = opts or {}
  local request, url, connect_to, h = connect_call(self, rpc, opts.user)
  local keepalive = opts.keepalive or envd.KEEPALIVE_S
  if math.type(keepalive) ~= "integer" or keepalive < 1 then
    errmap.raise("InvalidArgument", 0, "keepalive must be a whole number of seconds >= 1, got "
      .. tostring(keepalive))
  end
  h["Keepalive-Ping-Interval"] = tostring(keepalive)
  local timeout = opts.timeout or 0
  local transfer = 0 -- core: 0 is no transfer limit; the task's deadline still bounds every wait
  if timeout > 0 then
    h["Connect-Timeout-Ms"] = string.format("%d", math.ceil(timeout * 1000))
    transfer = timeout + self:request_timeout()
  end
  local start = rpc == "process.Process/Start"
  if start and msg.tag == nil then
    -- a tag of its own: after a gateway's bare answer, List tells whether this Start reached envd
    local tagged = { tag = "abx-start-" .. core.random_hex(8) }
    for k, v in pairs(msg) do tagged[k] = v end
    msg = tagged
  end
  local again = again_of(self, rpc, msg, opts.user)
  local deadline, attempt = api_call.retry_deadline(), 1
  while true do
    local st = core.stream({
      method = "POST", url = url, headers = h, message = cjson.encode(msg),
      timeout = transfer, connect_to = connect_to,
    })
    local status = st:status()
    if status == 200 then return st, request end
    local _, body = st:next()
    st:close()
    body = type(body) == "string" and body or ""
    local bare, why_not = errmap.bare_gateway(status, body), nil
    if bare then
      -- a stream's check answers true or why not (no answer of its own to take instead)
      local verdict = again
      if type(verdict) == "function" then verdict = verdict() end
      if verdict ~= true then why_not = verdict or request .. " starts work" end
    end
    if not bare or why_not or not api_call.backoff(request, attempt, deadline, status) then
      errmap.raise_envd_http(status, body, request, attempt, why_not)
    end
    attempt = attempt + 1
  end
end

--- The message, or nil at a clean end, for what stream:next gave (`what`, `payload`): the
--- common end of envd.next_message and envd.next_event.
--- Raises: as envd.next_message.
local function settle(st, request, what, payload)
  if what == "message" then
    local obj = errmap.decode_object(payload)
    if not obj then errmap.raise_protocol(200, request, "a JSON object in a stream message") end
    return obj
  elseif what == "end" then
    local obj = errmap.decode_object(payload) or {}
    if type(obj.error) == "table" then errmap.raise_connect(obj.error, request) end
    return nil
  elseif what == "http" then
    errmap.raise_envd_http(st:status(), payload, request)
  end
  errmap.raise_protocol(st:status(), request, "a stream event, got " .. tostring(what))
end

--- Reads the next message of a Connect stream. Returns the decoded message, or nil at a clean
--- end of stream (`{}` end envelope, docs/protocol/envd-protocol.md §2.3).
--- Raises: the kind of the end envelope's error (abx.client.errmap), the kind of a non-200 answer,
--- Protocol (bad envelope or JSON), Transport, Timeout.
---@param st table core stream
---@param request string "POST /<rpc>"
---@return table|nil
function envd.next_message(st, request)
  return settle(st, request, st:next())
end

--- Reads the next message of a process event stream (process.Process Start and Connect,
--- docs/protocol/envd-protocol.md §4.3) with output events decoded in C (stream:next_data): returns
--- "data", field, bytes for an output event {"event":{"data":{field: base64}}} in envd's compact
--- form (field "stdout", "stderr" or "pty"); "message", the decoded message for any other
--- message (and for an output event the fast path did not take: other spacing, or text that is
--- not base64, which the caller's checks then name); nil at a clean end of stream.
--- Raises: as envd.next_message.
--- With `out` (a core.sink for stdout and pty) or `err` (for stderr) such bytes are decoded
--- straight into it and `b` is nil: no Lua string per chunk (for output nobody has a callback for).
---@param st table core stream
---@param request string "POST /<rpc>"
---@param out? userdata core.sink
---@param err? userdata core.sink
---@return "data"|"message"|nil what, string|table a, string|nil b
function envd.next_event(st, request, out, err)
  local what, a, b = st:next_data(out, err)
  if what == "data" then return "data", a, b end
  local obj = settle(st, request, what, a)
  if obj == nil then return nil end
  return "message", obj
end

return envd
