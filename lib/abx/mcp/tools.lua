-- abx.mcp.tools: the tools of `abxlua mcp` and the book of what the server owns.
--
-- Tools (inputSchema: JSON Schema, additionalProperties false everywhere):
--   create_sandbox {template?, timeout? (seconds, 1..max_timeout), metadata? (allowlisted keys)}
--   run_command    {sandbox_id, command, cwd?, envs?, timeout? (seconds, 1..3600)}
--   read_file      {sandbox_id, path, encoding? "utf-8" | "base64"}
--   write_file     {sandbox_id, path, content, encoding? "utf-8" | "base64"}
--   list_sandboxes {scope? "owned" | "all"}   ("all" only when the server runs with --list-all)
--   kill_sandbox   {sandbox_id}
-- Ownership: every sandbox the server creates carries metadata e2e=<run id> and
-- mcp_owner=<owner> (this server instance's random id); the book records it with the session
-- that created it. Tools act only on the calling session's own sandboxes (anything else is a tool
-- error naming the rule); at a session's end (HTTP DELETE) its sandboxes are killed, at the
-- server's end all of them, then a sweep by the mcp_owner tag kills any the book missed (a create
-- whose answer was lost). A sandbox without this server's owner tag is never killed.
-- Results: content [{type = "text", text = <the result as JSON>}], and structuredContent (the
-- same table) from protocol 2025-06-18 on; isError = true for a tool failure (the platform
-- refused, the sandbox is not this session's, a file is not UTF-8). A command's non-zero exit is
-- a result (exit_code), not a tool error, as commands:run treats it.
-- Source: MCP specification 2025-11-25 server/tools (Tool, CallToolResult, error handling).
local core = require("abx.core")
local json = require("abx.mcp.json")
local schema = require("abx.mcp.schema")

local M = {}

-- Metadata keys the server sets itself: never allowlisted (a caller could forge ownership).
M.RESERVED = { e2e = true, mcp_owner = true, e2e_attempt = true }
M.MAX_OUTPUT = 1024 * 1024      -- bytes of stdout or stderr kept in a run_command result
M.MAX_FILE = 4 * 1024 * 1024    -- bytes a read_file returns at most
M.MAX_VALUE = 256               -- characters of one metadata value

local Book = {}
Book.__index = Book

---A new book of owned sandboxes and the tools over it.
---@param o {conn: table, run_id: string, owner: string, allow: string[], max_timeout: integer,
---  template: string, list_all: boolean, log: fun(s: string)}
---@return table
function M.new(o)
  local b = setmetatable({ conn = o.conn, run_id = o.run_id, owner = o.owner,
    allow = o.allow or {}, max_timeout = o.max_timeout, template = o.template,
    list_all = o.list_all == true, log = o.log or function() end,
    sandboxes = {}, order = {}, creating = 0, closing = false }, Book)
  b.defs = b:definitions()
  return b
end

local function id_schema()
  return { type = "string", minLength = 1, maxLength = 128,
    description = "a sandbox id create_sandbox returned in this session" }
end

function Book:definitions()
  local meta = { type = "object", additionalProperties = false, properties = {},
    description = "sandbox metadata; allowed keys: " .. (#self.allow > 0
      and table.concat(self.allow, ", ") or "none (the server has no --metadata-allow)") }
  for _, k in ipairs(self.allow) do
    meta.properties[k] = { type = "string", maxLength = M.MAX_VALUE }
  end
  local enc = { type = "string", enum = { "utf-8", "base64" },
    description = "how content is given: utf-8 text (default) or base64 bytes" }
  return {
    { name = "create_sandbox", title = "Create a sandbox", readonly = false, destructive = false,
      description = "Creates a sandbox owned by this session; it is killed when the session or the "
        .. "server ends, or when its timeout passes.",
      schema = { type = "object", additionalProperties = false, properties = {
        template = { type = "string", minLength = 1, maxLength = 128,
          description = "template id or alias (default " .. self.template .. ")" },
        timeout = { type = "integer", minimum = 1, maximum = self.max_timeout,
          description = "seconds the sandbox lives (TTL; default 300)" },
        metadata = meta } } },
    { name = "run_command", title = "Run a command", readonly = false, destructive = true,
      description = "Runs a shell command (bash -l -c) in one of this session's sandboxes; returns "
        .. "exit_code, stdout and stderr (each kept up to 1 MiB).",
      schema = { type = "object", additionalProperties = false, required = { "sandbox_id", "command" },
        properties = {
          sandbox_id = id_schema(),
          command = { type = "string", minLength = 1, maxLength = 65536 },
          cwd = { type = "string", minLength = 1, maxLength = 4096 },
          envs = { type = "object", additionalProperties = { type = "string" } },
          timeout = { type = "integer", minimum = 1, maximum = 3600,
            description = "seconds the command may run (default 60)" } } } },
    { name = "read_file", title = "Read a file", readonly = true, destructive = false,
      description = "Reads a file (at most 4 MiB) of one of this session's sandboxes.",
      schema = { type = "object", additionalProperties = false, required = { "sandbox_id", "path" },
        properties = { sandbox_id = id_schema(),
          path = { type = "string", minLength = 1, maxLength = 4096 }, encoding = enc } } },
    { name = "write_file", title = "Write a file", readonly = false, destructive = true,
      description = "Writes a file (created with its parent directories, replaced when it exists) "
        .. "in one of this session's sandboxes.",
      schema = { type = "object", additionalProperties = false,
        required = { "sandbox_id", "path", "content" },
        properties = { sandbox_id = id_schema(),
          path = { type = "string", minLength = 1, maxLength = 4096 },
          content = { type = "string" }, encoding = enc } } },
    { name = "list_sandboxes", title = "List sandboxes", readonly = true, destructive = false,
      description = "Lists this session's running sandboxes as the platform lists them (listing "
        .. "may lag a create); scope all lists every sandbox of the account (only with the "
        .. "server's --list-all).",
      schema = { type = "object", additionalProperties = false, properties = {
        scope = { type = "string", enum = { "owned", "all" }, description = "default owned" } } } },
    { name = "kill_sandbox", title = "Kill a sandbox", readonly = false, destructive = true,
      description = "Kills one of this session's sandboxes.",
      schema = { type = "object", additionalProperties = false, required = { "sandbox_id" },
        properties = { sandbox_id = id_schema() } } },
  }
end

---The tools/list entries for a protocol version (title from 2025-06-18, annotations from
---2025-03-26: the revisions that added them).
---@param version string
---@return table[]
function Book:list(version)
  local out = json.array()
  for _, d in ipairs(self.defs) do
    local t = { name = d.name, description = d.description, inputSchema = d.schema }
    if version >= "2025-06-18" then t.title = d.title end
    if version >= "2025-03-26" then
      t.annotations = { readOnlyHint = d.readonly, destructiveHint = d.destructive,
        idempotentHint = false, openWorldHint = false }
    end
    out[#out + 1] = t
  end
  return out
end

---The definition of a tool, or nil.
function Book:find(name)
  for _, d in ipairs(self.defs) do
    if d.name == name then return d end
  end
  return nil
end

---Checks arguments; returns the error message or nil. A metadata key off the allowlist gets a
---message naming the allowlist and how to change it.
function Book:check(d, args)
  local err = schema.check(d.schema, args)
  if err then
    local key = err:match('^arguments%.metadata: unknown property "(.-)"')
    if key then
      err = string.format("metadata key %q is not allowed by this server (allowed: %s; the server "
        .. "sets them with --metadata-allow KEY,... or mcp.metadata_allow in the config)", key,
        #self.allow > 0 and table.concat(self.allow, ", ") or "none")
    end
  end
  return err
end

local function tool_error(msg)
  error({ tool_error = msg }, 0)
end

local function owned(self, session, id)
  local rec = self.sandboxes[id]
  if not rec or rec.session ~= session then
    tool_error(string.format("sandbox %s was not created by this MCP session: this server acts "
      .. "only on the sandboxes a session created itself", id))
  end
  return rec
end

local function info_row(info, mine)
  return { sandbox_id = info.sandbox_id, template_id = info.template_id, state = info.state,
    started_at = info.started_at, end_at = info.end_at, metadata = info.metadata or {},
    owned = mine }
end

local handlers = {}

function handlers.create_sandbox(self, session, a)
  if self.closing then tool_error("the server is shutting down: no new sandboxes") end
  local metadata = {}
  for k, v in pairs(a.metadata or {}) do metadata[k] = v end
  self.creating = self.creating + 1
  local ok, sbx = pcall(self.conn.create, self.conn, { template = a.template or self.template,
    timeout = math.tointeger(a.timeout) or 300, metadata = metadata })
  self.creating = self.creating - 1
  if not ok then error(sbx, 0) end
  if self.closing then -- the server began its shutdown meanwhile: this one goes at once
    pcall(sbx.kill, sbx)
    tool_error("the server is shutting down: the new sandbox " .. sbx.id .. " was killed")
  end
  self.sandboxes[sbx.id] = { sbx = sbx, session = session }
  self.order[#self.order + 1] = sbx.id
  self.log(string.format("created sandbox %s (session %s)", sbx.id, session))
  local info = sbx:get_info()
  return { sandbox_id = sbx.id, template_id = info.template_id, started_at = info.started_at,
    end_at = info.end_at, metadata = info.metadata or {} }
end

function handlers.run_command(self, session, a)
  local rec = owned(self, session, a.sandbox_id)
  local r = rec.sbx.commands:run(a.command, { cwd = a.cwd, envs = a.envs,
    timeout = math.tointeger(a.timeout) or 60 })
  local out = { exit_code = r.exit_code, stdout = r.stdout or "", stderr = r.stderr or "",
    error = r.error }
  for _, f in ipairs({ "stdout", "stderr" }) do
    if #out[f] > M.MAX_OUTPUT then
      out[f] = out[f]:sub(1, M.MAX_OUTPUT)
      out[f .. "_truncated"] = true
    end
    if not utf8.len(out[f]) then
      out[f] = core.b64encode(out[f])
      out[f .. "_encoding"] = "base64" -- not UTF-8: a JSON string cannot carry it as text
    end
  end
  return out
end

function handlers.read_file(self, session, a)
  local rec = owned(self, session, a.sandbox_id)
  local data = rec.sbx.files:read(a.path, { format = "bytes", max_body = M.MAX_FILE })
  local enc = a.encoding or "utf-8"
  if enc == "utf-8" and not utf8.len(data) then
    tool_error(a.path .. " is not valid UTF-8 text; read it with encoding base64")
  end
  return { path = a.path, encoding = enc, bytes = #data,
    content = enc == "base64" and core.b64encode(data) or data }
end

function handlers.write_file(self, session, a)
  local rec = owned(self, session, a.sandbox_id)
  local data = a.content
  if a.encoding == "base64" then
    data = core.b64decode(a.content)
    if not data then tool_error("content is not base64 (encoding base64)") end
  end
  rec.sbx.files:write(a.path, data)
  return { path = a.path, bytes = #data }
end

function handlers.list_sandboxes(self, session, a)
  local scope = a.scope or "owned"
  if scope == "all" and not self.list_all then
    tool_error("scope all needs the server's --list-all (it lists every sandbox of the account); "
      .. "scope owned lists this session's")
  end
  local filter = scope == "owned" and { metadata = { mcp_owner = self.owner } } or {}
  local rows = json.array()
  for _, info in ipairs(self.conn:list(filter)) do
    local rec = self.sandboxes[info.sandbox_id]
    local mine = rec ~= nil and rec.session == session
    if scope == "all" or mine then rows[#rows + 1] = info_row(info, mine) end
  end
  return { scope = scope, sandboxes = rows }
end

function handlers.kill_sandbox(self, session, a)
  local rec = owned(self, session, a.sandbox_id)
  local killed = rec.sbx:kill()
  self.sandboxes[a.sandbox_id] = nil
  return { sandbox_id = a.sandbox_id, killed = killed }
end

---Runs a tool whose arguments passed Book:check. Returns the CallToolResult.
---@param session string
---@param d table the definition
---@param args table
---@param version string the session's protocol version
---@return table
function Book:call(session, d, args, version)
  local ok, res = pcall(handlers[d.name], self, session, args)
  local result
  if ok then
    result = { content = json.array({ { type = "text", text = json.encode(res) } }), isError = false }
    if version >= "2025-06-18" then result.structuredContent = res end
  else
    local msg
    if type(res) == "table" and res.tool_error then msg = res.tool_error
    elseif core.is_error(res) then msg = tostring(res)
    else msg = "internal error: " .. tostring(res) end
    result = M.error_result(d.name .. ": " .. msg)
  end
  return result
end

---A CallToolResult for a tool failure.
function M.error_result(msg)
  return { content = json.array({ { type = "text", text = msg } }), isError = true }
end

---Kills what `session` owns (nil: every owned sandbox). Returns killed, failures (id -> message).
function Book:kill_owned(session)
  local killed, failed = 0, {}
  for _, id in ipairs(self.order) do
    local rec = self.sandboxes[id]
    if rec and (session == nil or rec.session == session) then
      local ok, r = pcall(rec.sbx.kill, rec.sbx)
      if ok then
        self.sandboxes[id] = nil
        if r then killed = killed + 1 end
      else
        failed[id] = tostring(r)
      end
    end
  end
  return killed, failed
end

---The server's end: no new creates, every owned sandbox killed, creates in flight waited for
---(each kills its own sandbox), then a sweep by the owner tag. Returns killed, failures.
function Book:close(wait_s)
  self.closing = true
  local killed, failed = self:kill_owned(nil)
  local deadline = core.now() + (wait_s or 60)
  while self.creating > 0 and core.now() < deadline do core.sleep(0.05) end
  local ok, left = pcall(self.conn.list, self.conn, { metadata = { mcp_owner = self.owner } })
  if ok then
    for _, info in ipairs(left) do
      if type(info.metadata) == "table" and info.metadata.mcp_owner == self.owner then
        local kok, r = pcall(self.conn.kill, self.conn, info.sandbox_id)
        if kok and r then killed = killed + 1
        elseif not kok then failed[info.sandbox_id] = tostring(r) end
      end
    end
  else
    failed["(sweep by mcp_owner=" .. self.owner .. ")"] = tostring(left)
  end
  return killed, failed
end

return M
