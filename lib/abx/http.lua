-- abx.http: HTTP to servers INSIDE a sandbox (any port), through the routing the sandbox's
-- connection uses for envd. Platform features (lifecycle, snapshots, volumes) are abx.sandbox.
--
--   local http = require("abx.http")
--   local r = http.get(sbx, 8080, "/index.html")           -- or sbx:http(8080, {path = "/"})
--   t.eq(r.status, 200)
--   http.request(sbx, 8080, { method = "POST", path = "/x", body = "...",
--     headers = { ["Content-Type"] = "text/plain" }, traffic_token = false })
--
-- Routing (reference/e2b-control-plane.md §7.1, §7.4): "host" routing sends to
-- <scheme>://<port>-<id>.<domain> (to the API URL's address when that is loopback or an IP
-- literal); "headers" routing sends to the fixed sandbox URL with E2b-Sandbox-Id and
-- E2b-Sandbox-Port: <port>.
-- Traffic token: a sandbox created with network.allow_public_traffic = false has
-- sbx.traffic_access_token; it is sent as `e2b-traffic-access-token` unless traffic_token = false;
-- a string sends that value instead (negative tests).
-- Answers: {status, headers (lower-case names), body} whatever the status (a 502 from the edge
-- for a closed port, a 403 without the traffic token): nothing is raised for an HTTP status.
-- Errors: Transport, Timeout, Protocol (from core.request); InvalidArgument for bad arguments.

local core = require("abx.core")
local errmap = require("abx.errmap")
local envd = require("abx.envd")

local http = {}

--- The header that carries the traffic access token (reference §7.4).
http.TRAFFIC_HEADER = "e2b-traffic-access-token"

local function check_port(port)
  if math.type(port) ~= "integer" or port < 1 or port > 65535 then
    errmap.raise("InvalidArgument", 0, "port must be an integer 1..65535, got " .. tostring(port))
  end
end

--- Whether the API URL's host is loopback or an IP literal: then the platform's ingress is at the
--- API URL's address, whatever the host name says. Returns that "HOST:PORT" or nil.
local function loopback_hostport(api_url)
  local hostport = envd.host_port(api_url)
  local host = hostport:match("^%[(.*)%]") or hostport:match("^([^:]+)")
  if host == "localhost" or host:match("^[%d.]+$") or host:find(":", 1, true) then
    return hostport
  end
  return nil
end

--- "<scheme>://<port>-<id>.<domain>[:<api port>]": the URL a client outside uses for `port`.
--- Raises: InvalidArgument (bad port).
---@param sbx abx.Sandbox
---@param port integer
---@return string
function http.port_url(sbx, port)
  check_port(port)
  local api_url = sbx.conn.api_url
  local scheme = api_url:match("^(%a+)://") or "https"
  local url = string.format("%s://%s", scheme, sbx:get_host(port))
  local lb = loopback_hostport(api_url)
  if lb then
    local p = lb:match(":(%d+)$")
    local default = (scheme == "https" and "443") or "80"
    if p and p ~= default then url = url .. ":" .. p end
  end
  return url
end

--- URL, connect_to and routing headers for `path` on `port`.
local function route(sbx, port, path)
  local conn = sbx.conn
  if conn.envd_routing == "headers" then
    return (conn.envd_url:gsub("/+$", "")) .. path, nil,
      { ["E2b-Sandbox-Id"] = sbx.id, ["E2b-Sandbox-Port"] = tostring(port) }
  end
  local url = http.port_url(sbx, port) .. path
  return url, loopback_hostport(conn.api_url), {}
end

--- URL, connect_to and headers for a request to `path` on `port`: the routing (host name or
--- E2b-Sandbox-* headers), the traffic token (see the file header) and `opts.headers` on top.
--- For callers that start their own transfer (abx.code streams POST /execute).
--- Raises: InvalidArgument (bad port or path).
---@param sbx abx.Sandbox
---@param port integer
---@param path string starts with "/"
---@param opts? {headers?: table<string,string>, traffic_token?: boolean|string}
---@return string url, string|nil connect_to, table<string,string> headers
function http.target(sbx, port, path, opts)
  opts = opts or {}
  check_port(port)
  if type(path) ~= "string" or path:sub(1, 1) ~= "/" then
    errmap.raise("InvalidArgument", 0, "path must start with \"/\", got " .. tostring(path))
  end
  local url, connect_to, h = route(sbx, port, path)
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
  opts = opts or {}
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
  for k, v in pairs(opts or {}) do o[k] = v end
  o.method, o.path = "GET", path or "/"
  return http.request(sbx, port, o)
end

return http
