-- abx.client.opensandbox_wire: OpenSandbox's wire as pure functions (no I/O), for the adapter
-- abx.client.opensandbox (lifecycle API) and abx.client.opensandbox_execd (execd): the create body
-- from conn:create's options, sandbox states, SandboxInfo from a `Sandbox` answer, the endpoint
-- URL, error bodies {code, message} -> abx error kinds, the SSE framing of execd's streams and a
-- command's events -> CommandResult.
--
-- Sources: alibaba/OpenSandbox @3bb6fad specs/sandbox-lifecycle.yml (CreateSandboxRequest,
--   Sandbox, SandboxStatus/SandboxState, Endpoint, ErrorResponse, ListSandboxesResponse);
--   specs/execd-api.yaml (ServerStreamEvent, RunCommandRequest, ErrorResponse);
--   execd's framing (components/execd/pkg/web/controller/sse.go): each event is its JSON object
--   followed by "\n\n", without a `data:` field name; standard SSE `data:` lines are read too, as
--   the official SDKs do (sdks/sandbox/python .../command_adapter.py _decode_sse_event_line).
--   A command that exits non-zero ends with an `error` event {ename: "CommandExecError", evalue:
--   "<exit code>", traceback: ["exit status N"]} and no execution_complete; exit 0 ends with
--   execution_complete (components/execd/pkg/runtime/command.go).
-- Errors: InvalidArgument for options of the wrong shape; Protocol for a stream or body that is
--   not the documented shape (never a dropped value).

local cjson = require("cjson")
local errmap = require("abx.client.errmap")
local options = require("abx.client.options")
local e2b_wire = require("abx.client.sandbox_wire") -- its SandboxInfo shape: the same fields

local M = {}

--- The entry process and resource limits every create sends: CreateSandboxRequest requires both
--- with `image` (sandbox-lifecycle.yml); the official SDKs' defaults (sdks/sandbox/python
--- .../sandbox.py: ["tail", "-f", "/dev/null"], {cpu = "1", memory = "2Gi"}).
M.ENTRYPOINT = { "tail", "-f", "/dev/null" }
M.RESOURCE_LIMITS = { cpu = "1", memory = "2Gi" }

--- The execd port (execd-api.yaml servers: localhost:44772).
M.EXECD_PORT = 44772

--- The documented SandboxState values (sandbox-lifecycle.yml SandboxState).
M.STATES = { "Pending", "Running", "Pausing", "Paused", "Resuming", "Stopping", "Terminated", "Failed" }
local KNOWN_STATE = {}
for _, s in ipairs(M.STATES) do KNOWN_STATE[s] = true end

--- The ServerStreamEvent types (execd-api.yaml).
M.EVENT_TYPES = { "init", "status", "error", "stdout", "stderr", "result", "execution_complete",
  "execution_count", "ping" }
local KNOWN_EVENT = {}
for _, s in ipairs(M.EVENT_TYPES) do KNOWN_EVENT[s] = true end

-- HTTP status -> abx kind for OpenSandbox's lifecycle API and execd (both answer ErrorResponse
-- {code, message}; the server's 401 codes are MISSING_API_KEY and INVALID_API_KEY,
-- server/opensandbox_server/middleware/auth.py); 403 (Forbidden: the key lacks permission) is a
-- credential refusal too. A 404
-- is the caller's (SandboxNotFound on a sandbox route, NotFound for a file).
local KIND = {
  [400] = "InvalidArgument",
  [401] = "Authentication",
  [403] = "Authentication",
  [404] = "NotFound",
  [409] = "Conflict",
  [413] = "PayloadTooLarge",
  [416] = "InvalidArgument",
  [422] = "InvalidArgument", -- FastAPI's request validation (the lifecycle server is FastAPI)
  [429] = "RateLimit",
  [502] = "SandboxGone",
  [503] = "SandboxGone",
  [504] = "Timeout",
  [507] = "NotEnoughSpace",
}

--- The kind of an OpenSandbox error answer.
--- Raises: nothing.
---@param status integer
---@param not_found_kind? string the kind of a 404 on this route (default "NotFound")
---@return string
function M.error_kind(status, not_found_kind)
  if status == 404 and not_found_kind then return not_found_kind end
  return KIND[status] or "Sandbox"
end

