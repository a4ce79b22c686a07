-- abx.client.opensandbox_code: the code interpreter of an OpenSandbox sandbox through execd's /code
-- routes (port 44772, abx.client.opensandbox_execd), with the E2B client's shapes (abx.client.code:
-- Execution, Result, ExecutionError, Context) so scenarios do not change. Built into
-- abx.client.opensandbox_object's Sandbox.
--
-- The mapping (execd-api.yaml CodeInterpreting):
--   sbx:run_code(src, {language, context})  POST /code {code, context = {id?, language}} read as
--       SSE (abx.client.opensandbox_wire): stdout/stderr -> logs (the text as the kernel wrote it),
--       execution_count -> execution_count, each result -> a Result with is_main_result = true
--       (execd sends the cell's value only, never display outputs), its MIME keys as E2B's
--       format names (text/html -> html, image/png -> png, ...; others in extra) and `text` with
--       one pair of surrounding single quotes removed, as E2B's Result.text (the shape this
--       returns; execd sends the repr, "'x'"); error {ename, evalue, traceback[]} -> error {name,
--       value, traceback joined by "\n"}. No context: the language's (default "python") default
--       context. A context given as an id is looked up first (GET /code/contexts/{id}) for its
--       language, which execd needs. The stream ends at execution_complete or error; a body that
--       ends without either is Protocol. A timeout interrupts the context (DELETE /code?id=), so
--       it is not left busy, then raises Timeout.
--   sbx:create_code_context{language, cwd}  POST /code/context -> Context {id, language, cwd?}
--       (language default "python": execd has no default; cwd only when given).
--   sbx:list_code_contexts()                GET /code/contexts -> Context[] (no cwd).
--   sbx:remove_code_context(ctx)            DELETE /code/contexts/{id}: true; 404 false.
--   No equivalent (Skipped "provider <name> (opensandbox) has no equivalent of <primitive>:
--   missing capability"): restart_code_context (execd cannot restart a context), run_code's envs
--   (RunCodeRequest has no environment) and traffic_token.
-- Errors: execd's ErrorResponse through abx.client.opensandbox_wire.raise_error (400
-- InvalidArgument, 401 Authentication, 500 Sandbox: e.g. a language without a kernel, "session is
-- busy"); an unknown context is NotFound (execd answers 500 "context not found" on POST /code;
-- the adapter asks GET /code/contexts/{id}, which says 404); both context and language:
-- InvalidArgument before any request, as the official SDK refuses it.
-- Source: OpenSandbox @3bb6fad specs/execd-api.yaml; components/execd/pkg/web/controller/
-- codeinterpreting.go, sse.go; sdks/code-interpreter/javascript/src/adapters/codesAdapter.ts.

local core = require("abx.core")
local cjson = require("cjson")
local errmap = require("abx.client.errmap")
local envd = require("abx.client.envd")
local options = require("abx.client.options")
local wire = require("abx.client.opensandbox_wire")
local execd = require("abx.client.opensandbox_execd")
local code = require("abx.client.code") -- the options and shapes of sbx:run_code and contexts

local M = {}

-- execd's results keys (Jupyter MIME types, "text/plain" already "text") -> E2B's Result fields
local FORMAT = { text = "text", ["text/html"] = "html", ["text/markdown"] = "markdown",
  ["image/svg+xml"] = "svg", ["image/png"] = "png", ["image/jpeg"] = "jpeg",
  ["application/pdf"] = "pdf", ["text/latex"] = "latex", ["application/json"] = "json",
  ["application/javascript"] = "javascript" }

local function skip(sbx, primitive) wire.skip(sbx.conn.provider_name, primitive) end

--- E2B's Result.text of a value's text/plain: one pair of surrounding single quotes removed.
local function e2b_text(s)
  if type(s) == "string" and #s >= 2 and s:sub(1, 1) == "'" and s:sub(-1) == "'" then
    return s:sub(2, -2)
  end
  return s
end

