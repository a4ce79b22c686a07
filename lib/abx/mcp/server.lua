-- abx.mcp.server: the transports of `abxlua mcp` and its shutdown.
--
-- stdio: newline-delimited JSON-RPC on stdin/stdout, one session; every request runs in a task of
--   its own (a long tools/call does not hold up a ping); answers are written in the order they are
--   ready, one line each, masked (no registered secret leaves). Logs go to stderr only. A line over
--   MAX_MESSAGE bytes is answered -32700 and skipped. stdin's end of file ends the server.
-- HTTP (streamable HTTP): POST and DELETE on /mcp; each initialize opens a session with a new
--   Mcp-Session-Id (32 hex characters, random); later requests need it (400 without, 404 for an unknown
--   or ended one); an MCP-Protocol-Version header that names an unsupported version or another
--   version than the session's is 400 (none: the session's). An Origin header that is not a loopback
--   origin is 403. POST needs Content-Type application/json (else 415) and an Accept listing
--   application/json and text/event-stream (else 406); notifications and responses get 202; a
--   request gets its answer as one JSON object, or with `sse` as an SSE stream of one `message`
--   event (event ids are not given: the stream is not resumable). GET is 405 (this server has no
--   messages of its own to push). DELETE ends the session and kills its sandboxes (204). At most
--   MAX_SESSIONS sessions at once (then 503).
-- Shutdown (stdin EOF, SIGINT, SIGTERM; for HTTP SIGINT/SIGTERM): the book closes (every owned
--   sandbox killed, then the owner-tag sweep), the provider stops; exit 0, or 2 after a signal.
--   A second signal exits at once, naming the tags to clean up with `abxlua cleanup`.
-- Source: MCP specification 2025-11-25 and 2025-03-26 basic/transports (stdio, Streamable HTTP,
--   session management, protocol version header, security warning), basic/lifecycle (shutdown).
local core = require("abx.core")
local json = require("abx.json")
local protocol = require("abx.mcp.protocol")

local M = {}

M.MAX_MESSAGE = 8 * 1024 * 1024
M.MAX_SESSIONS = 32
M.PATH = "/mcp"

local function log(s) core.ewrite("abxlua mcp: " .. s .. "\n", true) end
M.log = log

-- A queue of lines for one pipe, written by one task (only one task may wait on a pipe).
local function writer(pipe, on_error)
  local w = { q = {}, head = 1, tail = 0 }
  w.task = core.spawn(function()
    while true do
      if w.head > w.tail then
        if w.closed then
          w.finished = true
          return
        end
        w.parked = true
        core.park()
        w.parked = false
      else
        local line = w.q[w.head]
        w.q[w.head] = nil
        w.head = w.head + 1
        local ok, err = pcall(pipe.write, pipe, line)
        if not ok then
          w.closed = true
          w.finished = true
          on_error(err)
          return
        end
      end
    end
  end)
  function w.send(line)
    if w.closed then return end
    w.tail = w.tail + 1
    w.q[w.tail] = line
    if w.parked then core.unpark(w.task) end
  end
  function w.close()
    w.closed = true
    if w.parked then core.unpark(w.task) end
  end
  return w
end

local function encode(msg)
  return core.mask(json.encode(msg))
end

