-- abx.accept.skill_mcp: an MCP client over stdio for a server running inside a sandbox: the
-- server is a background command started with stdin = true; each JSON-RPC message is one line
-- written with send_stdin, each answer one line of its stdout (MCP "Transports", stdio:
-- newline-delimited JSON-RPC 2.0, no embedded newlines; the server may log on stderr).
-- Used by abx.accept.skill_tools for the filesystem server releases.
local core = require("abx.core")
local cjson = require("cjson")

local M = {}

-- The protocol version the client asks for (MCP specification 2025-06-18); the server answers
-- the one it speaks, which the runner reports.
M.PROTOCOL_VERSION = "2025-06-18"

local Client = {}
Client.__index = Client

---Starts `cmd` in the sandbox as the MCP server and returns a client for it.
---Raises: as Commands:run.
---@param sbx table abx.Sandbox
---@param cmd string
---@param opts? {cwd?: string}
---@return table client
function M.start(sbx, cmd, opts)
  local c = setmetatable({ buf = "", answers = {}, notes = {}, stderr = {}, bad_lines = 0,
    next_id = 0 }, Client)
  c.handle = sbx.commands:run(cmd, { background = true, stdin = true, timeout = 0,
    cwd = opts and opts.cwd,
    on_stdout = function(chunk) c:_feed(chunk) end,
    on_stderr = function(chunk) c.stderr[#c.stderr + 1] = chunk end })
  return c
end

function Client:_feed(chunk)
  self.buf = self.buf .. chunk
  while true do
    local line, rest = self.buf:match("^([^\n]*)\n(.*)$")
    if not line then break end
    self.buf = rest
    if line:match("%S") then
      local ok, msg = pcall(cjson.decode, line)
      if ok and type(msg) == "table" and msg.id ~= nil and (msg.result ~= nil or msg.error ~= nil) then
        self.answers[msg.id] = msg
      elseif ok and type(msg) == "table" then
        self.notes[#self.notes + 1] = msg -- server notifications and requests
      else
        self.bad_lines = self.bad_lines + 1 -- stdout must carry only JSON-RPC messages
      end
    end
  end
end

---Sends one notification (no answer).
---@param method string
---@param params? table
function Client:notify(method, params)
  local m = { jsonrpc = "2.0", method = method }
  if params then m.params = params end
  self.handle:send_stdin(cjson.encode(m) .. "\n")
end

---Sends one request and waits for its answer.
---Raises: Timeout (no answer within `timeout` seconds), Sandbox (a JSON-RPC error answer, its
---code and message named).
---@param method string
---@param params? table
---@param timeout? number seconds (default 20)
---@return table result
function Client:request(method, params, timeout)
  self.next_id = self.next_id + 1
  local id = self.next_id
  self.handle:send_stdin(cjson.encode({ jsonrpc = "2.0", id = id, method = method,
    params = params or {} }) .. "\n")
  local deadline = core.now() + (timeout or 20)
  while not self.answers[id] do
    if self.handle:done() then
      core.error("Sandbox", 0, string.format("the MCP server ended before answering %s", method))
    end
    if core.now() > deadline then
      core.error("Timeout", 0, string.format("the MCP server did not answer %s within %d s",
        method, math.tointeger(timeout or 20)))
    end
    core.sleep(0.05)
  end
  local a = self.answers[id]
  if a.error ~= nil then
    core.error("Sandbox", 0, string.format("%s answered JSON-RPC error %s: %s", method,
      tostring(type(a.error) == "table" and a.error.code), tostring(type(a.error) == "table"
        and a.error.message)))
  end
  return a.result
end

---Everything the server wrote on stderr so far.
---@return string
function Client:log()
  return table.concat(self.stderr)
end

---Ends the server: closes its stdin (the stdio transport's shutdown: the server should exit),
---then SIGKILL when it has not ended within `grace` seconds. Never raises.
---@param grace? number seconds (default 5)
---@return string how "exited on stdin close" | "killed" | "already gone"
function Client:stop(grace)
  if self.handle:done() then return "already gone" end
  pcall(self.handle.close_stdin, self.handle)
  local deadline = core.now() + (grace or 5)
  while not self.handle:done() and core.now() < deadline do core.sleep(0.05) end
  if self.handle:done() then return "exited on stdin close" end
  pcall(self.handle.kill, self.handle)
  deadline = core.now() + 5
  while not self.handle:done() and core.now() < deadline do core.sleep(0.05) end
  return "killed"
end

return M
