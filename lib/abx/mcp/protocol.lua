-- abx.mcp.protocol: one MCP session's JSON-RPC 2.0 handling, whatever the transport
-- (abx.mcp.server: stdio lines, HTTP POST bodies).
--
--   local s = protocol.session(book, id)
--   local replies = s:handle(message)   -- the decoded message (table); yields in tool calls
--
-- Lifecycle: `initialize` first (only `ping` is answered before it; other requests get -32600);
-- the version is the client's when this server supports it, else the latest it supports; a second
-- initialize is -32600. notifications/initialized marks the session ready; other notifications
-- and responses (this server sends no requests) are accepted and ignored.
-- Errors (JSON-RPC 2.0 §5.1): -32700 parse error (transports), -32600 invalid request (not a
-- JSON-RPC 2.0 request, an id that is neither string nor integer, a batch outside 2025-03-26),
-- -32601 unknown method, -32602 invalid params (initialize without protocolVersion, an unknown
-- tool, and, before 2025-11-25, arguments that do not match the tool's inputSchema). From
-- 2025-11-25 on, arguments that fail the schema are a tool execution error (isError: true),
-- as that revision's server/tools "Error Handling" moved input validation there.
-- Batches: only in a session that negotiated 2025-03-26 (the one revision with JSON-RPC batches:
-- added there, removed in 2025-06-18); initialize is never part of one.
-- Source: MCP specification 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25: basic/lifecycle,
-- basic/index (requests, ids), basic/utilities/ping, server/tools; JSON-RPC 2.0 specification.
local core = require("abx.core")
local json = require("abx.mcp.json")

local M = {}

-- Oldest first; the last one is the latest (what a client asking for another version gets).
M.VERSIONS = { "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25" }
M.SUPPORTED = {}
for _, v in ipairs(M.VERSIONS) do M.SUPPORTED[v] = true end
M.LATEST = M.VERSIONS[#M.VERSIONS]

M.PARSE_ERROR, M.INVALID_REQUEST, M.METHOD_NOT_FOUND, M.INVALID_PARAMS = -32700, -32600, -32601, -32602

---A JSON-RPC error response.
---@param id any the request's id (json.null when unknown)
---@param code integer
---@param message string
---@param data? table
function M.error(id, code, message, data)
  return { jsonrpc = "2.0", id = id == nil and json.null or id,
    error = { code = code, message = message, data = data } }
end

local function result(id, r)
  return { jsonrpc = "2.0", id = id, result = r }
end

local function is_object(v)
  return type(v) == "table" and (next(v) == nil or #v == 0) and getmetatable(v) ~= json.array_mt
end

local function is_array(v)
  return type(v) == "table" and #v > 0 and next(v, #v) == nil
end

local function valid_id(id)
  return type(id) == "string" or (type(id) == "number" and id == math.floor(id))
end

local Session = {}
Session.__index = Session

---A new session over the book of owned sandboxes.
---@param book table abx.mcp.tools book
---@param id string the session's id (the owner of the sandboxes it creates)
---@param o? {instructions?: string, name?: string}
function M.session(book, id, o)
  return setmetatable({ book = book, id = id, version = nil, initialized = false,
    inflight = {}, o = o or {} }, Session)
end

function Session:initialize(id, p)
  if self.version then
    return M.error(id, M.INVALID_REQUEST, "the session is already initialized (protocol "
      .. self.version .. ")")
  end
  if type(p.protocolVersion) ~= "string" then
    return M.error(id, M.INVALID_PARAMS, "initialize: params.protocolVersion (a string) is required")
  end
  if p.capabilities ~= nil and not is_object(p.capabilities) then
    return M.error(id, M.INVALID_PARAMS, "initialize: params.capabilities must be an object")
  end
  if p.clientInfo ~= nil and (not is_object(p.clientInfo) or type(p.clientInfo.name) ~= "string") then
    return M.error(id, M.INVALID_PARAMS, "initialize: params.clientInfo must be an object with a name")
  end
  local v = M.SUPPORTED[p.protocolVersion] and p.protocolVersion or M.LATEST
  self.version = v
  self.client = type(p.clientInfo) == "table" and p.clientInfo.name or nil
  local version = core.version()
  local r = { protocolVersion = v, capabilities = { tools = { listChanged = false } },
    serverInfo = { name = "abxlua-mcp", version = version } }
  if v >= "2025-06-18" then r.serverInfo.title = "abxlua sandbox tools" end
  if v >= "2025-03-26" and self.o.instructions then r.instructions = self.o.instructions end
  return result(id, r)
end

function Session:call(id, p)
  if type(p.name) ~= "string" then
    return M.error(id, M.INVALID_PARAMS, "tools/call: params.name (a string) is required")
  end
  local d = self.book:find(p.name)
  if not d then
    local names = {}
    for i, t in ipairs(self.book.defs) do names[i] = t.name end
    return M.error(id, M.INVALID_PARAMS, "Unknown tool: " .. p.name .. " (tools: "
      .. table.concat(names, ", ") .. ")")
  end
  local args = p.arguments
  if args == nil then args = {} end
  local err = is_object(args) and self.book:check(d, args)
    or (not is_object(args) and "arguments must be an object") or nil
  if err then
    if self.version >= "2025-11-25" then
      local tools = require("abx.mcp.tools")
      return result(id, tools.error_result(p.name .. ": invalid arguments: " .. err))
    end
    return M.error(id, M.INVALID_PARAMS, p.name .. ": invalid arguments: " .. err)
  end
  return result(id, self.book:call(self.id, d, args, self.version))
end

---Handles one request or notification (a decoded object). Returns the response, or nil for a
---notification or a response.
function Session:one(m)
  if not is_object(m) then
    return M.error(nil, M.INVALID_REQUEST, "a JSON-RPC message must be an object")
  end
  local id = m.id
  if id ~= nil and not valid_id(id) then
    return M.error(nil, M.INVALID_REQUEST, "id must be a string or an integer (MCP: not null)")
  end
  if m.jsonrpc ~= "2.0" then
    return M.error(id, M.INVALID_REQUEST, "jsonrpc must be \"2.0\"")
  end
  if m.method == nil then
    if id ~= nil and (m.result ~= nil or m.error ~= nil) then return nil end -- a response: ignored
    return M.error(id, M.INVALID_REQUEST, "a request needs a method")
  end
  if type(m.method) ~= "string" then
    return M.error(id, M.INVALID_REQUEST, "method must be a string")
  end
  if m.params ~= nil and not is_object(m.params) then
    if id == nil then return nil end
    return M.error(id, M.INVALID_PARAMS, m.method .. ": params must be an object")
  end
  local p = m.params or {}
  if id == nil then -- a notification: never answered
    if m.method == "notifications/initialized" and self.version then self.initialized = true end
    return nil
  end
  if self.inflight[id] then
    return M.error(id, M.INVALID_REQUEST, "request id " .. tostring(id) .. " is already in use "
      .. "by a request in progress")
  end
  if m.method == "ping" then return result(id, {}) end
  if m.method == "initialize" then return self:initialize(id, p) end
  if not self.version then
    return M.error(id, M.INVALID_REQUEST, "the session is not initialized: send initialize first")
  end
  if m.method == "tools/list" then
    if p.cursor ~= nil then
      return M.error(id, M.INVALID_PARAMS, "tools/list: unknown cursor (this server has one page)")
    end
    return result(id, { tools = self.book:list(self.version) })
  end
  if m.method == "tools/call" then
    self.inflight[id] = true
    local ok, r = pcall(self.call, self, id, p)
    self.inflight[id] = nil
    if not ok then error(r, 0) end
    return r
  end
  return M.error(id, M.METHOD_NOT_FOUND, "method not found: " .. m.method .. " (this server has "
    .. "initialize, ping, tools/list, tools/call)")
end

---Handles a decoded message: an object, or (2025-03-26) a batch. Returns the reply to send (an
---object, an array of them) or nil when nothing is to be sent.
---@param m any
---@return table|nil
function Session:handle(m)
  if is_array(m) then
    if self.version ~= "2025-03-26" then
      return M.error(nil, M.INVALID_REQUEST, "JSON-RPC batches are part of protocol 2025-03-26 "
        .. "only (this session: " .. tostring(self.version or "not initialized") .. ")")
    end
    local out = json.array()
    for _, e in ipairs(m) do
      if is_object(e) and e.method == "initialize" then
        out[#out + 1] = M.error(e.id, M.INVALID_REQUEST, "initialize must not be part of a batch")
      else
        local r = self:one(e)
        if r then out[#out + 1] = r end
      end
    end
    return #out > 0 and out or nil
  end
  if type(m) == "table" and next(m) == nil and getmetatable(m) == nil then
    -- cjson decodes [] and {} alike: an empty batch and an empty object are both invalid
    return M.error(nil, M.INVALID_REQUEST, "an empty message is not a JSON-RPC request")
  end
  return self:one(m)
end

return M