-- Runs the stdio transport until stdin ends or stop() is called.
local function stdio(book, state)
  local stdin, stdout = core.stdio()
  local out = writer(stdout, function(err)
    log("stdout: " .. tostring(err) .. ": the client is gone")
    state.stop("stdout closed", 0)
  end)
  -- after the last answer: stdout is flushed before the sandboxes go
  state.flush = function()
    out.close()
    local deadline = core.now() + 10
    while not out.finished and core.now() < deadline do core.sleep(0.02) end
  end
  local session = protocol.session(book, "stdio", state.session_opts)
  local handle_one
  local function handle_line(line)
    state.inflight = state.inflight + 1
    local ok, err = pcall(handle_one, line)
    state.inflight = state.inflight - 1
    if not ok then error(err, 0) end
  end
  handle_one = function(line)
    if line:match("^%s*$") then return end
    local m, err = json.decode(line)
    local reply
    if err then
      reply = protocol.error(nil, protocol.PARSE_ERROR, "parse error: " .. err)
    else
      local ok, r = pcall(session.handle, session, m)
      if not ok then
        if core.is_error(r) and r.kind == "Interrupted" then return end
        reply = protocol.error(type(m) == "table" and m.id or nil, -32603, "internal error: "
          .. tostring(r))
      else
        reply = r
      end
    end
    if reply then out.send(encode(reply) .. "\n") end
  end
  state.reader = core.current()
  local buf, skipping = "", false
  while true do
    local ok, chunk = pcall(stdin.read, stdin)
    if not ok then
      if not state.stopping then log("stdin: " .. tostring(chunk)) end
      break
    end
    if not chunk then
      if #buf > 0 and not skipping then core.spawn(handle_line, buf) end
      state.stop("stdin closed", 0, true)
      break
    end
    buf = buf .. chunk
    while true do
      local nl = buf:find("\n", 1, true)
      if not nl then break end
      local line = buf:sub(1, nl - 1)
      buf = buf:sub(nl + 1)
      if skipping then
        skipping = false
      else
        core.spawn(handle_line, line)
      end
    end
    if #buf > M.MAX_MESSAGE then
      if not skipping then
        out.send(encode(protocol.error(nil, protocol.PARSE_ERROR, "a message over "
          .. M.MAX_MESSAGE .. " bytes was dropped")) .. "\n")
      end
      skipping, buf = true, ""
    end
  end
end

-- The HTTP transport ---------------------------------------------------------------------------

local function loopback_origin(origin)
  local host = origin:match("^https?://%[([%x:]+)%]") or origin:match("^https?://([^/:]+)")
  return host == "localhost" or host == "127.0.0.1" or host == "::1"
    or (host ~= nil and host:match("^127%.%d+%.%d+%.%d+$") ~= nil)
end

local function accepts(h, what)
  for part in (h or ""):gmatch("[^,]+") do
    local t = part:match("^%s*([^;%s]+)")
    if t == what or t == "*/*" then return true end
  end
  return false
end

local function rpc_body(code, msg, id)
  return encode(protocol.error(id, code, msg))
end

-- Answers `req`: a body without Content-Type is JSON.
local function answer(req, status, headers, body)
  headers = headers or {}
  if body and body ~= "" and not headers["Content-Type"] then
    headers["Content-Type"] = "application/json"
  end
  req:respond(status, headers, body or "")
end

-- Answers `req` with a JSON-RPC error (no id) under HTTP `status`.
local function refuse(req, status, code, msg, extra)
  answer(req, status, extra, rpc_body(code, msg))
end

-- DELETE with Mcp-Session-Id: ends the session and kills the sandboxes it owns.
local function end_session(book, state, req, sid, session)
  if not sid then return refuse(req, 400, protocol.INVALID_REQUEST, "DELETE needs Mcp-Session-Id") end
  if not session then return refuse(req, 404, protocol.INVALID_REQUEST, "unknown session") end
  state.sessions[sid] = nil
  state.nsessions = state.nsessions - 1
  local killed, failed = book:kill_owned(sid)
  log(string.format("session %s… ended by DELETE: %d sandbox(es) killed", sid:sub(1, 8), killed))
  for id, why in pairs(failed) do log("kill " .. id .. " failed: " .. why) end
  return answer(req, 204, {}, "")
end

