-- abx.run.trace: the HTTP exchanges of each test (`abxlua run --trace off|on|retain-on-failure`,
-- docs/reports/traces.md). Every core.request, core.stream, core.ndjson and core.body_stream a
-- test causes (control plane, envd and its Connect streams, ports, code interpreter, build API:
-- every client in lib/abx calls one of these four) is recorded against the running test.
-- Attribution follows tasks, as abx.run.capture's does: the test's own task records into its
-- trace, and a task spawned while a test runs records into the trace of the test that spawned
-- it; under -j each test is its own task, so nothing is global.
-- One exchange: { start, duration (s, core.now()), method, url (with its query), sandbox (id or
-- nil), attempt (1-based, the `attempt` field a retrying caller puts in its request table),
-- request = { headers, body }, status (nil: no answer), response = { headers, body } | nil,
-- error (kind or nil) }; a body is { length, text | nil, sha256 | nil, truncated } (see body()).
-- Masked when recorded (core.mask on every header value and body excerpt) and again when a
-- report is written, so a secret registered later is masked too.
-- Bounded: the first HEAD and the last TAIL exchanges of a test are kept, the ones between are
-- counted (`dropped`); each body excerpt holds at most BODY_MAX bytes.
local core = require("abx.core")

local M = {}

M.MODES = { "off", "on", "retain-on-failure" } -- Playwright's names
M.DEFAULT = "retain-on-failure"
M.BODY_MAX = 4096 -- bytes of a body excerpt
M.HEAD, M.TAIL = 50, 150 -- exchanges kept per test: the first HEAD and the last TAIL

M.mode = M.DEFAULT
M.origin = 0 -- core.now() at the run's start: exchanges' `start` is relative to it

-- task -> the trace it records into (weak: a finished task is forgotten)
local traces = setmetatable({}, { __mode = "k" })
local installed = false

---Checks a --trace / defaults.trace value. Returns it, or raises InvalidArgument naming the
---valid ones.
---@param v any
---@param where string "--trace" or "<config>: defaults.trace"
---@return string
function M.check_mode(v, where)
  for _, m in ipairs(M.MODES) do
    if v == m then return v end
  end
  core.error("InvalidArgument", 0, string.format("%s: unknown trace mode %q (valid: %s)", where,
    tostring(v), table.concat(M.MODES, ", ")))
end

---Whether the trace of result `r` (abx.run.runner) goes into the reports: every test's with
---`on`, none with `off`; with retain-on-failure those failed, xpassed or with a teardown error.
---@param r {outcome: string, teardown_errors?: table}
---@return boolean
function M.kept(r)
  if M.mode == "on" then return true end
  if M.mode == "off" then return false end
  return r.outcome == "failed" or r.outcome == "xpassed" or r.teardown_errors ~= nil
end

-- The sandbox an exchange is for: the E2b-Sandbox-Id header (headers routing), the host's
-- "<port>-<id>." (host routing, docs/protocol/e2b-control-plane.md §7.1) or the control plane's
-- /sandboxes/<id> path; nil when none says.
local function sandbox_of(url, headers)
  for k, v in pairs(headers or {}) do
    if type(k) == "string" and k:lower() == "e2b-sandbox-id" then return tostring(v) end
  end
  local host, path = url:match("^%a[%w+.-]*://([^/?#]*)([^?#]*)")
  local id = host and host:match("^%d+%-([%w]+)%.")
  if id then return id end
  return path and path:match("/sandboxes/([%w_-]+)") or nil
end

-- Query parameters whose names say they are credentials (envd's signed file URLs carry
-- `signature`, docs/protocol/envd-protocol.md §7): their values are kept as "***".
local CREDENTIAL_PARAMS = { "signature", "token", "key", "secret", "password" }

-- url with the values of credential-like query parameters replaced by "***".
local function url_masked(url)
  return (url:gsub("([?&])([^=&#]*)=([^&#]*)", function(sep, name, value)
    local n = name:lower()
    for _, w in ipairs(CREDENTIAL_PARAMS) do
      if n:find(w, 1, true) and value ~= "" then return sep .. name .. "=***" end
    end
    return sep .. name .. "=" .. value
  end))
end

-- The longest prefix of s (at most n bytes) that ends on a UTF-8 character boundary.
local function utf8_prefix(s, n)
  if #s <= n then return s end
  local cut = n
  while cut > 0 do
    local b = s:byte(cut + 1)
    if not b or b < 0x80 or b >= 0xC0 then break end -- s[cut+1] starts a character
    cut = cut - 1
  end
  return s:sub(1, cut)
end

-- Text is valid UTF-8 without control bytes other than tab, CR, LF.
local function is_text(s)
  return utf8.len(s) ~= nil and not s:find("[%z\1-\8\11\12\14-\31\127]")
end

---A body as an exchange keeps it: nil when there is none, else { length, text (a masked excerpt of
---at most BODY_MAX bytes; nil when binary), sha256 (of the whole body when binary or cut, else
---nil), truncated }.
---@param b string|nil
---@return table|nil
function M.body(b)
  if b == nil or b == "" then return nil end
  local head = b:sub(1, 2 * M.BODY_MAX) -- masked before the cut: a secret across it is masked
  local binary = not is_text(utf8_prefix(head, 2 * M.BODY_MAX))
  local truncated = #b > M.BODY_MAX
  local text = nil
  if not binary then text = utf8_prefix(core.mask(head), M.BODY_MAX) end
  return { length = #b, text = text, truncated = truncated,
    sha256 = (binary or truncated) and core.sha256(b) or nil }
end

local function masked_headers(h)
  local out = {}
  for k, v in pairs(h or {}) do
    if type(k) == "string" then out[k] = core.mask(tostring(v)) end
  end
  return out
end

