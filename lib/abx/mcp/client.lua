-- abx.mcp.client (public name abx.mcp): an MCP client in Lua, for scenarios that drive
-- `abxlua mcp`. Two transports:
--
--   local mcp = require("abx.mcp")
--   local c = mcp.spawn({ conn = ctx.conn, args = { "--metadata-allow", "owner" } })
--   c:initialize()                       -- initialize + notifications/initialized
--   local r = c:call_tool("create_sandbox", { timeout = 120 })   -- a CallToolResult
--   c:close()                            -- stdin closed, then waits for the exit
--
--   local h = mcp.http("http://127.0.0.1:PORT/mcp")      -- streamable HTTP
--   h:initialize(); h:list_tools(); h:delete()
--
-- spawn starts `abxlua mcp --attach` as a child with pipes (core.process_start): the server works
-- on the connection `conn` (the scenario's platform, any provider or flavour; abx.mcp.attach hands
-- it over in the child's environment, never on its command line). Every request has a deadline.
-- Errors: a JSON-RPC error answer raises Protocol with `rpc_code` (e.g. -32602) and `rpc_data`;
-- no answer within the deadline is Timeout; the server's exit before the answer is Transport.
-- Source: MCP specification 2025-11-25 basic/lifecycle (initialize, shutdown of stdio: close
-- stdin, wait, SIGTERM, SIGKILL), basic/transports (stdio, Streamable HTTP).
local core = require("abx.core")
local json = require("abx.mcp.json")
local attach = require("abx.mcp.attach")

local M = {}

M.CLIENT_INFO = { name = "abxlua-mcp-client", version = "1" }
M.REQUEST_TIMEOUT = 120

local function rpc_raise(msg, where)
  local e = msg.error or {}
  core.error("Protocol", 0, string.format("%s: MCP error %s: %s", where, tostring(e.code),
    tostring(e.message)), { rpc_code = math.tointeger(e.code) or e.code, rpc_data = e.data })
end

-- Methods shared by both transports (self:request and self:notify differ). -------------------
local Common = {}

---initialize, then notifications/initialized. Returns the InitializeResult.
---@param o? {protocol_version?: string}
---@return table
function Common:initialize(o)
  o = o or {}
  local r = self:request("initialize", { protocolVersion = o.protocol_version or "2025-11-25",
    capabilities = {}, clientInfo = M.CLIENT_INFO })
  self.protocol_version = r.protocolVersion
  self:notify("notifications/initialized")
  return r
end

---tools/list: the tools (an array).
function Common:list_tools()
  return self:request("tools/list", {}).tools
end

---tools/call: the CallToolResult ({content, isError, structuredContent?}).
---@param name string
---@param args? table
---@return table
function Common:call_tool(name, args)
  return self:request("tools/call", { name = name, arguments = args or {} })
end

---tools/call whose result must not be an error: the result's JSON text, decoded.
---Raises: Assertion when isError is true (with the tool's text)
function Common:tool(name, args)
  local r = self:call_tool(name, args)
  local text = r.content and r.content[1] and r.content[1].text or ""
  if r.isError then core.error("Assertion", 0, name .. " failed: " .. text, { tool_text = text }) end
  local v, err = json.decode(text)
  if err then core.error("Protocol", 0, name .. ": the result text is not JSON: " .. err) end
  return v
end

-- stdio ----------------------------------------------------------------------------------------
local Stdio = setmetatable({}, { __index = Common })
Stdio.__index = Stdio

local function reader(self)
  local buf = ""
  while true do
    local ok, chunk = pcall(self.proc.stdout.read, self.proc.stdout)
    if not ok or not chunk then break end
    buf = buf .. chunk
    while true do
      local nl = buf:find("\n", 1, true)
      if not nl then break end
      local line = buf:sub(1, nl - 1)
      buf = buf:sub(nl + 1)
      self.lines[#self.lines + 1] = line
      local m = json.decode(line)
      local id = type(m) == "table" and m.id or nil
      -- cjson decodes 1 as 1.0: the key of a number id is its integer form
      local key = id ~= nil and tostring(math.tointeger(id) or id) or nil
      local waiter = key and self.pending[key]
      if waiter then
        self.pending[key] = nil
        core.unpark(waiter, m)
      else
        self.unmatched[#self.unmatched + 1] = m or line
        if self.raw_waiter then
          local w = self.raw_waiter
          self.raw_waiter = nil
          core.unpark(w)
        end
      end
    end
  end
  self.eof = true
  for key, w in pairs(self.pending) do
    self.pending[key] = nil
    core.unpark(w, nil)
  end
  if self.raw_waiter then core.unpark(self.raw_waiter) end
end

---Starts `abxlua mcp --attach` over `conn`.
---@param o {conn: table, args?: string[], run_id?: string, stderr?: string, ca_file?: string}
---  args: more `abxlua mcp` options; stderr: "inherit" (default), "null" or a file path
---@return table client
function M.spawn(o)
  local argv = { core.self_exe(), "mcp", "--attach" }
  if o.run_id then
    argv[#argv + 1] = "--run-id"
    argv[#argv + 1] = o.run_id
  end
  for _, a in ipairs(o.args or {}) do argv[#argv + 1] = a end
  local proc = core.process_start({ argv = argv, stderr = o.stderr or "inherit",
    env = { [attach.VARIABLE] = attach.export(o.conn, o.ca_file) } })
  local self = setmetatable({ proc = proc, pending = {}, lines = {}, unmatched = {}, next_id = 0,
    timeout = o.timeout or M.REQUEST_TIMEOUT }, Stdio)
  self.reader = core.spawn(reader, self)
  return self
end

---The child's pid.
function Stdio:pid() return self.proc.handle:pid() end

---Writes one line as is (a raw message: for tests of malformed input).
function Stdio:send_raw(line)
  self.proc.stdin:write(line .. "\n")
end

---Waits for the next message that answers no pending request (a reply to send_raw, a
---notification); nil when the server closed its stdout first.
---@param timeout? number seconds (default the client's)
function Stdio:next_unmatched(timeout)
  local deadline = core.now() + (timeout or self.timeout)
  while #self.unmatched == 0 do
    if self.eof or core.now() > deadline then return nil end
    self.raw_waiter = core.current()
    local me = core.current()
    local timer = core.spawn(function()
      if not pcall(core.sleep, math.max(0, deadline - core.now())) then return end
      if self.raw_waiter == me then self.raw_waiter = nil; core.unpark(me) end
    end)
    core.park()
    pcall(core.abort, timer, "Interrupted", "done")
  end
  return table.remove(self.unmatched, 1)
end

---Sends a request and waits for its answer. Returns the result.
---Raises: Protocol (an error answer: rpc_code), Timeout, Transport (the server ended)
function Stdio:request(method, params)
  self.next_id = self.next_id + 1
  local id = self.next_id
  local me = core.current()
  self.pending[tostring(id)] = me
  self.proc.stdin:write(json.encode({ jsonrpc = "2.0", id = id, method = method,
    params = params }) .. "\n")
  local timer = core.spawn(function()
    if not pcall(core.sleep, self.timeout) then return end -- aborted: the answer came
    if self.pending[tostring(id)] == me then
      self.pending[tostring(id)] = nil
      core.unpark(me, false)
    end
  end)
  local m = core.park()
  pcall(core.abort, timer, "Interrupted", "answered")
  if m == false then
    core.error("Timeout", 0, string.format("%s: no answer within %gs", method, self.timeout))
  end
  if m == nil then core.error("Transport", 0, method .. ": the MCP server ended before answering") end
  if m.error then rpc_raise(m, method) end
  return m.result
end

---Sends a notification (no answer).
function Stdio:notify(method, params)
  self.proc.stdin:write(json.encode({ jsonrpc = "2.0", method = method, params = params }) .. "\n")
end

---Waits up to `timeout` seconds for the child to exit. Returns {code=} / {signal=}, or nil.
function Stdio:wait(timeout)
  local deadline = core.now() + (timeout or 30)
  while true do
    local st = self.proc.handle:poll()
    if st then return st end
    if core.now() > deadline then return nil end
    core.sleep(0.02)
  end
end

---Sends a signal (15 SIGTERM, 2 SIGINT, 9 SIGKILL).
function Stdio:signal(n) return self.proc.handle:signal(n) end

---Ends the session as the specification's stdio shutdown says: stdin closed, then a wait; then
---SIGTERM and a wait; then SIGKILL. Returns the exit status ({code=} or {signal=}).
---@param timeout? number seconds for each wait (default 60: the server kills its sandboxes first)
function Stdio:close(timeout)
  if self.closed then return self.status end
  self.closed = true
  pcall(self.proc.stdin.close, self.proc.stdin)
  local st = self:wait(timeout or 60)
  if not st then
    self:signal(15)
    st = self:wait(10)
  end
  if not st then
    self:signal(9)
    st = self:wait(10)
  end
  self.status = st
  return st
end

-- streamable HTTP ------------------------------------------------------------------------------
local Http = setmetatable({}, { __index = Common })
Http.__index = Http

---A client of an MCP endpoint over streamable HTTP (no process: the server runs already).
---@param url string e.g. "http://127.0.0.1:8931/mcp"
---@return table client
function M.http(url)
  return setmetatable({ url = url, next_id = 0, timeout = M.REQUEST_TIMEOUT }, Http)
end

---One POST of a JSON-RPC message; returns the response ({status, headers, body}) and the decoded
---message of its body (JSON, or the data of an SSE stream's message events; nil for 202).
function Http:post(msg, headers)
  local h = { ["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream" }
  if self.session then h["Mcp-Session-Id"] = self.session end
  if self.protocol_version then h["MCP-Protocol-Version"] = self.protocol_version end
  for k, v in pairs(headers or {}) do h[k] = v or nil end
  local resp = core.request({ method = "POST", url = self.url, headers = h,
    body = type(msg) == "string" and msg or json.encode(msg), timeout = self.timeout })
  local ctype = (resp.headers["content-type"] or ""):match("^%s*([^;%s]+)")
  local m
  if ctype == "text/event-stream" then
    for data in resp.body:gmatch("data: ([^\n]*)\n") do
      if data ~= "" then m = json.decode(data) end
    end
  elseif resp.body ~= "" then
    m = json.decode(resp.body)
  end
  return resp, m
end

function Http:request(method, params)
  self.next_id = self.next_id + 1
  local resp, m = self:post({ jsonrpc = "2.0", id = self.next_id, method = method, params = params })
  if method == "initialize" and resp.headers["mcp-session-id"] then
    self.session = resp.headers["mcp-session-id"]
  end
  if resp.status ~= 200 or type(m) ~= "table" then
    core.error("Protocol", resp.status, string.format("%s: HTTP %d: %s", method, resp.status,
      resp.body:sub(1, 300)))
  end
  if m.error then rpc_raise(m, method) end
  return m.result
end

function Http:notify(method, params)
  local resp = self:post({ jsonrpc = "2.0", method = method, params = params })
  if resp.status ~= 202 then
    core.error("Protocol", resp.status, method .. ": HTTP " .. resp.status .. " (202 expected)")
  end
end

---DELETE the session (the server kills its sandboxes). Returns the HTTP status.
function Http:delete()
  local resp = core.request({ method = "DELETE", url = self.url, timeout = self.timeout,
    headers = { ["Mcp-Session-Id"] = self.session, ["MCP-Protocol-Version"] = self.protocol_version } })
  return resp.status
end

return M