-- What a POST's headers must say (size, Content-Type, Accept, a supported protocol version).
-- Returns nil, or the refusal: HTTP status and message (INVALID_REQUEST).
local function post_refusal(info)
  local h = info.headers
  if info.too_large then
    return 413, "a message over " .. M.MAX_MESSAGE .. " bytes"
  end
  local ctype = (h["content-type"] or ""):match("^%s*([^;%s]+)")
  if ctype ~= "application/json" then
    return 415, "Content-Type must be application/json, got " .. tostring(h["content-type"])
  end
  if not (accepts(h.accept, "application/json") and accepts(h.accept, "text/event-stream")) then
    return 406, "Accept must list application/json and text/event-stream, got " .. tostring(h.accept)
  end
  local pv = h["mcp-protocol-version"]
  if pv and not protocol.SUPPORTED[pv] then
    return 400, "unsupported MCP-Protocol-Version " .. pv .. " (supported: "
      .. table.concat(protocol.VERSIONS, ", ") .. ")"
  end
  return nil
end

-- The session a POSTed message goes to: a new one (not yet listed) for initialize, else the
-- listed one its Mcp-Session-Id names, of the same protocol version. Returns the session and its
-- id, or nil, nil, the refusal's HTTP status and message (INVALID_REQUEST).
local function post_session(book, state, is_init, sid, pv)
  if is_init then
    if sid then
      return nil, nil, 400, "initialize opens a session: send it without Mcp-Session-Id"
    end
    if state.nsessions >= M.MAX_SESSIONS then
      return nil, nil, 503, "too many sessions (" .. M.MAX_SESSIONS .. "); end one with DELETE"
    end
    sid = core.random_hex(16)
    return protocol.session(book, sid, state.session_opts), sid
  end
  local session = sid and state.sessions[sid]
  if not sid then
    return nil, nil, 400, "Mcp-Session-Id is required (initialize first)"
  end
  if not session then
    return nil, nil, 404, "unknown or ended session: initialize again"
  end
  if pv and session.version and pv ~= session.version then
    return nil, nil, 400, "MCP-Protocol-Version " .. pv .. " is not this session's ("
      .. session.version .. ")"
  end
  return session, sid
end

-- Answers a POST with the session's reply: 202 for none (a notification), else 200 with the
-- reply as JSON, or as one SSE event (mode "sse").
local function send_reply(req, reply, headers, mode)
  if not reply then return answer(req, 202, headers, "") end
  local body = encode(reply)
  if mode == "sse" then
    headers["Content-Type"] = "text/event-stream"
    headers["Cache-Control"] = "no-cache"
    return answer(req, 200, headers, "event: message\ndata: " .. body .. "\n\n")
  end
  headers["Content-Type"] = "application/json"
  return answer(req, 200, headers, body)
end

-- One HTTP request to the MCP endpoint: loopback origins only; POST carries a JSON-RPC message
-- (initialize opens a session, Mcp-Session-Id names it afterwards), DELETE ends a session, GET
-- offers no stream.
local function http_request(book, state, req, info, mode)
  local h = info.headers
  if info.path ~= M.PATH then
    return refuse(req, 404, protocol.INVALID_REQUEST, "no MCP endpoint at " .. info.path
      .. " (it is " .. M.PATH .. ")")
  end
  if h.origin and not loopback_origin(h.origin) then
    return refuse(req, 403, protocol.INVALID_REQUEST, "Origin " .. h.origin .. " is not allowed "
      .. "(loopback origins only)")
  end
  local sid = h["mcp-session-id"]
  if info.method == "GET" then
    return answer(req, 405, { Allow = "POST, DELETE" }, rpc_body(protocol.INVALID_REQUEST,
      "this server offers no SSE stream at GET (it sends no messages of its own)"))
  end
  if info.method == "DELETE" then
    return end_session(book, state, req, sid, sid and state.sessions[sid])
  end
  if info.method ~= "POST" then
    return answer(req, 405, { Allow = "POST, GET, DELETE" }, rpc_body(protocol.INVALID_REQUEST,
      "method " .. info.method .. " is not part of the MCP endpoint"))
  end
  local status, why = post_refusal(info)
  if status then return refuse(req, status, protocol.INVALID_REQUEST, why) end
  local m, err = json.decode(info.body)
  if err then return refuse(req, 400, protocol.PARSE_ERROR, "parse error: " .. err) end
  local is_init = type(m) == "table" and m.method == "initialize"
  local session, sstatus, swhy
  session, sid, sstatus, swhy = post_session(book, state, is_init, sid, h["mcp-protocol-version"])
  if not session then return refuse(req, sstatus, protocol.INVALID_REQUEST, swhy) end
  local ok, reply = pcall(session.handle, session, m)
  if not ok then reply = protocol.error(type(m) == "table" and m.id or nil, -32603,
    "internal error: " .. tostring(reply)) end
  local headers = {}
  if is_init and reply and reply.result then
    state.sessions[sid] = session
    state.nsessions = state.nsessions + 1
    headers["Mcp-Session-Id"] = sid
  end
  return send_reply(req, reply, headers, mode)
