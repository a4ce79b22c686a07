-- abx.client.code: the code interpreter of a sandbox (port 49999): sbx:run_code and the code contexts.
--
--   local ex = sbx:run_code("print('hi')\n1 + 1")
--   t.eq(ex.logs.stdout, { "hi\n" }); t.eq(ex.text, "2"); t.eq(ex.error, nil)
--   local c = sbx:create_code_context({ language = "python", cwd = "/tmp" })
--   sbx:run_code("x = 1", { context = c, on_stdout = function(text) print(text) end })
--   sbx:list_code_contexts(); sbx:restart_code_context(c); sbx:remove_code_context(c)
--
-- Routing: as for any port (abx.client.http): "<scheme>://49999-<id>.<domain>" or the fixed sandbox URL
-- with E2b-Sandbox-Id / E2b-Sandbox-Port: 49999; plus X-Access-Token (the sandbox's
-- envdAccessToken, when secure) and e2b-traffic-access-token (when traffic is restricted), the
-- headers the SDKs send (docs/protocol/envd-protocol.md §10; docs/protocol/e2b-control-plane.md §7).
-- Shapes:
--   Execution = { logs = { stdout = {string...}, stderr = {string...} },
--                 results = {Result...}, error = {name, value, traceback} | nil,
--                 execution_count = integer | nil, text = string | nil }
--     `text` is the text of the main result (is_main_result), as the SDKs' `execution.text`.
--   Result    = a `result` line without its `type`: is_main_result (boolean) and any of text,
--               html, markdown, svg, png, jpeg (base64), pdf, latex, json, javascript, data, chart,
--               extra, as the server sent them (None-valued keys are left out by the server).
--   Context   = { id = string, language = string, cwd = string }
-- Stream semantics (§10 "/execute stream", "Client behaviour"): one JSON object per line;
-- `keepalive` lines and unknown types are ignored; `end_of_execution` is the final line, and a
-- body that ends without it is a Protocol error; an `error` line is the code's error (run_code
-- returns it in `error`, it does not raise). Lines are read one at a time from the stream
-- (core.ndjson: bounded memory, backpressure), each at most 16 MiB.
-- Units: seconds. `timeout` bounds reading the body (default 60, 0 = none) and starts when the
-- headers arrive; `request_timeout` bounds the time until the headers (default: the connection's
-- request_timeout), as the SDKs' timeoutMs / requestTimeoutMs.
-- Errors: abx.error tables through abx.client.errmap.raise_code (400/422 InvalidArgument, 404 NotFound,
-- 401/403 Authentication, 502/503 SandboxGone, other statuses Sandbox), Protocol (malformed
-- stream), Timeout, Transport.
-- Source: docs/protocol/envd-protocol.md §10 "Code interpreter HTTP API (port 49999)".

local core = require("abx.core")
local cjson = require("cjson")
local errmap = require("abx.client.errmap")
local envd = require("abx.client.envd")
local api_call = require("abx.client.api_call")
local http = require("abx.client.http")
local options = require("abx.client.options")
local decode = require("abx.client.decode")

local code = {}

local TRAFFIC = { "traffic_token", "boolean|string", "false: no traffic token; a string: that one" }
local REQ_TIMEOUT = { "request_timeout", "number", "seconds until the answer's headers (default "
  .. "the connection's)" }
local RUN = options.define("sbx:run_code", "Runs code in the code interpreter (POST /execute): "
  .. "an Execution.", {
    { "language", "string", "language of the default context for it (not with context)" },
    { "context", "table|string", "a Context or its id" },
    { "envs", "table<string,string>", "environment variables for this execution" },
    { "timeout", "number", "seconds for the body from the headers on (default 60, 0 none)" },
    REQ_TIMEOUT, TRAFFIC,
    { "on_stdout", "function", "on_stdout(text, timestamp) per stdout line" },
    { "on_stderr", "function", "on_stderr(text, timestamp) per stderr line" },
    { "on_result", "function", "on_result(result) per Result" },
    { "on_error", "function", "on_error(error) for the code's error" },
  })
local CREATE = options.define("sbx:create_code_context", "Creates a code context: a Context.", {
    { "language", "string", "e.g. \"python\" (the server's default)" },
    { "cwd", "string", "working directory (default /home/user)" },
    REQ_TIMEOUT, TRAFFIC,
  })
