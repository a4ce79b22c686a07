-- abx.accept.desktop_ws: a WebSocket client (RFC 6455) over a raw stream (core.wire_open: TCP,
-- or TLS for https), for the desktop runner's VNC connection through the ingress. Binary
-- messages only: the bytes of every binary frame form one stream read with ws:read(n).
--
--   local ws = desktop_ws.connect{ url = "http://6080-<id>.localhost:PORT/", connect_to = nil,
--     headers = { ["e2b-traffic-access-token"] = tok }, protocols = { "binary" },
--     deadline = core.now() + 30 }
--   local b = ws:read(12); ws:write("RFB 003.008\n"); ws:close()
--
-- Hostile input: every length the server sends is checked before anything is read or kept: the
-- answer's head at most 16 KiB, an error body at most 64 KiB, a frame's payload at most
-- MAX_FRAME (16 MiB), control frames at most 125 bytes and unfragmented (§5.5); a masked server
-- frame (§5.1), set RSV bits (§5.2: no extension is negotiated), a text or unknown opcode, a
-- continuation without a start are Protocol errors. Every wait ends at `deadline` (Timeout).
-- Errors: the upgrade refused: the edge's answer mapped by abx.client.errmap (403 without the
-- traffic token: Authentication; 502: PortNotOpen/SandboxGone/SandboxPaused), other statuses
-- Protocol; a bad 101 (Sec-WebSocket-Accept, Upgrade, subprotocol, §4.1 "the client MUST fail"):
-- Protocol; the server's close frame or the stream's end: Transport naming the close code.
local core = require("abx.core")
local cjson = require("cjson")
local errmap = require("abx.client.errmap")

local M = {}

M.GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11" -- RFC 6455 §1.3
M.MAX_HEAD = 16 * 1024
M.MAX_BODY = 64 * 1024
M.MAX_FRAME = 16 * 1024 * 1024
M.POLL = 0.005 -- seconds between tries of a socket that had nothing

local WS = {}
WS.__index = WS

local function fail(kind, msg, status) core.error(kind, status or 0, msg) end

local function check_deadline(deadline, what)
  if core.now() > deadline then fail("Timeout", "WebSocket: no " .. what .. " before the deadline") end
end

-- What the wire has (up to 256 KiB, never empty); waits while there is nothing.
local function recv_some(self, what)
  while true do
    local b = self.wire:recv(256 * 1024)
    if b == nil then
      self.eof = true
      fail("Transport", "WebSocket: the connection ended while waiting for " .. what)
    end
    if #b > 0 then return b end
    check_deadline(self.deadline, what)
    core.sleep(M.POLL)
  end
end

