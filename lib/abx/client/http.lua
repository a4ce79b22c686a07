-- abx.client.http: HTTP to servers INSIDE a sandbox (any port), through the routing the sandbox's
-- connection uses for envd. Platform features (lifecycle, snapshots, volumes) are abx.client.sandbox.
--
--   local http = require("abx.client.http")
--   local r = http.get(sbx, 8080, "/index.html")           -- or sbx:http(8080, {path = "/"})
--   t.eq(r.status, 200)
--   http.request(sbx, 8080, { method = "POST", path = "/x", body = "...",
--     headers = { ["Content-Type"] = "text/plain" }, traffic_token = false })
--
-- Routing (docs/protocol/e2b-control-plane.md §7.1, §7.4), computed by abx.client.route as for envd: "host"
-- routing sends to <scheme>://<port>-<id>.<domain> (to the API URL's address when that is
-- loopback or an IP literal; a domain's own port is kept, never doubled); "headers" routing
-- sends to the fixed sandbox URL with E2b-Sandbox-Id and E2b-Sandbox-Port: <port>.
-- Traffic token: a sandbox created with network.allow_public_traffic = false has
-- sbx.traffic_access_token; it is sent as `e2b-traffic-access-token` unless traffic_token = false;
-- a string sends that value instead (negative tests).
-- Answers: {status, headers (lower-case names), body} whatever the status (a 502 from the edge
-- for a closed port, a 403 without the traffic token): nothing is raised for an HTTP status.
-- OpenSandbox sandboxes (abx.client.opensandbox) go through their endpoints instead.
-- Errors: Transport, Timeout, Protocol (from core.request); InvalidArgument for bad arguments.

local core = require("abx.core")
local options = require("abx.client.options")
local route = require("abx.client.route")

local http = {}

--- Options of sbx:http / http.request (http.get takes the same; its method and path win).
local REQUEST = options.define("sbx:http", "One HTTP request to a port inside the sandbox; the "
  .. "answer whatever its status.", {
    { "method", "string", "HTTP method (default GET)" },
    { "path", "string", "path and query, starting with \"/\" (default \"/\")" },
    { "headers", "table<string,string>", "request headers, on top of the routing headers" },
    { "body", "string", "request body (bytes)" },
    { "traffic_token", "boolean|string", "false: no traffic token; a string: send that one "
      .. "(default: the sandbox's, when it has one)" },
    { "timeout", "number", "seconds for the whole transfer (default the connection's request_timeout)" },
    { "max_body", "integer", "largest answer body accepted, bytes (default 64 MiB)" },
  })
http.REQUEST_OPTIONS = REQUEST

--- The header that carries the traffic access token (reference §7.4).
http.TRAFFIC_HEADER = "e2b-traffic-access-token"

--- A sandbox whose provider reaches ports its own way (the OpenSandbox adapter's Sandbox:
--- endpoints, abx.client.opensandbox) names the function on its metatable; nil for E2B's.
local function sandbox_own(sbx, name)
  local mt = type(sbx) == "table" and getmetatable(sbx)
  return type(mt) == "table" and rawget(mt, name) or nil
end

--- "<scheme>://<port>-<id>.<domain>[:<api port>]": the URL a client outside uses for `port`
--- (abx.client.route.port_url: a domain that carries a port keeps it, never gets a second one).
--- Raises: InvalidArgument (bad port).
---@param sbx abx.Sandbox
---@param port integer
---@return string
function http.port_url(sbx, port)
  local own = sandbox_own(sbx, "_port_url")
  if own then return own(sbx, port) end
  return route.port_url(route.of(sbx), port)
end

--- URL, connect_to and headers for a request to `path` on `port`: the routing (host name or
--- E2b-Sandbox-* headers), the traffic token (see the file header) and `opts.headers` on top.
--- For callers that start their own transfer (abx.client.code streams POST /execute).
--- Raises: InvalidArgument (bad port or path).
---@param sbx abx.Sandbox
---@param port integer
---@param path string starts with "/"
---@param opts? {headers?: table<string,string>, traffic_token?: boolean|string}
---@return string url, string|nil connect_to, table<string,string> headers
function http.target(sbx, port, path, opts)
  opts = opts or {}
  local url, connect_to, h = route.target(route.of(sbx), port, path)
  local tok = opts.traffic_token
  if tok == nil or tok == true then tok = sbx.traffic_access_token end
  if type(tok) == "string" then h[http.TRAFFIC_HEADER] = tok end -- the real one is a secret already
  for k, v in pairs(opts.headers or {}) do h[k] = v end
  return url, connect_to, h
end

--- One HTTP request to `port` inside the sandbox. Returns the answer whatever its status.
--- Raises: InvalidArgument (bad port or path), Transport, Timeout, Protocol.
---@param sbx abx.Sandbox
---@param port integer
---@param opts? {method?: string, path?: string, headers?: table<string,string>, body?: string,
---  traffic_token?: boolean|string, timeout?: number, max_body?: integer}
---@return {status: integer, headers: table<string,string>, body: string}
function http.request(sbx, port, opts)
  opts = options.check(REQUEST, opts)
  local own = sandbox_own(sbx, "_port_request")
  if own then return own(sbx, port, opts) end
  local url, connect_to, h = http.target(sbx, port, opts.path or "/", opts)
  return core.request({
    method = opts.method or "GET", url = url, headers = h, body = opts.body,
    timeout = opts.timeout or sbx.conn.request_timeout, max_body = opts.max_body,
    connect_to = connect_to,
  })
end

--- GET `path` on `port` (see http.request).
--- Raises: as http.request.
---@param sbx abx.Sandbox
---@param port integer
---@param path? string
---@param opts? table as http.request (method and path ignored)
---@return {status: integer, headers: table<string,string>, body: string}
function http.get(sbx, port, path, opts)
  local o = {}
  for k, v in pairs(options.check(REQUEST, opts, "http.get")) do o[k] = v end
  o.method, o.path = "GET", path or "/"
  return http.request(sbx, port, o)
end

return http