--- Raises the abx error of an OpenSandbox (lifecycle or execd) answer whose status is not a
--- success: the kind from the status (M.error_kind), the message and `code` (e.g. "NOT_FOUND",
--- "FILE_NOT_FOUND") from an ErrorResponse body, else the raw body text. A gateway's bare
--- 502/503/504 (errmap.bare_gateway) is Unavailable after resp.attempts attempts.
--- Raises: always (the mapped kind, Unavailable).
---@param resp {status: integer, body: string|nil}
---@param request string "METHOD path"
---@param not_found_kind? string
function M.raise_error(resp, request, not_found_kind)
  if errmap.bare_gateway(resp.status, resp.body) then
    errmap.raise_unavailable(resp.status, resp.body, request, resp.attempts, resp.not_retried)
  end
  local obj = errmap.decode_object(resp.body)
  local extra = { request = request }
  local msg
  if obj and type(obj.code) == "string" then extra.code = obj.code end
  if obj and type(obj.message) == "string" and obj.message ~= "" then
    msg = obj.message
  elseif type(resp.body) == "string" and resp.body ~= "" then
    msg = resp.body:sub(1, 512)
  else
    msg = "(empty body)"
  end
  errmap.raise(M.error_kind(resp.status, not_found_kind), resp.status, msg, extra)
end

--- The Skipped error of a primitive OpenSandbox has no equivalent of (the runner turns it into a
--- skipped outcome with this reason).
--- Raises: always, Skipped "provider <name> (opensandbox) has no equivalent of <primitive>:
--- missing capability".
---@param provider string|nil the provider's name (conn.provider_name; default "opensandbox")
---@param primitive string e.g. "sbx:get_metrics"
function M.skip(provider, primitive)
  errmap.raise("Skipped", 0, string.format("provider %s (opensandbox) has no equivalent of %s: "
    .. "missing capability", provider or "opensandbox", primitive))
end

local function string_map(t, what)
  if t == nil then return nil end
  local out, any = {}, false
  for k, v in pairs(t) do
    if type(k) ~= "string" or type(v) ~= "string" then
      errmap.raise("InvalidArgument", 0, what .. " must map strings to strings")
    end
    out[k], any = v, true
  end
  return any and out or nil
end