-- Reads what the wire has into self.inbuf (the answer's head: at most 16 KiB).
local function fill(self, what)
  self.inbuf = self.inbuf .. recv_some(self, what)
end

-- Waits until self.inbuf holds at least n bytes. The reads are kept in a list and joined once: a
-- frame of megabytes (a Raw update) comes in many reads, and joining each to inbuf copied it
-- again each time (quadratic: 21 s for one 3 MiB update, minutes under AddressSanitizer).
local function need(self, n, what)
  if #self.inbuf >= n then return end
  local parts, have = { self.inbuf }, #self.inbuf
  while have < n do
    local b = recv_some(self, what)
    parts[#parts + 1] = b
    have = have + #b
  end
  self.inbuf = table.concat(parts)
end

local function send_raw(self, s)
  local i = 1
  while i <= #s do
    local n = self.wire:send(s, i)
    i = i + n
    if n == 0 then
      check_deadline(self.deadline, "room to send")
      core.sleep(M.POLL)
    end
  end
end

-- The head's "name: value" headers, names lower-cased (the last of a repeated name wins, except
-- that the values of a repeated name are joined with ", ").
local function parse_head(head)
  local status_line, rest = head:match("^([^\r\n]*)\r\n(.*)$")
  local version, status = (status_line or ""):match("^(HTTP/1%.%d) (%d%d%d)")
  if not status then fail("Protocol", "WebSocket: the answer to the upgrade is not HTTP/1.x") end
  local h = {}
  for line in (rest or ""):gmatch("([^\r\n]+)") do
    local k, v = line:match("^([^:%s]+):[ \t]*(.-)[ \t]*$")
    if not k then fail("Protocol", "WebSocket: a malformed header line in the answer") end
    k = k:lower()
    h[k] = h[k] and (h[k] .. ", " .. v) or v
  end
  return tonumber(status), h, version
end

local function has_token(v, token)
  for t in (v or ""):gmatch("[^,%s]+") do
    if t:lower() == token then return true end
  end
  return false
end

--- Opens the connection and performs the opening handshake (RFC 6455 §4.1).
--- Raises: see the file header; Transport when the connection cannot be made.
---@param o {url: string, connect_to?: string, headers?: table<string,string>, protocols?: string[], deadline: number}
---@return table ws
function M.connect(o)
  local scheme, host, path = o.url:match("^(https?)://([^/]+)(/?.*)$")
  if not scheme then fail("InvalidArgument", "WebSocket: not an http(s) URL: " .. tostring(o.url)) end
  if path == "" then path = "/" end
  local self = setmetatable({ inbuf = "", pieces = {}, pos = 1, have = 0, deadline = o.deadline,
    url = o.url, frames = 0, closed = false }, WS)
  self.wire = core.wire_open({ url = o.url, connect_to = o.connect_to,
    connect_timeout = math.max(1, math.min(600, o.deadline - core.now())) })
  while not self.wire:step() do
    check_deadline(o.deadline, "connection")
    core.sleep(M.POLL)
  end
  local raw = {}
  for i = 1, 16 do raw[i] = string.char(tonumber(core.random_hex(1), 16)) end
  local key = core.b64encode(table.concat(raw))
  local lines = { "GET " .. path .. " HTTP/1.1", "Host: " .. host, "Upgrade: websocket",
    "Connection: Upgrade", "Sec-WebSocket-Key: " .. key, "Sec-WebSocket-Version: 13" }
  if o.protocols then lines[#lines + 1] = "Sec-WebSocket-Protocol: " .. table.concat(o.protocols, ", ") end
  local names = {}
  for k in pairs(o.headers or {}) do names[#names + 1] = k end
  table.sort(names)
  for _, k in ipairs(names) do lines[#lines + 1] = k .. ": " .. o.headers[k] end
  send_raw(self, table.concat(lines, "\r\n") .. "\r\n\r\n")
  local e
  while true do
    e = self.inbuf:find("\r\n\r\n", 1, true)
    if e then break end
    if #self.inbuf > M.MAX_HEAD then fail("Protocol", "WebSocket: the answer's head is over 16 KiB") end
    fill(self, "the answer to the upgrade")
  end
  if e + 3 > M.MAX_HEAD then fail("Protocol", "WebSocket: the answer's head is over 16 KiB") end
  local status, h = parse_head(self.inbuf:sub(1, e - 1))
  self.inbuf = self.inbuf:sub(e + 4)
  if status ~= 101 then
    local want = tonumber(h["content-length"] or "")
    if want and want > M.MAX_BODY then want = M.MAX_BODY end
    -- the error body as far as it comes (a stream end or the deadline ends it; its absence is
    -- not the error reported)
    pcall(function()
      while #self.inbuf < (want or M.MAX_BODY) and not self.eof do fill(self, "the error body") end
    end)
    local body = self.inbuf:sub(1, want or M.MAX_BODY)
    self.wire:close()
    local okj, obj = pcall(cjson.decode, body)
    local kind = errmap.edge_kind(status, okj and obj or nil)
    if not kind then kind = (status == 401 or status == 403) and "Authentication" or "Protocol" end
    fail(kind, string.format("WebSocket upgrade refused: %d %s", status, body:sub(1, 300)), status)
  end
  if not has_token(h.upgrade, "websocket") or not has_token(h.connection, "upgrade") then
    fail("Protocol", "WebSocket: the 101 lacks Upgrade: websocket / Connection: Upgrade")
  end
  local accept = core.b64encode(core.sha1(key .. M.GUID))
  if h["sec-websocket-accept"] ~= accept then
    fail("Protocol", "WebSocket: Sec-WebSocket-Accept is not the key's (RFC 6455 §4.2.2)")
  end
  local proto = h["sec-websocket-protocol"]
  if proto then
    local known = false
    for _, p in ipairs(o.protocols or {}) do if p == proto then known = true end end
    if not known then fail("Protocol", "WebSocket: the server chose a subprotocol not offered: " .. proto) end
  end
  self.protocol = proto
  return self
end

-- Parses one frame from inbuf (waiting for its bytes); returns opcode, payload, fin.
local function next_frame(self)
  need(self, 2, "a frame")
  local b1, b2 = self.inbuf:byte(1, 2)
  local fin, rsv, op = b1 & 0x80 ~= 0, b1 & 0x70, b1 & 0x0f
  local masked, len, hl = b2 & 0x80 ~= 0, b2 & 0x7f, 2
  if rsv ~= 0 then fail("Protocol", "WebSocket: a frame with RSV bits set (no extension was negotiated)") end
  if masked then fail("Protocol", "WebSocket: a masked frame from the server (RFC 6455 §5.1)") end
  if len == 126 then
    need(self, 4, "a frame length")
    len, hl = string.unpack(">I2", self.inbuf, 3), 4
  elseif len == 127 then
    need(self, 10, "a frame length")
    local hi = string.unpack(">I4", self.inbuf, 3)
    if hi ~= 0 then fail("Protocol", "WebSocket: a frame over 16 MiB") end
    len, hl = string.unpack(">I4", self.inbuf, 7), 10
  end
  if len > M.MAX_FRAME then fail("Protocol", "WebSocket: a frame over 16 MiB (" .. len .. " bytes)") end
  if op >= 8 and (len > 125 or not fin) then
    fail("Protocol", "WebSocket: a control frame over 125 bytes or fragmented (RFC 6455 §5.5)")
  end
  need(self, hl + len, "a frame's payload")
  local payload = self.inbuf:sub(hl + 1, hl + len)
  self.inbuf = self.inbuf:sub(hl + len + 1)
  self.frames = self.frames + 1
  return op, payload, fin
end

local function frame(op, payload)
  local n = #payload
  local head
  if n < 126 then head = string.pack(">BB", 0x80 | op, 0x80 | n)
  elseif n < 65536 then head = string.pack(">BBI2", 0x80 | op, 0xfe, n)
  else head = string.pack(">BBI8", 0x80 | op, 0xff, n) end
  local mask = {}
  for i = 1, 4 do mask[i] = tonumber(core.random_hex(1), 16) end
  -- masking (RFC 6455 §5.3), 4 bytes at a time
  local out, i = {}, 1
  local m32 = string.unpack(">I4", string.char(mask[1], mask[2], mask[3], mask[4]))
  while i + 3 <= n do
    out[#out + 1] = string.pack(">I4", string.unpack(">I4", payload, i) ~ m32)
    i = i + 4
  end
  while i <= n do
    out[#out + 1] = string.char(payload:byte(i) ~ mask[((i - 1) % 4) + 1])
    i = i + 1
  end
  return head .. string.char(mask[1], mask[2], mask[3], mask[4]) .. table.concat(out)
end

-- Takes frames until at least n message bytes are there.
local function want(self, n)
  while self.have < n do
    local op, payload, fin = next_frame(self)
    if op == 2 or op == 0 then
      if op == 0 and not self.fragmented then
        fail("Protocol", "WebSocket: a continuation frame without a message to continue")
      end
      if op == 2 and self.fragmented then
        fail("Protocol", "WebSocket: a new message inside a fragmented one")
      end
      self.fragmented = not fin
      if #payload > 0 then
        self.pieces[#self.pieces + 1] = payload
        self.have = self.have + #payload
      end
    elseif op == 9 then
      send_raw(self, frame(10, payload)) -- ping: pong with its payload (§5.5.2)
    elseif op == 8 then
      local code = #payload >= 2 and string.unpack(">I2", payload) or 1005
      self.closed = true
      fail("Transport", string.format("WebSocket: the server closed the connection (code %d%s)", code,
        #payload > 2 and (": " .. payload:sub(3, 125)) or ""))
    elseif op == 1 then
      fail("Protocol", "WebSocket: a text frame (the stream is binary)")
    elseif op ~= 10 then -- 10, an unsolicited pong: ignored (§5.5.3)
      fail("Protocol", "WebSocket: unknown opcode " .. op)
    end
  end
end

--- Exactly n bytes of the binary message stream. Raises: see the file header.
---@param n integer
---@return string
function WS:read(n)
  if n == 0 then return "" end
  want(self, n)
  -- the unread bytes are pieces[1] from self.pos on, then the other pieces: a read takes its
  -- bytes from pieces[1] at an offset (copying the rest of a megabyte frame at every read of a
  -- row was quadratic); only a read that spans pieces joins them
  local first = self.pieces[1]
  if #first - self.pos + 1 < n then
    first = table.concat(self.pieces):sub(self.pos)
    self.pieces, self.pos = { first }, 1
  end
  local out = first:sub(self.pos, self.pos + n - 1)
  self.pos = self.pos + n
  if self.pos > #first then
    table.remove(self.pieces, 1)
    self.pos = 1
  end
  self.have = self.have - n
  return out
end

--- Sends bytes as one masked binary frame.
---@param s string
function WS:write(s) send_raw(self, frame(2, s)) end

--- Sends a close frame (1000, best effort) and closes the connection. Idempotent.
function WS:close()
  if self.wire then
    pcall(function()
      if not self.closed and not self.eof then
        local saved = self.deadline
        self.deadline = math.min(saved, core.now() + 1)
        send_raw(self, frame(8, string.pack(">I2", 1000)))
      end
    end)
    self.wire:close()
    self.wire = nil
  end
end

--- Tests and tests/fuzz/fuzz_desktop.c: a WebSocket past its opening handshake over `wire`
--- (wire:recv(n) -> up to n bytes, "" for none yet, nil at the end; wire:send(s, i) -> bytes taken),
--- so the frame parser reads whatever bytes the caller hands it.
---@param wire table
---@param deadline? number core.now() seconds (default: none)
---@return table ws
function M._over(wire, deadline)
  return setmetatable({ inbuf = "", pieces = {}, pos = 1, have = 0, deadline = deadline or math.huge,
    url = "", frames = 0, closed = false, wire = wire }, WS)
end

M._frame = frame -- tests: the client's framing
M._parse_head = parse_head

return M