local CALL = options.define("sbx:list_code_contexts", "Lists the code contexts (also the "
  .. "options of restart_code_context and remove_code_context).", { REQ_TIMEOUT, TRAFFIC })

local EXECUTION = options.shape("Execution", "What sbx:run_code returns.", {
    { "logs", "table", "{stdout = {string...}, stderr = {string...}}, the lines as they came" },
    { "results", "table", "Result[] in order" },
    { "error", "table?", "ExecutionError {name, value, traceback} when the code raised" },
    { "execution_count", "integer?", "the kernel's execution counter" },
    { "text", "string?", "the main result's text" },
  })
local FORMATS = { "text", "html", "markdown", "svg", "png", "jpeg", "pdf", "latex", "json",
  "javascript", "data", "chart", "extra" }
local result_fields = { { "is_main_result", "boolean", "whether this is the cell's value" } }
for _, f in ipairs(FORMATS) do
  result_fields[#result_fields + 1] = { f, "any?", "the " .. f .. " format, when the server sent it" }
end
local RESULT = options.shape("Result", "One result of an Execution: the formats the server sent.",
  result_fields)
local ERROR = options.shape("ExecutionError", "The code's error in an Execution.", {
    { "name", "string?", "e.g. \"NameError\"" },
    { "value", "string?", "the message" },
    { "traceback", "string?", "the traceback text" },
  })
local CONTEXT = options.shape("Context", "A code context.", {
    { "id", "string", "context id" },
    { "language", "string?", "its language" },
    { "cwd", "string?", "its working directory" },
  })

--- The result shapes (options.shape), for adapters that build them from another wire
--- (abx.client.opensandbox_code).
code.SHAPES = { Execution = EXECUTION, Result = RESULT, ExecutionError = ERROR, Context = CONTEXT }

--- The code interpreter's port inside a sandbox (docs/protocol/envd-protocol.md §10).
code.PORT = 49999

--- Default bound on reading an /execute body, seconds (the JS SDK's timeoutMs, §10).
code.TIMEOUT_S = 60

-- Answers other than the /execute stream (contexts, error texts) are small.
local MAX_BODY = 1024 * 1024

local function str(v) return type(v) == "string" and v or nil end

--- URL, connect_to and headers for `path` on the code interpreter (see the file header).
local function target(sbx, path, opts)
  local h = { ["Content-Type"] = "application/json" }
  local token = sbx:envd_request():token()
  if token then h["X-Access-Token"] = token end
  return http.target(sbx, code.PORT, path, { headers = h, traffic_token = opts.traffic_token })
end

--- One plain request to the code interpreter; returns the answer whatever its status.
local function call(sbx, method, path, body, opts)
  opts = opts or {}
  local url, connect_to, h = target(sbx, path, opts)
  -- a GET starts no work: a gateway's bare 502/503/504 to it is sent again (abx.client.api_call)
  return api_call.gateway_retry(method .. " " .. path, method == "GET", function()
    return core.request({
      method = method, url = url, headers = h, body = body and cjson.encode(body) or nil,
      timeout = opts.request_timeout or sbx.conn.request_timeout, max_body = MAX_BODY,
      connect_to = connect_to,
    })
  end)
end

--- A context id from a Context table or an id string.
local function context_id(ctx, what)
  if type(ctx) == "table" then ctx = ctx.id end
  if type(ctx) ~= "string" or ctx == "" then
    errmap.raise("InvalidArgument", 0, what .. ": a context (table with id) or a context id")
  end
  return ctx
end

--- A Context from a decoded answer, or a Protocol error.
local function context_of(v, status, request)
  if type(v) ~= "table" or type(v.id) ~= "string" then
    errmap.raise_protocol(status, request, "a Context {id, language, cwd}")
  end
  return options.strict(CONTEXT, { id = v.id, language = str(v.language), cwd = str(v.cwd) })
end

--- Starts POST /execute and returns the open NDJSON stream (core.ndjson) once its headers arrived
--- with status 200; used by code.run, and by tests that read the stream themselves.
--- Raises: the kind of a non-200 answer (errmap.raise_code), InvalidArgument (bad arguments),
--- Timeout (request_timeout before the headers), Transport.
---@param sbx abx.Sandbox
---@param src string the code
---@param opts? {language?: string, context?: table|string, envs?: table<string,string>,
---  timeout?: number, request_timeout?: number, traffic_token?: boolean|string}
---@return table stream, string request
function code.execute_stream(sbx, src, opts)
  opts = options.check(RUN, opts)
  if type(src) ~= "string" then
    errmap.raise("InvalidArgument", 0, "run_code: code must be a string, got " .. type(src))
  end
  local timeout = opts.timeout or code.TIMEOUT_S
  if type(timeout) ~= "number" or timeout < 0 then
    errmap.raise("InvalidArgument", 0, "run_code: timeout must be a number of seconds >= 0")
  end
  -- context_id and language together are sent as given: the server answers 400 (§10)
  local body = { code = src, language = opts.language }
  if opts.context ~= nil then body.context_id = context_id(opts.context, "run_code: context") end
  if opts.envs and next(opts.envs) then body.env_vars = opts.envs end
  local url, connect_to, h = target(sbx, "/execute", opts)
  local request = "POST /execute"
  local st = core.ndjson({
    url = url, headers = h, body = cjson.encode(body), connect_to = connect_to,
    headers_timeout = opts.request_timeout or sbx.conn.request_timeout,
    body_timeout = timeout, max_body = MAX_BODY,
  })
  errmap.check_stream(st, request, errmap.raise_code)
  return st, request
end

--- Applies one decoded line to the execution. Returns true at end_of_execution.
local function apply_line(ex, line, number, opts, request)
  local ty = line.type
  if ty == "stdout" or ty == "stderr" then
    decode.text(line.text, "sbx:run_code", "`text` of the " .. ty .. " line " .. number, request)
    local out = ex.logs[ty]
    out[#out + 1] = line.text
    local cb = opts["on_" .. ty]
    if cb then cb(line.text, str(line.timestamp)) end
  elseif ty == "result" then
    local r = {}
    for k, v in pairs(line) do
      if k ~= "type" and v ~= cjson.null then r[k] = v end
    end
    r.is_main_result = r.is_main_result == true
    if r.text ~= nil then decode.text(r.text, "sbx:run_code", "`text` of the result line " .. number, request) end
    ex.results[#ex.results + 1] = options.strict(RESULT, r)
    if r.is_main_result and type(r.text) == "string" then ex.text = r.text end
    if opts.on_result then opts.on_result(r) end
  elseif ty == "error" then
    local what = " of the error line " .. number
    ex.error = options.strict(ERROR, {
      name = decode.opt_text(line.name, "sbx:run_code", "`name`" .. what, request),
      value = decode.opt_text(line.value, "sbx:run_code", "`value`" .. what, request),
      traceback = decode.opt_text(line.traceback, "sbx:run_code", "`traceback`" .. what, request),
    })
    if opts.on_error then opts.on_error(ex.error) end
  elseif ty == "number_of_executions" then
    ex.execution_count = math.tointeger(line.execution_count) -- cjson may give a float
  elseif ty == "end_of_execution" then
    return true
  end -- keepalive, unknown types and lines without a type are ignored (§10)
  return false
end

--- Runs code in the code interpreter: POST /execute, reading the NDJSON stream line by line
--- (docs/protocol/envd-protocol.md §10). With neither `context` nor `language` the server uses its
--- default python context. Callbacks run as lines arrive: on_stdout(text, timestamp),
--- on_stderr(text, timestamp), on_result(result), on_error(error); an error they raise ends the
--- call (the stream is closed) and propagates.
--- Raises: NotFound (404: unknown context), InvalidArgument (400: both context and language;
--- 422; bad arguments), SandboxGone (502/503), Sandbox (500 and other statuses), Protocol (a line
--- that is not a JSON object, over 16 MiB, a stdout/stderr line without text, or a body that
--- ends without end_of_execution; the message names the line), Timeout (`request_timeout`
--- before the headers, `timeout` for the body), Transport.
---@param sbx abx.Sandbox
---@param src string the code
---@param opts? {language?: string, context?: table|string, envs?: table<string,string>,
---  timeout?: number, request_timeout?: number, traffic_token?: boolean|string,
---  on_stdout?: fun(text: string, timestamp: string|nil), on_stderr?: fun(text: string,
---  timestamp: string|nil), on_result?: fun(result: table), on_error?: fun(err: table)}
---@return table execution see the file header
function code.run(sbx, src, opts)
  opts = options.check(RUN, opts)
  local st <close>, request = code.execute_stream(sbx, src, opts)
  local ex = options.strict(EXECUTION, { logs = { stdout = {}, stderr = {} }, results = {} })
  while true do
    local kind, line, number = st:next()
    if kind == nil then
      errmap.raise("Protocol", 200, "the /execute stream ended without end_of_execution",
        { request = request })
    elseif kind == "line" then
      if line[1] ~= nil then
        errmap.raise_protocol(200, request, "a JSON object on line " .. number .. ", got an array")
      end
      if apply_line(ex, line, number, opts, request) then break end
    end
  end
  return ex
end

--- Creates a code context: POST /contexts {language?, cwd?} -> 200 Context (§10; the server's
--- defaults are language "python" and cwd "/home/user").
--- Raises: Sandbox (500: the context could not be created), InvalidArgument (422), SandboxGone,
--- Protocol (not a Context), Timeout, Transport.
---@param sbx abx.Sandbox
---@param opts? {language?: string, cwd?: string, request_timeout?: number}
---@return {id: string, language: string, cwd: string}
function code.create_context(sbx, opts)
  opts = options.check(CREATE, opts)
  local request = "POST /contexts"
  local resp = call(sbx, "POST", "/contexts", { language = opts.language, cwd = opts.cwd }, opts)
  if resp.status ~= 200 then errmap.raise_code(resp.status, resp.body, request) end
  return context_of(errmap.decode_object(resp.body), resp.status, request)
end

--- Lists the code contexts: GET /contexts -> 200 [Context...] (the server leaves its internal
--- "default" alias out, §10).
--- Raises: Sandbox, SandboxGone, Protocol (not an array of Contexts), Timeout, Transport.
---@param sbx abx.Sandbox
---@param opts? {request_timeout?: number}
---@return {id: string, language: string, cwd: string}[]
function code.list_contexts(sbx, opts)
  opts = options.check(CALL, opts)
  local request = "GET /contexts"
  local resp = call(sbx, "GET", "/contexts", nil, opts)
  if resp.status ~= 200 then errmap.raise_code(resp.status, resp.body, request, resp.attempts) end
  local list = errmap.decode_ok(resp, request, true, "a JSON array of Contexts")
  local out = {}
  for i, v in ipairs(list) do out[i] = context_of(v, resp.status, request) end
  return out
end

--- Restarts a code context (its kernel): POST /contexts/{id}/restart -> 200 (§10).
--- Raises: NotFound (404: unknown context), InvalidArgument (no context given), Sandbox (500),
--- SandboxGone, Timeout, Transport.
---@param sbx abx.Sandbox
---@param ctx table|string a Context or its id
---@param opts? {request_timeout?: number}
function code.restart_context(sbx, ctx, opts)
  opts = options.check(CALL, opts, "sbx:restart_code_context")
  local id = context_id(ctx, "restart_code_context")
  local path = "/contexts/" .. envd.quote(id) .. "/restart"
  local resp = call(sbx, "POST", path, nil, opts)
  if resp.status ~= 200 and resp.status ~= 204 then
    errmap.raise_code(resp.status, resp.body, "POST " .. path)
  end
end

--- Removes a code context: DELETE /contexts/{id} (§10). true on 200/204, false on 404 (it did
--- not exist), as kill and the other deletes of abxlua.
--- Raises: InvalidArgument (no context given), Sandbox (500 and other statuses), SandboxGone,
--- Timeout, Transport.
---@param sbx abx.Sandbox
---@param ctx table|string a Context or its id
---@param opts? {request_timeout?: number}
---@return boolean
function code.remove_context(sbx, ctx, opts)
  opts = options.check(CALL, opts, "sbx:remove_code_context")
  local id = context_id(ctx, "remove_code_context")
  local path = "/contexts/" .. envd.quote(id)
  local resp = call(sbx, "DELETE", path, nil, opts)
  if resp.status == 200 or resp.status == 204 then return true end
  if resp.status == 404 then return false end
  errmap.raise_code(resp.status, resp.body, "DELETE " .. path)
end

return code