--- The CreateSandboxRequest body (sandbox-lifecycle.yml) from conn:create's options after the
--- connection applied its defaults: `template` is image.uri, `timeout` seconds (already checked
--- against the provider's bounds), `envs` -> env, `metadata` as given, `secure = true` ->
--- secureAccess (left out otherwise: the spec's default false; OpenSandbox's Docker runtime answers
--- 400 to secureAccess, server .../services/docker/networking.py).
--- Raises: InvalidArgument (template not a non-empty string, timeout not a whole number, envs or
--- metadata not string maps).
---@param o {template: string, timeout: integer, envs?: table, metadata?: table, secure?: boolean}
---@return table body
function M.create_body(o)
  if type(o.template) ~= "string" or o.template == "" then
    errmap.raise("InvalidArgument", 0, "conn:create: template must be a non-empty string (OpenSandbox "
      .. "image.uri), got " .. tostring(o.template))
  end
  if math.type(o.timeout) ~= "integer" then
    errmap.raise("InvalidArgument", 0, "conn:create: timeout must be a whole number of seconds, got "
      .. tostring(o.timeout))
  end
  local rl = {}
  for k, v in pairs(M.RESOURCE_LIMITS) do rl[k] = v end
  local ep = {}
  for i, v in ipairs(M.ENTRYPOINT) do ep[i] = v end
  return {
    image = { uri = o.template },
    timeout = o.timeout,
    entrypoint = ep,
    resourceLimits = rl,
    env = string_map(o.envs, "conn:create: envs"),
    metadata = string_map(o.metadata, "conn:create: metadata"),
    secureAccess = o.secure == true or nil, -- sent only when asked: the spec's default is false
  }
end

--- The state of a `Sandbox` / `CreateSandboxResponse` answer and its status reason and message.
--- Raises: Protocol (no status.state string).
---@param s table decoded answer
---@param status integer HTTP status it came with
---@param request string
---@return string state, string|nil reason, string|nil message
function M.state_of(s, status, request)
  local st = type(s) == "table" and s.status
  if type(st) ~= "table" or type(st.state) ~= "string" then
    errmap.raise_protocol(status, request, "a Sandbox with status.state")
  end
  local reason = type(st.reason) == "string" and st.reason or nil
  local message = type(st.message) == "string" and st.message or nil
  return st.state, reason, message
end

--- Whether a state is Running (the only one execd answers in).
---@param state string
---@return boolean
function M.is_running(state)
  return state == "Running"
end

--- Whether a state means the sandbox will not run again: Failed, Terminated, or Stopping (on its
--- way to Terminated).
---@param state string
---@return boolean
function M.is_final(state)
  return state == "Failed" or state == "Terminated" or state == "Stopping"
end

--- Whether a state is one of the documented SandboxState values; the spec says new values may be
--- added, so an unknown one is waited through while polling, never taken for Running.
---@param state string
---@return boolean
function M.is_known_state(state)
  return KNOWN_STATE[state] == true
end

--- The lower-case state of SandboxInfo ("running", "paused", "pending", ...), as E2B's
--- "running"/"paused" for the two states it shares.
---@param state string
---@return string
function M.info_state(state)
  return state:lower()
end

--- SandboxInfo (the E2B client's snake_case shape) of an OpenSandbox `Sandbox`: sandbox_id = id,
--- template_id = image.uri (or the snapshotId it was restored from), state lower-cased,
--- started_at = createdAt, end_at = expiresAt (nil: manual cleanup), metadata. Fields
--- OpenSandbox does not give (envd_version, cpu_count, memory_mb, domain) are nil.
--- Raises: Protocol (no id or status.state).
---@param d table
---@param status integer
---@param request string
---@return table info
function M.info_of(d, status, request)
  if type(d) ~= "table" or type(d.id) ~= "string" then
    errmap.raise_protocol(status, request, "a Sandbox with id")
  end
  local state = M.state_of(d, status, request)
  local function opt(v) if v == cjson.null then return nil end return v end
  local template = type(d.image) == "table" and opt(d.image.uri) or opt(d.snapshotId)
  local info = {
    sandbox_id = d.id,
    template_id = template,
    state = M.info_state(state),
    metadata = type(d.metadata) == "table" and d.metadata or {},
    started_at = opt(d.createdAt),
    end_at = opt(d.expiresAt),
    -- the local opensandbox flavour's extension (as the local E2B platform's abxNetwork)
    abx_network = type(d.abxNetwork) == "table" and {
      host_address = d.abxNetwork.hostAddress, sandbox_address = d.abxNetwork.sandboxAddress,
    } or nil,
  }
  return options.strict(e2b_wire.INFO, info)
end

--- The execd (or any port's) base URL from an Endpoint answer: the endpoint with the API URL's
--- scheme prepended when it has none (the spec's example has none:
--- "endpoint.opensandbox.io/sandboxes/abc123/port/8080"), without a trailing slash; and its
--- headers (Endpoint.headers: X-EXECD-ACCESS-TOKEN with secureAccess).
--- Raises: Protocol (no endpoint string, headers not a string map).
---@param api_url string e.g. "https://api.example.com/v1"
---@param e table decoded Endpoint
---@param status integer
---@param request string
---@return string url, table<string,string> headers
function M.endpoint_url(api_url, e, status, request)
  if type(e) ~= "table" or type(e.endpoint) ~= "string" or e.endpoint == "" then
    errmap.raise_protocol(status, request, "an Endpoint with endpoint")
  end
  local h = {}
  if e.headers ~= nil and e.headers ~= cjson.null then
    if type(e.headers) ~= "table" then
      errmap.raise_protocol(status, request, "Endpoint.headers as an object of strings")
    end
    for k, v in pairs(e.headers) do
      if type(k) ~= "string" or type(v) ~= "string" then
        errmap.raise_protocol(status, request, "Endpoint.headers as an object of strings")
      end
      h[k] = v
    end
  end
  local url = e.endpoint
  if not url:match("^[%a][%w+.-]*://") then
    local scheme = api_url:match("^([%a][%w+.-]*)://") or "http"
    url = scheme .. "://" .. url
  end
  return (url:gsub("/+$", "")), h
end

--- The `metadata` filter of GET /sandboxes: "k=v&k2=v2" with keys and values percent-encoded,
--- the whole string encoded again as the parameter value (sandbox-lifecycle.yml: "keys and values
--- must be url encoded"); the server decodes the parameter and splits it with parse_qsl, which
--- decodes each key and value again (server/opensandbox_server/api/lifecycle.py), so a value
--- holding "&", "=" or a space comes back intact.
---@param md table<string,string>
---@param quote fun(s: string): string percent-encoding (abx.client.envd.quote)
---@return string the value before the query's own encoding
function M.metadata_filter(md, quote)
  local keys = {}
  for k in pairs(md) do keys[#keys + 1] = k end
  table.sort(keys)
  local kv = {}
  for _, k in ipairs(keys) do kv[#kv + 1] = quote(k) .. "=" .. quote(tostring(md[k])) end
  return table.concat(kv, "&")
end

--- The items of a ListSandboxesResponse as SandboxInfo, with its pagination object.
--- Raises: Protocol (no items array or pagination object).
---@param body any decoded answer
---@param status integer
---@param request string
---@return table[] infos, table pagination
function M.list_items(body, status, request)
  if type(body) ~= "table" or type(body.items) ~= "table" or type(body.pagination) ~= "table" then
    errmap.raise_protocol(status, request, "{items, pagination} (ListSandboxesResponse)")
  end
  local out = {}
  for i, d in ipairs(body.items) do out[i] = M.info_of(d, status, request) end
  return out, body.pagination
end

-- SSE --------------------------------------------------------------------------------------------

local function sse_fail(request, what)
  errmap.raise("Protocol", 200, "unexpected answer: " .. what, { request = request })
end

--- Decodes one event's data (a ServerStreamEvent JSON object with a known `type`).
--- Raises: Protocol naming the event's number.
local function decode_event(data, n, request)
  local ok, v = pcall(cjson.decode, data)
  if not ok or type(v) ~= "table" then
    sse_fail(request, string.format("SSE event %d is not a JSON object: %s", n, data:sub(1, 200)))
  end
  if type(v.type) ~= "string" then
    sse_fail(request, string.format("SSE event %d has no string `type`", n))
  end
  if not KNOWN_EVENT[v.type] then
    sse_fail(request, string.format("SSE event %d has an unknown type %q (known: %s)", n, v.type,
      table.concat(M.EVENT_TYPES, ", ")))
  end
  return v
end

---@class abx.SseParser
local Parser = {}
Parser.__index = Parser

--- An incremental parser of execd's SSE stream: parser:feed(chunk) returns the events completed
--- by that chunk (decoded ServerStreamEvent tables, in order); parser:finish() those left at the
--- end of the body. Lines end with "\n" (a "\r" before it is dropped); an empty line ends an event;
--- `data:` lines (one leading space removed) are joined with "\n"; `event:`, `id:`, `retry:` and
--- comment (":") lines are ignored; a line that starts with "{" is a data line (execd's own
--- framing, see the file header). Any other line, bad JSON, or an unknown `type` is Protocol.
---@param request string "POST /command", for errors
---@return abx.SseParser
function M.sse_parser(request)
  return setmetatable({ buf = "", data = nil, n = 0, request = request }, Parser)
end

function Parser:_line(line, out)
  if line:sub(-1) == "\r" then line = line:sub(1, -2) end
  if line == "" then
    if self.data then
      self.n = self.n + 1
      out[#out + 1] = decode_event(table.concat(self.data, "\n"), self.n, self.request)
      self.data = nil
    end
    return
  end
  local value
  if line:sub(1, 5) == "data:" then
    value = line:sub(6)
    if value:sub(1, 1) == " " then value = value:sub(2) end
  elseif line:sub(1, 1) == "{" then
    value = line
  elseif line:sub(1, 1) == ":" or line:match("^event:") or line:match("^id:")
    or line:match("^retry:") then
    return
  else
    sse_fail(self.request, string.format("SSE line after event %d is neither a field nor a JSON "
      .. "event: %s", self.n, line:sub(1, 200)))
  end
  self.data = self.data or {}
  self.data[#self.data + 1] = value
end

--- Feeds a chunk of the body. Returns the events it completed.
--- Raises: Protocol (see M.sse_parser).
---@param chunk string
---@return table[]
function Parser:feed(chunk)
  local out = {}
  local buf = self.buf .. chunk
  local start = 1
  while true do
    local nl = buf:find("\n", start, true)
    if not nl then break end
    self:_line(buf:sub(start, nl - 1), out)
    start = nl + 1
  end
  self.buf = buf:sub(start)
  return out
end

--- Ends the body: a last line without "\n" and an event without its empty line are completed
--- (the end of the body ends them). Returns those events.
--- Raises: Protocol (see M.sse_parser).
---@return table[]
function Parser:finish()
  local out = {}
  if self.buf ~= "" then
    local rest = self.buf
    self.buf = ""
    self:_line(rest, out)
  end
  self:_line("", out)
  return out
end

-- Commands ---------------------------------------------------------------------------------------

--- The bytes one stdout/stderr event stands for. execd reads a command's output line by line and
--- sends each line without its terminator ("\n", "\r" or "\r\n"), a blank line as "\n", and a
--- last line without a terminator as it is (components/execd/pkg/runtime/command_common.go
--- readFromPos): so a line gets its "\n" back and "\n" stays one. What the wire cannot tell is
--- kept as the common case: a final line without "\n" comes back with one, and "\r" ends are "\n".
---@param text string
---@return string
function M.line_text(text)
  if text == "\n" then return "\n" end
  return text .. "\n"
end

--- A fresh accumulator of one command's events (M.command_apply fills it).
---@return table
function M.command_state()
  return { out = {}, err = {}, id = nil, error = nil, complete = false, n = 0 }
end

--- Applies one ServerStreamEvent of POST /command to a command's state: init {text = command id},
--- stdout/stderr {text = one line, M.line_text}, error {error = {ename, evalue, traceback}}, execution_complete; ping,
--- status and execution_count carry nothing for a command. `result` (a code cell's output) is
--- not a command's: Protocol. A text that is not a string is Protocol. Returns the chunk and
--- "stdout"/"stderr" for an output event (for callbacks), nil otherwise.
--- Raises: Protocol.
---@param st table from M.command_state
---@param ev table a decoded event
---@param request string
---@return string|nil chunk, string|nil stream
function M.command_apply(st, ev, request)
  st.n = st.n + 1
  local t = ev.type
  if t == "stdout" or t == "stderr" then
    if type(ev.text) ~= "string" then
      sse_fail(request, string.format("%s event %d has no string text", t, st.n))
    end
    -- one event per line, its terminator left out; a blank line is "\n" (see M.line_text)
    local chunk = M.line_text(ev.text)
    local into = t == "stdout" and st.out or st.err
    into[#into + 1] = chunk
    return chunk, t
  elseif t == "init" then
    if type(ev.text) ~= "string" or ev.text == "" then
      sse_fail(request, string.format("init event %d has no command id (text)", st.n))
    end
    st.id = ev.text
  elseif t == "error" then
    local e = ev.error
    if type(e) ~= "table" then
      sse_fail(request, string.format("error event %d has no error object", st.n))
    end
    st.error = {
      ename = type(e.ename) == "string" and e.ename or nil,
      evalue = type(e.evalue) == "string" and e.evalue or nil,
      traceback = type(e.traceback) == "table" and e.traceback or {},
    }
  elseif t == "execution_complete" then
    st.complete = true
  elseif t == "result" then
    sse_fail(request, string.format("event %d is a code cell's result, not a command's", st.n))
  end
  return nil
end

--- The CommandResult fields of a finished command: execution_complete -> exit_code 0; an error
--- event whose evalue is the exit code -> that code (-1: killed by a signal, as Go reports it)
--- and `error` = its first traceback line ("exit status 2", "signal: killed"). Returns nil and
--- the message when the error event carries no exit code (the command did not start).
--- Raises: Protocol (the stream ended with neither execution_complete nor an error event).
---@param st table
---@param request string
---@return table|nil fields {stdout, stderr, exit_code, error}, string|nil start_error
function M.command_result(st, request)
  local fields = { stdout = table.concat(st.out), stderr = table.concat(st.err) }
  if st.error then
    local code = math.tointeger(tonumber(st.error.evalue or ""))
    local text = st.error.traceback[1]
    if type(text) ~= "string" then
      text = (st.error.ename or "error") .. ": " .. tostring(st.error.evalue)
    end
    if not code then return nil, text end
    fields.exit_code, fields.error = code, text
    return fields
  end
  if st.complete then
    fields.exit_code = 0
    return fields
  end
  sse_fail(request, "the command stream ended without execution_complete or an error event")
end

return M
