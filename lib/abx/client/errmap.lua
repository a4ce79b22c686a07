-- abx.client.errmap: HTTP statuses and Connect codes -> abx.error kinds.
--
-- One place for every mapping table the object model uses, so sandbox.lua, envd.lua, commands.lua
-- and files.lua raise the same kinds for the same answers. Every raise goes through core.error, which
-- masks secrets; the `request` field is "METHOD path" only (never headers, query keys or bodies).
--
-- Sources:
--   control plane  docs/protocol/e2b-control-plane.md §2 (error body {code:int, message}), §3.4, §6.1
--   envd Connect   docs/protocol/envd-protocol.md §2.4 (codes, HTTP equivalents, plain-HTTP table)
--   envd REST      docs/protocol/envd-protocol.md §7 and docs/protocol/e2b-control-plane.md §6.2
--   code interp.   docs/protocol/envd-protocol.md §10 (port 49999)

local core = require("abx.core")
local cjson = require("cjson")

local errmap = {}

-- Control plane, docs/protocol/e2b-control-plane.md §6.1 (route-specific 404s are chosen by the caller;
-- 400 -> InvalidArgument, 413 -> PayloadTooLarge, 502/503 -> SandboxGone and 507 -> NotEnoughSpace
-- are abxlua's finer kinds, DESIGN.md "Protocol"; 413 is not RateLimit: repeating it cannot help).
local API_KIND = {
  [400] = "InvalidArgument",
  [401] = "Authentication",
  [404] = "NotFound",
  [409] = "Conflict",
  [413] = "PayloadTooLarge",
  [429] = "RateLimit",
  [502] = "SandboxGone",
  [503] = "SandboxGone",
  [507] = "NotEnoughSpace",
}

-- Code interpreter (port 49999), docs/protocol/envd-protocol.md §10: plain-text errors (400 when both
-- context_id and language are given, 404 "Context <id> not found", 500 when a context cannot be
-- created), FastAPI's 422 for a malformed request body; 502/503 come from the edge when the port
-- is closed or the sandbox is gone (docs/protocol/e2b-control-plane.md §6.2), 401/403 from an edge
-- that wants an access or traffic token.
local CODE_KIND = {
  [400] = "InvalidArgument",
  [401] = "Authentication",
  [403] = "Authentication",
  [404] = "NotFound",
  [413] = "PayloadTooLarge",
  [422] = "InvalidArgument",
  [429] = "RateLimit",
  [502] = "SandboxGone",
  [503] = "SandboxGone",
  [504] = "Timeout",
  [507] = "NotEnoughSpace",
}

-- agent-sandbox-server (the python-hello template's server, scenarios/templates/python-hello/
-- server/server.py): JSON errors {error, message}; 405, 411 and 415 are requests this client
-- should not have sent; 502/503 without the edge's fields mean the sandbox is gone.
local SERVER_KIND = {
  [400] = "InvalidArgument",
  [401] = "Authentication",
  [403] = "Authentication",
  [404] = "NotFound",
  [405] = "InvalidArgument",
  [409] = "Conflict",
  [411] = "InvalidArgument",
  [413] = "PayloadTooLarge",
  [415] = "InvalidArgument",
  [429] = "RateLimit",
  [502] = "SandboxGone",
  [503] = "SandboxGone",
  [504] = "Timeout",
}

-- Connect code -> kind, docs/protocol/envd-protocol.md §2.4 "SDK mapping of codes to exceptions"
-- (unavailable is the SDK's "sandbox timeout error": our SandboxGone).
local CONNECT_KIND = {
  invalid_argument = "InvalidArgument",
  unauthenticated = "Authentication",
  not_found = "NotFound",
  resource_exhausted = "RateLimit",
  unavailable = "SandboxGone",
  deadline_exceeded = "Timeout",
  canceled = "Timeout",
}

-- Connect code -> HTTP status of a unary error, docs/protocol/envd-protocol.md §2.4 (CGO
-- connectCodeToHTTP). Used as `status` of errors that arrive in an end-of-stream envelope.
local CONNECT_STATUS = {
  canceled = 499, unknown = 500, invalid_argument = 400, deadline_exceeded = 504,
  not_found = 404, already_exists = 409, permission_denied = 403, resource_exhausted = 429,
  failed_precondition = 400, aborted = 409, out_of_range = 400, unimplemented = 501,
  internal = 500, unavailable = 503, data_loss = 500, unauthenticated = 401,
}

-- Plain HTTP status (or an integer `code` in a JSON body) -> Connect code: the E2B Python SDK's
-- PLAIN_HTTP_ERROR_CODES, docs/protocol/envd-protocol.md §2.4.
local PLAIN_HTTP_CODE = {
  [400] = "invalid_argument", [401] = "unauthenticated", [403] = "permission_denied",
  [404] = "not_found", [409] = "already_exists", [413] = "resource_exhausted",
  [429] = "resource_exhausted", [499] = "canceled", [500] = "internal", [501] = "unimplemented",
  [505] = "unimplemented", [502] = "unavailable", [503] = "unavailable",
  [504] = "deadline_exceeded",
}

--- "file:line" of the innermost caller outside lib/abx/ (the scenario line that made the call), or
--- nil when there is none (e.g. on a background reader task).
---@return string|nil
local function caller_where()
  for level = 3, 40 do
    local info = debug.getinfo(level, "Sl")
    if not info then return nil end
    if info.currentline > 0 and info.source:sub(1, 1) == "@"
      and not info.source:find("^@lib/abx/") then
      return info.short_src .. ":" .. info.currentline
    end
  end
  return nil
end

--- Raises an abx.error through core.error, with `where` set to the scenario line that made the call.
--- Raises: always, the given kind; InvalidArgument naming the valid kinds when `kind` is not one
--- of core.KINDS.
---@param kind string
---@param status integer
---@param message string
---@param extra? table extra fields (request, code)
function errmap.raise(kind, status, message, extra)
  extra = extra or {}
  extra.where = extra.where or caller_where()
  core.error(kind, status, message, extra)
end

--- Decodes a JSON body; nil when it is not JSON or not an object.
---@param body string|nil
---@return table|nil
function errmap.decode_object(body)
  if type(body) ~= "string" or body == "" then return nil end
  local ok, v = pcall(cjson.decode, body)
  if ok and type(v) == "table" then return v end
  return nil
end

--- One line of an HTML body: the first line with text once the tags are gone (a gateway's
--- `<h1>502 Bad Gateway</h1>`), at most 200 bytes; nil when `body` is not HTML.
---@param body string
---@return string|nil
local function html_line(body)
  local head = body:sub(1, 512):lower()
  if not (head:find("^%s*<!doctype html") or head:find("^%s*<html") or head:find("<body")) then
    return nil
  end
  local text = body:sub(1, 65536):gsub("<[^>]*>", "\n")
  for line in text:gmatch("[^\r\n]+") do
    line = line:gsub("^%s+", ""):gsub("%s+$", ""):gsub("%s+", " ")
    if line ~= "" then return (line:sub(1, 200)) end
  end
  return "(an HTML page without text)"
end

--- The message of an error body: its `message` field, else one line of an HTML page, else the raw
--- text (as both SDKs do, docs/protocol/e2b-control-plane.md §6.1), else a placeholder.
---@param obj table|nil decoded body
---@param body string|nil raw body
---@return string
local function body_message(obj, body)
  if obj and type(obj.message) == "string" and obj.message ~= "" then return obj.message end
  if type(body) == "string" and body ~= "" then return html_line(body) or (body:sub(1, 512)) end
  return "(empty body)"
end

-- A gateway's statuses: bare (no JSON object), they are the edge stumbling, not the platform's
-- word about the sandbox (issue 27; e2b-dev/E2B#1262: 502s from the edge while the sandbox is fine).
local GATEWAY = { [502] = true, [503] = true, [504] = true }

--- Whether an answer is a gateway's bare 502, 503 or 504: that status and a body that is not a
--- JSON object (an HTML page, text, nothing). A JSON body keeps its documented meaning (the
--- edge's {sandboxId, ...}, the control plane's {code, message}, envd's Connect error).
---@param status integer
---@param body string|nil
---@return boolean
function errmap.bare_gateway(status, body)
  return GATEWAY[status] == true and errmap.decode_object(body) == nil
end

--- Raises Unavailable for a gateway's bare answer (errmap.bare_gateway): "<one line of the body,
--- at most 200 bytes> (a gateway's answer, no platform JSON) after N attempts", and why it was
--- not retried when `not_retried` says so. The error's `attempts` field is N.
--- Raises: Unavailable, always.
---@param status integer
---@param body string|nil
---@param request string "METHOD path"
---@param attempts? integer requests sent (default 1)
---@param not_retried? string why the call was sent once (it starts work)
function errmap.raise_unavailable(status, body, request, attempts, not_retried)
  local n = math.tointeger(attempts) or 1
  -- one line of the body, whatever it is: a gateway's page is not the platform's message
  local line = body_message(nil, body):match("^%s*([^\r\n]*)"):sub(1, 200)
  local msg = string.format("%s (a gateway's answer, no platform JSON) after %d attempt%s",
    line ~= "" and line or "(empty body)", n, n == 1 and "" or "s")
  if not_retried then msg = msg .. " (not retried: " .. not_retried .. ")" end
  errmap.raise("Unavailable", status, msg, { request = request, attempts = n })
end

--- The kind of an answer of the edge proxy itself (not of the server behind it), told by its
--- documented shape, never by its message text: a JSON object with a string `sandboxId` and
---   a `canAutoResume` field, or status 409  -> "SandboxPaused"  (the sandbox is paused; the local
---                                              platform answers 502 as E2B does, with the field)
---   a `port` field                          -> "PortNotOpen"    (it runs; nothing listens)
---   status 502 or 404 otherwise             -> "SandboxGone"    (killed, expired or unknown)
--- Sources: docs/protocol/e2b-control-plane.md §7.4 (502 {sandboxId, message, code}); e2b-dev/infra
--- packages/shared/pkg/proxy/template/sandbox_paused.go (409 {sandboxId, message, code,
--- canAutoResume}), port_closed.go (502 {sandboxId, message, port}), sandbox_not_found.go (404 or,
--- in older edges, 502 {sandboxId, message}). envd and the code interpreter never send
--- `sandboxId`. Returns nil for any other answer. Raises: nothing.
---@param status integer
---@param obj table|nil the decoded body
---@return string|nil
function errmap.edge_kind(status, obj)
  if type(obj) ~= "table" or type(obj.sandboxId) ~= "string" then return nil end
  if status == 409 or obj.canAutoResume ~= nil then return "SandboxPaused" end
  if obj.port ~= nil then return "PortNotOpen" end
  if status == 502 or status == 404 then return "SandboxGone" end
  return nil
end

--- Kind for a control-plane status (docs/protocol/e2b-control-plane.md §6.1).
---@param status integer
---@param not_found_kind? string kind for 404 on this route (default "NotFound")
---@return string
function errmap.api_kind(status, not_found_kind)
  if status == 404 and not_found_kind then return not_found_kind end
  return API_KIND[status] or "Sandbox"
end

--- Raises the abx.error for a control-plane answer with status >= 300. A gateway's bare
--- 502/503/504 (errmap.bare_gateway) is Unavailable "after N attempts" (resp.attempts, set by
--- abx.client.api_call: the requests its retries sent). `hint` (what setting to change) follows
--- the message.
--- Raises: the mapped kind (Authentication, SandboxNotFound, NotFound, Conflict, PayloadTooLarge,
--- RateLimit, InvalidArgument, SandboxGone, NotEnoughSpace, Sandbox), Unavailable.
---@param resp {status: integer, body: string, attempts?: integer}
---@param request string "METHOD path"
---@param not_found_kind? string
---@param hint? string
function errmap.raise_api(resp, request, not_found_kind, hint)
  if errmap.bare_gateway(resp.status, resp.body) then
    errmap.raise_unavailable(resp.status, resp.body, request, resp.attempts,
      resp.not_retried)
  end
  local obj = errmap.decode_object(resp.body)
  local extra = { request = request }
  if obj and type(obj.error_code) == "string" then extra.code = obj.error_code end
  local msg = body_message(obj, resp.body)
  if hint then msg = msg .. " " .. hint end
  errmap.raise(errmap.api_kind(resp.status, not_found_kind), resp.status, msg, extra)
end

--- Raises Protocol: the answer had a success status but not the expected JSON shape.
--- Raises: Protocol.
---@param status integer
---@param request string
---@param what string what was expected
function errmap.raise_protocol(status, request, what)
  errmap.raise("Protocol", status, "unexpected answer: " .. what, { request = request })
end

--- Decodes a success body that must be a JSON object (or a JSON array when `array`).
--- Raises: Protocol (naming `request` and the shape expected: `what`, default "a JSON array" or
--- "a JSON object").
---@param resp {status: integer, body: string|nil}
---@param request string "METHOD path"
---@param array? boolean
---@param what? string the shape expected, as the error names it
---@return table
function errmap.decode_ok(resp, request, array, what)
  local ok, v = pcall(cjson.decode, resp.body or "")
  if not ok or type(v) ~= "table" or (array and next(v) ~= nil and v[1] == nil) then
    errmap.raise_protocol(resp.status, request, what or (array and "a JSON array" or "a JSON object"))
  end
  return v
end

--- Kind for a Connect code (docs/protocol/envd-protocol.md §2.4).
---@param code string
---@return string
function errmap.connect_kind(code)
  return CONNECT_KIND[code] or "Sandbox"
end

--- Raises the error carried by an end-of-stream envelope `{"error":{code, message}}`.
--- `status` is the code's unary HTTP equivalent (§2.4); `code` is the Connect code.
--- Raises: the mapped kind.
---@param err table the `error` object
---@param request string
function errmap.raise_connect(err, request)
  local code = type(err.code) == "string" and err.code or "unknown"
  local msg = type(err.message) == "string" and err.message or code
  errmap.raise(errmap.connect_kind(code), CONNECT_STATUS[code] or 500, msg,
    { request = request, code = code })
end

--- Raises the error of a non-200 envd answer (unary RPC, stream refused, or REST).
--- A JSON body with a string `code` is a Connect error; an integer `code` (envd's own 401, the
--- ingress' 502, REST errors) is read as an HTTP status through the plain-HTTP table; anything
--- else is mapped by the response status. 507 is NotEnoughSpace (docs/protocol/e2b-control-plane.md
--- §6.2); 413 (or an integer `code` 413, which the plain-HTTP table turns into resource_exhausted)
--- is PayloadTooLarge, not RateLimit. An answer of the edge (errmap.edge_kind) is SandboxPaused,
--- SandboxGone or PortNotOpen with Connect code "unavailable". A gateway's bare 502/503/504
--- (errmap.bare_gateway) is Unavailable "after N attempts" (`attempts`; `not_retried` says why a
--- call that starts work was sent once). Raises: the mapped kind.
---@param status integer
---@param body string|nil
---@param request string
---@param attempts? integer requests sent (default 1)
---@param not_retried? string
function errmap.raise_envd_http(status, body, request, attempts, not_retried)
  if errmap.bare_gateway(status, body) then
    errmap.raise_unavailable(status, body, request, attempts, not_retried)
  end
  local obj = errmap.decode_object(body)
  local edge = errmap.edge_kind(status, obj)
  if edge then
    errmap.raise(edge, status, body_message(obj, body), { request = request, code = "unavailable" })
  end
  local code
  if obj and type(obj.code) == "string" then
    code = obj.code
  elseif obj and type(obj.code) == "number" then
    code = PLAIN_HTTP_CODE[math.tointeger(obj.code) or 0] -- cjson decodes numbers as floats
  end
  code = code or PLAIN_HTTP_CODE[status] or "unknown"
  local kind = status == 507 and "NotEnoughSpace" or errmap.connect_kind(code)
  if status == 413 or (obj and obj.code == 413) then kind = "PayloadTooLarge" end
  errmap.raise(kind, status, body_message(obj, body), { request = request, code = code })
end

--- Raises the error of a code-interpreter answer whose status is not 200 (docs/protocol/envd-protocol.md
--- §10): the kind from CODE_KIND (any other status: Sandbox), the message from the body (plain
--- text, or the `message` of a JSON body).
--- An answer of the edge (errmap.edge_kind) gives SandboxPaused, SandboxGone or PortNotOpen.
--- Raises: InvalidArgument (400, 422), Authentication (401, 403), NotFound (404),
--- PayloadTooLarge (413), RateLimit (429), SandboxPaused, PortNotOpen, SandboxGone (502, 503),
--- Timeout (504), NotEnoughSpace (507), Sandbox; Unavailable (a gateway's bare 502/503/504).
---@param status integer
---@param body string|nil
---@param request string "METHOD path"
---@param attempts? integer requests sent (a GET's retries), for Unavailable
function errmap.raise_code(status, body, request, attempts)
  if errmap.bare_gateway(status, body) then
    errmap.raise_unavailable(status, body, request, attempts)
  end
  local obj = errmap.decode_object(body)
  errmap.raise(errmap.edge_kind(status, obj) or CODE_KIND[status] or "Sandbox", status,
    body_message(obj, body), { request = request })
end

--- Raises the error of an agent-sandbox-server answer whose status is not 2xx: the kind from
--- SERVER_KIND (any other status: Sandbox; the server's own 403 {error = "forbidden"}, the OS
--- refusing its user, is Sandbox too), the message and `code` from its JSON body
--- {error, message} (server.py). An answer of the edge (errmap.edge_kind) gives SandboxPaused,
--- SandboxGone or PortNotOpen.
--- Raises: InvalidArgument (400, 405, 411, 415), Authentication (401, the edge's 403), NotFound
--- (404), Conflict (409), PayloadTooLarge (413), RateLimit (429), SandboxPaused, PortNotOpen,
--- SandboxGone (502, 503), Timeout (504), Sandbox; Unavailable (a gateway's bare 502/503/504).
---@param status integer
---@param body string|nil
---@param request string "METHOD path"
function errmap.raise_server(status, body, request)
  if errmap.bare_gateway(status, body) then errmap.raise_unavailable(status, body, request) end
  local obj = errmap.decode_object(body)
  local extra = { request = request }
  if obj and type(obj.error) == "string" then extra.code = obj.error end
  local kind = errmap.edge_kind(status, obj) or SERVER_KIND[status] or "Sandbox"
  -- the server's own 403 is the OS refusing its user (EACCES), as envd's permission_denied is
  -- Sandbox; a 403 without it is the edge's (a missing traffic token): Authentication
  if status == 403 and extra.code == "forbidden" then kind = "Sandbox" end
  errmap.raise(kind, status, body_message(obj, body), extra)
end

--- Checks the status of a stream just opened (core.stream or core.ndjson): when it is not 200,
--- reads the answer's body (the stream's first item), closes the stream and raises what `raise`
--- (errmap.raise_envd_http or errmap.raise_code) maps that status and body to.
--- Raises: what `raise` raises; nothing when the status is 200.
---@param st table core stream
---@param request string "METHOD path"
---@param raise fun(status: integer, body: string, request: string)
function errmap.check_stream(st, request, raise)
  local status = st:status()
  if status ~= 200 then
    local _, body = st:next()
    st:close()
    raise(status, type(body) == "string" and body or "", request)
  end
end

--- Tells whether `err` is an abx.error with this Connect code (e.g. "not_found", "already_exists").
---@param err any
---@param code string
---@return boolean
function errmap.has_code(err, code)
  return core.is_error(err) and err.code == code
end

return errmap