--- A Result (abx.client.code's shape) from an execd `results` map (exported for tests).
local function result_of(results)
  local r, extra = { is_main_result = true }, nil
  for k, v in pairs(type(results) == "table" and results or {}) do
    local f = FORMAT[k]
    if f then
      r[f] = v
    else
      extra = extra or {}
      extra[k] = v
    end
  end
  r.text = e2b_text(r.text)
  r.extra = extra
  return options.strict(code.SHAPES.Result, r)
end

local function json_call(sbx, method, path, query, body, timeout)
  local h = { ["Content-Type"] = "application/json" }
  return execd._call(sbx, method, path, query, {
    headers = h, body = body ~= nil and cjson.encode(body) or nil, timeout = timeout })
end

local function context_id(ctx, what)
  if type(ctx) == "table" then ctx = ctx.id end
  if type(ctx) ~= "string" or ctx == "" then
    errmap.raise("InvalidArgument", 0, what .. ": a context (table with id) or a context id")
  end
  return ctx
end

local function context_of(v, status, request, cwd)
  if type(v) ~= "table" or type(v.id) ~= "string" or type(v.language) ~= "string" then
    errmap.raise_protocol(status, request, "a CodeContext {id, language}")
  end
  local c = v.cwd ~= cjson.null and v.cwd or cwd
  return options.strict(code.SHAPES.Context, { id = v.id, language = v.language,
    cwd = type(c) == "string" and c or nil })
end

--- The context's {id, language} by id (GET /code/contexts/{id}); NotFound when execd has none.
local function lookup(sbx, id, timeout)
  local resp, request = json_call(sbx, "GET", "/code/contexts/" .. envd.quote(id), nil, nil, timeout)
  if resp.status == 404 then
    errmap.raise("NotFound", 404, "code context " .. id .. " not found", { request = request })
  end
  if resp.status ~= 200 then wire.raise_error(resp, request) end
  return context_of(errmap.decode_object(resp.body), resp.status, request)
end

--- The RunCodeRequest of run_code's options.
local function run_body(sbx, src, opts)
  if type(src) ~= "string" then
    errmap.raise("InvalidArgument", 0, "run_code: code must be a string, got " .. type(src))
  end
  if opts.context ~= nil and opts.language ~= nil then
    errmap.raise("InvalidArgument", 0, "run_code: give context or language, not both")
  end
  if opts.envs and next(opts.envs) then skip(sbx, "sbx:run_code envs (per-execution environment)") end
  if opts.traffic_token ~= nil then skip(sbx, "sbx:run_code traffic_token") end
  local ctx = { language = opts.language or "python" }
  if opts.context ~= nil then
    local id = context_id(opts.context, "run_code: context")
    local lang = type(opts.context) == "table" and opts.context.language or nil
    if type(lang) ~= "string" or lang == "" then
      lang = lookup(sbx, id, opts.request_timeout).language
    end
    ctx = { id = id, language = lang }
  end
  return { code = src, context = ctx }
end

--- Applies one event to the execution (a plain table; ex._id gets init's context id); true once
--- it is the last one (exported for tests). Raises: Protocol (a stdout/stderr event without text).
local function apply(ex, ev, opts, request)
  local ty = ev.type
  if ty == "init" then
    ex._id = type(ev.text) == "string" and ev.text or nil
  elseif ty == "stdout" or ty == "stderr" then
    if type(ev.text) ~= "string" then
      errmap.raise_protocol(200, request, "a " .. ty .. " event with text")
    end
    local out = ex.logs[ty]
    out[#out + 1] = ev.text
    local cb = opts["on_" .. ty]
    if cb then cb(ev.text, ev.timestamp and tostring(math.tointeger(ev.timestamp) or ev.timestamp)) end
  elseif ty == "execution_count" then
    ex.execution_count = math.tointeger(ev.execution_count)
  elseif ty == "result" then
    local r = result_of(ev.results)
    ex.results[#ex.results + 1] = r
    if type(r.text) == "string" then ex.text = r.text end
    if opts.on_result then opts.on_result(r) end
  elseif ty == "error" then
    local e = type(ev.error) == "table" and ev.error or {}
    local tb = type(e.traceback) == "table" and e.traceback or {}
    local lines = {}
    for i, l in ipairs(tb) do lines[i] = tostring(l) end
    ex.error = options.strict(code.SHAPES.ExecutionError, {
      name = type(e.ename) == "string" and e.ename or nil,
      value = type(e.evalue) == "string" and e.evalue or nil,
      traceback = table.concat(lines, "\n") })
    if opts.on_error then opts.on_error(ex.error) end
    return true
  elseif ty == "execution_complete" then
    return true
  end -- ping, status: nothing to keep
  return false
end

--- Reads POST /code's stream into `ex`. Raises: the mapped kind of a non-200 answer (body in
--- `failed`), Protocol, Timeout, what a callback raises.
local function read(stream, ex, opts, request)
  local parser = wire.sse_parser(request)
  while true do
    local kind, data = stream:next()
    local events
    if kind == nil then
      events = parser:finish()
    elseif kind == "http" then
      return { status = stream:status(), body = data }
    else
      events = parser:feed(data)
    end
    for _, ev in ipairs(events) do
      if apply(ex, ev, opts, request) then return nil end
    end
    if kind == nil then
      errmap.raise("Protocol", 200, "the POST /code stream ended without execution_complete or "
        .. "error", { request = request })
    end
  end
end

M.result_of, M.apply = result_of, apply

--- sbx:run_code on execd (see the file header). Options: abx.client.code's sbx:run_code.
--- Raises: InvalidArgument, NotFound, Skipped (envs, traffic_token), Sandbox, Protocol, Timeout,
--- Authentication, Transport.
---@param sbx table
---@param src string
---@param opts? table
---@return table Execution
function M.run(sbx, src, opts)
  opts = options.check("sbx:run_code", opts)
  local body = run_body(sbx, src, opts)
  local timeout = opts.timeout or 60
  local base, h = execd.base(sbx)
  h["Content-Type"] = "application/json"
  h["Accept"] = "text/event-stream"
  local request = "POST /code"
  local rt = opts.request_timeout or sbx.conn.request_timeout
  local stream <close> = core.body_stream({ method = "POST", url = base .. "/code", headers = h,
    body = cjson.encode(body), timeout = timeout > 0 and (timeout + rt) or 0 })
  local ex = { logs = { stdout = {}, stderr = {} }, results = {} }
  local ok, failed = pcall(read, stream, ex, opts, request)
  if not ok then
    if core.is_error(failed) and failed.kind == "Timeout" and ex._id then
      pcall(execd._call, sbx, "DELETE", "/code", { id = ex._id }, { timeout = 10 })
    end
    error(failed, 0)
  end
  if failed then
    if failed.status == 500 and body.context.id then lookup(sbx, body.context.id, rt) end
    wire.raise_error(failed, request)
  end
  ex._id = nil
  return options.strict(code.SHAPES.Execution, ex)
end

--- sbx:create_code_context on execd: POST /code/context. Raises: Sandbox (500: no kernel),
--- InvalidArgument, Protocol, Authentication, Transport, Timeout.
function M.create_context(sbx, opts)
  opts = options.check("sbx:create_code_context", opts)
  if opts.traffic_token ~= nil then skip(sbx, "sbx:create_code_context traffic_token") end
  local resp, request = json_call(sbx, "POST", "/code/context", nil,
    { language = opts.language or "python", cwd = opts.cwd }, opts.request_timeout)
  if resp.status ~= 200 then wire.raise_error(resp, request) end
  return context_of(errmap.decode_object(resp.body), resp.status, request, opts.cwd)
end

--- sbx:list_code_contexts on execd: GET /code/contexts. Raises: Sandbox, Protocol,
--- Authentication, Transport, Timeout.
function M.list_contexts(sbx, opts)
  opts = options.check("sbx:list_code_contexts", opts)
  local resp, request = json_call(sbx, "GET", "/code/contexts", nil, nil, opts.request_timeout)
  if resp.status ~= 200 then wire.raise_error(resp, request) end
  local list = errmap.decode_ok(resp, request, true, "a JSON array of CodeContexts")
  local out = {}
  for i, v in ipairs(list) do out[i] = context_of(v, resp.status, request) end
  return out
end

--- sbx:remove_code_context on execd: DELETE /code/contexts/{id}: true, false on 404.
--- Raises: InvalidArgument, Sandbox, Authentication, Transport, Timeout.
function M.remove_context(sbx, ctx, opts)
  opts = options.check("sbx:list_code_contexts", opts, "sbx:remove_code_context")
  local id = context_id(ctx, "remove_code_context")
  local resp, request = json_call(sbx, "DELETE", "/code/contexts/" .. envd.quote(id), nil, nil,
    opts.request_timeout)
  if resp.status == 200 or resp.status == 204 then return true end
  if resp.status == 404 then return false end
  wire.raise_error(resp, request)
end

--- sbx:restart_code_context: Skipped (execd has no restart of a context).
function M.restart_context(sbx)
  skip(sbx, "sbx:restart_code_context (execd cannot restart a context)")
end

return M
