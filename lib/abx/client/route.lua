-- abx.client.route: how a request reaches a port inside a sandbox, computed in one place for envd
-- (abx.client.envd), sbx:http (abx.client.http) and the code interpreter (abx.client.code). Pure
-- functions, no I/O.
--
--   local url, connect_to, headers = route.target(route.of(sbx), 49983, "/health")
--   r = { routing = "host"|"headers", api_url = "http://127.0.0.1:PORT", envd_url = nil|URL,
--         sandbox_id = "i...", domain = "localhost" | "localhost:3000" | "e2b.app" }
--
-- "host" routing (docs/protocol/e2b-control-plane.md §7.1, §7.3): <scheme>://<port>-<id>.<domain>
--   with the api_url's scheme. When the api_url's host is loopback or an IP literal (the local
--   platform serves its ingress on the API port, and *.localhost need not resolve), the
--   connection goes to the api_url's address (`connect_to`) and, unless the domain already
--   carries a port, the api_url's non-default port is added to the URL, so the Host header names
--   the address a client outside would use. A domain's own port is never doubled.
-- "headers" routing (§7.4): the fixed sandbox URL (`envd_url`, default the api_url) with
--   `E2b-Sandbox-Id` and `E2b-Sandbox-Port` headers.
-- "path" routing (ACS / OpenKruise sandbox-manager's path protocol, reference §8.1 "Unrelated
--   packages", help.aliyun.com/en/cs/user-guide/connect-to-agent-sandbox-using-the-e2b-sdk):
--   <scheme>://<domain>/kruise/<id>/<port><path>, the api_url's scheme; with a loopback/IP api_url
--   the connection goes to its address, as for host routing.
-- Errors: InvalidArgument (abx.client.errmap) for a URL that is not http(s), an unknown routing or a bad
--   port.

local errmap = require("abx.client.errmap")

local route = {}

--- "HOST:PORT" of an http(s) URL (the default port of its scheme when it names none), the form
--- core.request's `connect_to` takes.
--- Raises: InvalidArgument (not an http(s) URL).
---@param url string
---@return string
function route.host_port(url)
  local scheme, hostport = tostring(url):match("^(%a[%w+.-]*)://([^/?#]+)")
  if not hostport then
    errmap.raise("InvalidArgument", 0, "not an http(s) URL: " .. tostring(url))
  end
  hostport = hostport:gsub("^.*@", "")
  if hostport:match(":%d+$") then return hostport end
  return hostport .. (scheme == "https" and ":443" or ":80")
end

--- The api_url's "HOST:PORT" when its host is loopback ("localhost"), an IPv4 literal or an IPv6
--- literal: then the platform's ingress is at that address whatever the host name says. nil
--- otherwise (the name is resolved normally).
--- Raises: InvalidArgument (not an http(s) URL).
---@param api_url string
---@return string|nil
function route.loopback_hostport(api_url)
  local hostport = route.host_port(api_url)
  local host = hostport:match("^%[(.*)%]") or hostport:match("^([^:]+)")
  if host == "localhost" or host:match("^[%d.]+$") or host:find(":", 1, true) then
    return hostport
  end
  return nil
end

local function check_port(port)
  if math.type(port) ~= "integer" or port < 1 or port > 65535 then
    errmap.raise("InvalidArgument", 0, "port must be an integer 1..65535, got " .. tostring(port))
  end
end

--- "<scheme>://<port>-<id>.<domain>[:<api port>]": the URL a client outside the sandbox uses for
--- `port` (host routing's URL without a path, whatever `r.routing` is). The api port is added only
--- for a loopback/IP api_url with a non-default port and a domain that carries no port.
--- Raises: InvalidArgument (bad port or api_url).
---@param r {api_url: string, sandbox_id: string, domain: string}
---@param port integer
---@return string
function route.port_url(r, port)
  check_port(port)
  local scheme = r.api_url:match("^(%a+)://") or "https"
  local url = string.format("%s://%d-%s.%s", scheme, port, r.sandbox_id, r.domain)
  local lb = route.loopback_hostport(r.api_url)
  if lb and not tostring(r.domain):match(":%d+$") then
    local p = lb:match(":(%d+)$")
    local default = (scheme == "https" and "443") or "80"
    if p and p ~= default then url = url .. ":" .. p end
  end
  return url
end

--- "<scheme>://<domain>/kruise/<id>/<port>": path routing's base URL for `port` (ACS), the
--- api_url's scheme. Raises: InvalidArgument (bad port or api_url).
---@param r {api_url: string, sandbox_id: string, domain: string}
---@param port integer
---@return string
function route.path_url(r, port)
  check_port(port)
  route.host_port(r.api_url)
  local scheme = r.api_url:match("^(%a+)://")
  return string.format("%s://%s/kruise/%s/%d", scheme, r.domain, r.sandbox_id, port)
end

--- The routing of one Sandbox, built afresh at every call: its connection's routing, api_url
--- and envd_url with the id and domain the Sandbox holds now. The one place abx.client.envd,
--- abx.client.http and abx.client.code take them from (none keeps a copy).
--- Raises: nothing.
---@param sbx abx.Sandbox
---@return {routing: "host"|"headers", api_url: string, envd_url?: string, sandbox_id: string,
---  domain: string}
function route.of(sbx)
  local conn = sbx.conn
  return { routing = conn.envd_routing, api_url = conn.api_url, envd_url = conn.envd_url,
    sandbox_id = sbx.id, domain = sbx.domain }
end

--- URL, connect_to and routing headers for `path` on `port` (see the file header).
--- Raises: InvalidArgument (unknown routing, bad port, path not starting with "/", bad URL).
---@param r {routing: "host"|"headers"|"path", api_url: string, envd_url?: string,
---  sandbox_id: string, domain: string}
---@param port integer
---@param path string starts with "/"
---@return string url, string|nil connect_to, table<string,string> headers
function route.target(r, port, path)
  check_port(port)
  if type(path) ~= "string" or path:sub(1, 1) ~= "/" then
    errmap.raise("InvalidArgument", 0, "path must start with \"/\", got " .. tostring(path))
  end
  if r.routing == "headers" then
    local base = r.envd_url or r.api_url
    return (base:gsub("/+$", "")) .. path, nil,
      { ["E2b-Sandbox-Id"] = r.sandbox_id, ["E2b-Sandbox-Port"] = tostring(port) }
  elseif r.routing == "host" then
    return route.port_url(r, port) .. path, route.loopback_hostport(r.api_url), {}
  elseif r.routing == "path" then
    return route.path_url(r, port) .. path, route.loopback_hostport(r.api_url), {}
  end
  errmap.raise("InvalidArgument", 0, "envd_routing must be \"headers\", \"host\" or \"path\", got "
    .. tostring(r.routing))
end

return route
