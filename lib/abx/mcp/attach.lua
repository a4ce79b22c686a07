-- abx.mcp.attach: hands a live connection to an `abxlua mcp` child, so that the server works on
-- the caller's platform (the scenario's, whatever its provider or flavour) instead of opening one
-- of its own. The Lua client (abx.mcp.client) puts M.export(conn) in the child's environment as
-- ABX_MCP_ATTACH; `abxlua mcp --attach` rebuilds the connection with M.import. The value holds the
-- API key: it goes only into the child's environment (never its command line, which other users
-- can read), and the key is registered as a secret on both sides.
local core = require("abx.core")
local cjson = require("cjson")
local sandbox = require("abx.client.sandbox")
local opensandbox = require("abx.client.opensandbox")

local M = {}

M.VARIABLE = "ABX_MCP_ATTACH"

-- The connection fields handed over (hooks and default_metadata are the server's own).
local E2B_FIELDS = { "api_url", "api_key", "domain", "envd_routing", "envd_url", "auth_header",
  "request_timeout", "v2_routes", "ttl", "pagination" }
local OPENSANDBOX_FIELDS = { "api_url", "api_key", "auth_header", "request_timeout", "ttl",
  "provider_name", "domain", "envd_routing", "envd_url" }

---The JSON text that describes `conn` (an E2B or OpenSandbox connection).
---@param conn table
---@param ca_file? string the CA bundle HTTPS transfers need (a `tls: true` local provider)
---@return string
function M.export(conn, ca_file)
  local opensandbox_conn = getmetatable(conn) == opensandbox.Connection
  local d = { protocol = opensandbox_conn and "opensandbox" or "e2b", ca_file = ca_file }
  for _, f in ipairs(opensandbox_conn and OPENSANDBOX_FIELDS or E2B_FIELDS) do
    local v = conn[f]
    if f == "ttl" and type(v) == "table" then
      v = { mode = v.mode, min = v.min, max = v.max, where = v.where }
    end
    d[f] = v
  end
  if opensandbox_conn then d.create = conn.create_mode end
  return cjson.encode(d)
end

---Rebuilds a connection from M.export's text, with the server's default metadata.
---@param text string
---@param default_metadata table<string,string>
---@return table conn
---Raises: InvalidArgument when the text is not what M.export writes
function M.import(text, default_metadata)
  local ok, d = pcall(cjson.decode, text)
  if not ok or type(d) ~= "table" or (d.protocol ~= "e2b" and d.protocol ~= "opensandbox") then
    core.error("InvalidArgument", 0, M.VARIABLE .. " is not a connection description (it is set "
      .. "by the Lua MCP client, abx.mcp.client)")
  end
  if d.api_key then core.add_secret(d.api_key) end
  if d.ca_file then core.set_ca_file(d.ca_file) end
  local o = { default_metadata = default_metadata }
  for _, f in ipairs(d.protocol == "opensandbox" and OPENSANDBOX_FIELDS or E2B_FIELDS) do
    if d[f] ~= nil and d[f] ~= cjson.null then o[f] = d[f] end
  end
  if d.protocol == "opensandbox" then
    if type(d.create) == "table" then o.create = { mode = d.create.mode, deadline = d.create.deadline,
      interval = d.create.interval } end
    return opensandbox.connection(o)
  end
  return sandbox.connection(o)
end

return M