end

local function http(book, state, o)
  local srv = core.http_server({ host = o.host, port = o.port, max_body = M.MAX_MESSAGE })
  state.closers[#state.closers + 1] = function() srv:close() end
  -- the address on stderr, and as a line a launcher can wait for
  log(string.format("listening on http://%s:%d%s", o.host:find(":") and ("[" .. o.host .. "]")
    or o.host, srv:port(), M.PATH))
  while true do
    local req, info = srv:accept()
    if not req then break end
    core.spawn(function()
      local ok, err = pcall(http_request, book, state, req, info, o.response)
      if not ok then
        log("request failed: " .. tostring(err))
        pcall(req.respond, req, 500, { ["Content-Type"] = "application/json" },
          rpc_body(-32603, "internal error"))
      end
    end)
  end
end

---Runs the server until its shutdown. Call inside core.run.
---@param o {book: table, transport: "stdio"|"http", host?: string, port?: integer,
---  response?: "json"|"sse", stop_provider: fun(), tags: string, instructions?: string}
---@return integer exit code (0, or 2 after a signal)
function M.run(o)
  local book = o.book
  local state = { closers = {}, sessions = {}, nsessions = 0, code = 0, inflight = 0,
    session_opts = { instructions = o.instructions } }
  local done = false
  -- drain: the requests read before the end of stdin are answered first (at most 60 s; a signal
  -- does not wait)
  function state.stop(reason, code, drain)
    if state.stopping then return end
    state.stopping = true
    state.code = code
    core.spawn(function()
      log("shutting down (" .. reason .. ")")
      local deadline = core.now() + 60
      while drain and state.inflight > 0 and core.now() < deadline do core.sleep(0.02) end
      if state.flush then pcall(state.flush) end
      for _, c in ipairs(state.closers) do pcall(c) end
      if state.reader and state.reader ~= core.current() then
        pcall(core.abort, state.reader, "Interrupted", "the server is shutting down")
      end
      local killed, failed = book:close(60)
      local nfailed = 0
      for id, why in pairs(failed) do
        nfailed = nfailed + 1
        log("kill " .. id .. " failed: " .. why)
      end
      log(string.format("cleanup: %d owned sandbox(es) killed%s", killed,
        nfailed > 0 and (", " .. nfailed .. " failed") or ""))
      if nfailed > 0 and state.code == 0 then state.code = 1 end
      pcall(o.stop_provider)
      done = true
      core.abort_all("Interrupted", "the MCP server has shut down")
    end)
  end
  core.interrupt_note("abxlua mcp: interrupted twice: exiting now; sandboxes tagged " .. o.tags
    .. " may remain (abxlua cleanup --run-id <id> --yes)")
  core.on_interrupt(function() state.stop("signal", 2) end)
  if o.transport == "http" then
    local ok, err = pcall(http, book, state, o)
    if not ok and not state.stopping then
      log("http: " .. tostring(err))
      state.stop("the HTTP server failed", 1)
    end
  else
    stdio(book, state)
  end
  while not done do
    local ok = pcall(core.sleep, 0.05)
    if not ok and done then break end
  end
  return state.code
end

return M