local function push(tr, ex)
  tr.count = tr.count + 1
  if #tr.head < M.HEAD then
    tr.head[#tr.head + 1] = ex
    return
  end
  tr.tail[#tr.tail + 1] = ex
  if #tr.tail > 2 * M.TAIL then -- compact now and then: the last TAIL stay
    local keep = table.move(tr.tail, #tr.tail - M.TAIL + 1, #tr.tail, 1, {})
    tr.dropped = tr.dropped + #tr.tail - M.TAIL
    tr.tail = keep
  end
end

-- The request body of req: a string, or a body_file (sent from a file: its bytes are not read).
local function request_body(req)
  if req.body_file ~= nil then
    local ok, size = pcall(function()
      local pos = req.body_file:seek()
      local last = req.body_file:seek("end")
      req.body_file:seek("set", pos)
      return last - pos
    end)
    return { length = ok and size or 0, text = nil, sha256 = nil, truncated = true, file = true }
  end
  return M.body(req.body)
end

-- Records one exchange of core.<name> (fn) into tr; returns what fn returned.
local function record(tr, fn, streaming, req, ...)
  local t0 = core.now()
  local ex = { start = t0 - M.origin, method = req.method or "GET", url = url_masked(req.url),
    sandbox = sandbox_of(req.url, req.headers), attempt = math.tointeger(req.attempt) or 1,
    request = { headers = masked_headers(req.headers), body = request_body(req) } }
  push(tr, ex)
  local ok, resp = pcall(fn, req, ...)
  ex.duration = core.now() - t0
  if not ok then
    ex.error = core.is_error(resp) and resp.kind or "Error"
    error(resp, 0)
  end
  if streaming then
    local sok, status = pcall(resp.status, resp)
    ex.status = sok and math.tointeger(status) or nil
    ex.response = { headers = {}, body = nil, streamed = true }
  elseif type(resp) == "table" then
    ex.status = math.tointeger(resp.status)
    ex.response = { headers = masked_headers(resp.headers), body = M.body(resp.body) }
    -- a create names its sandbox in the answer (docs/protocol/e2b-control-plane.md §3.1)
    ex.sandbox = ex.sandbox or (type(resp.body) == "string"
      and resp.body:sub(1, 4096):match('"sandboxID"%s*:%s*"([%w_-]+)"')) or nil
  end
  return resp
end

-- A wrapper of core.<name> that records the exchange into the running task's trace and labels
-- the request with its test for the -vv lines (the request table's trace_label, read by
-- bindings/core_trace.c; set for the call only).
local function wrap(fn, streaming)
  return function(req, ...)
    local tr = traces[core.current() or false]
    if type(req) ~= "table" or type(req.url) ~= "string" or not tr then return fn(req, ...) end
    local had = req.trace_label
    req.trace_label = tr.label
    local ok, resp = pcall(tr.record and record or function(_, f, _, r, ...) return f(r, ...) end,
      tr, fn, streaming, req, ...)
    req.trace_label = had
    if not ok then error(resp, 0) end
    return resp
  end
end

---Wraps core.request, core.stream, core.ndjson and core.body_stream (the recording) and
---core.spawn (a spawned task records into its spawner's trace). Idempotent.
function M.install()
  if installed then return end
  installed = true
  core.request = wrap(core.request, false)
  for _, name in ipairs({ "stream", "ndjson", "body_stream" }) do
    if core[name] then core[name] = wrap(core[name], true) end
  end
  local spawn = core.spawn
  core.spawn = function(...)
    local task = spawn(...)
    local me = core.current()
    local tr = me and traces[me]
    if tr and tr.open then traces[task] = tr end
    return task
  end
end

---Starts the trace of the test that `task` runs (the runner, before the test starts); only
---its label under --trace off (the -vv lines name the test; nothing is recorded).
---@param task userdata
---@param label string the test's node id
function M.begin(task, label)
  traces[task] = { open = true, head = {}, tail = {}, count = 0, dropped = 0, label = label,
    record = M.mode ~= "off" }
end

---Ends the trace of `task`: { exchanges = {...} (oldest first), dropped = n }, or nil when off.
---@param task userdata
---@return table|nil
function M.finish(task)
  local tr = traces[task]
  if not tr then return nil end
  traces[task] = nil
  tr.open = false
  if not tr.record then return nil end
  local list = {}
  for _, e in ipairs(tr.head) do list[#list + 1] = e end
  local from = math.max(1, #tr.tail - M.TAIL + 1)
  for i = from, #tr.tail do list[#list + 1] = tr.tail[i] end
  return { exchanges = list, dropped = tr.dropped + from - 1 }
end

-- The path of a URL (no scheme, host or query).
local function url_path(url)
  return url:match("^%a[%w+.-]*://[^/?#]*([^?#]*)") or url
end

---The exchange a failure's error came from: the last one whose status is the error's (and, when
---the error names its request "METHOD path", whose method and path match), or the last one that
---failed with the error's kind (Transport, Timeout). Sets that exchange's `error` to the kind.
---@param exchanges table[]
---@param err table|nil the abx.error of the failure
---@return table|nil exchange
function M.origin_of(exchanges, err)
  if not (exchanges and core.is_error(err)) then return nil end
  local method, path
  if type(err.request) == "string" then method, path = err.request:match("^(%u+) (%S+)") end
  local status = math.tointeger(err.status)
  for pass = 1, 2 do -- the second pass leaves the request out (a route named by its template)
    for i = #exchanges, 1, -1 do
      local e = exchanges[i]
      local same = pass == 2 or not method or (e.method == method and url_path(e.url) == path)
      if status and status ~= 0 and e.status == status and same then
        e.error = err.kind
        return e
      end
      if (not status or status == 0) and e.error == err.kind and same then return e end
    end
  end
  return nil
end

return M
