-- abx.accept.desktop_rfb: an RFB 3.8 client (RFC 6143), the part of the desktop runner that
-- speaks VNC: handshake with VNC authentication, ServerInit, SetPixelFormat, SetEncodings (Raw),
-- one full FramebufferUpdateRequest and the Raw update decoded to RGB. Pure protocol over a
-- transport `t` with t:read(n) -> exactly n bytes (raising at the end) and t:write(bytes)
-- (abx.accept.desktop_ws, or a table of bytes in tests), so every byte the server sends goes
-- through the checks below.
--
--   local s = rfb.handshake(t, password)       -- {width, height, name, version}
--   local rgb = rfb.capture(t, s)              -- width*height*3 bytes, rows top to bottom
--
-- Hostile input (the server's bytes): every length is bounded before anything is read or kept:
-- a reason or desktop name at most MAX_TEXT (4 KiB), ServerCutText at most MAX_CUT (1 MiB,
-- skipped), a colour map at most 65536 entries (skipped), the framebuffer at most MAX_SIDE
-- (8192) on each side and MAX_PIXELS (16 Mi) in all, each rectangle inside the framebuffer, an
-- update at most MAX_RECTS rectangles, only Raw rectangles (the one encoding asked for, §7.6.1;
-- SetEncodings lists no pseudo-encoding), at most MAX_UPDATES updates before the screen is whole.
-- Errors: core.error kinds. Authentication: the server refused the password (SecurityResult 1,
-- §7.1.3, with its reason) or offers no VNC authentication while a password is required (None
-- only, §7.2.1, is refused: a desktop that needs no password fails the check). Protocol:
-- anything malformed or over a bound, or a server older than 3.8 (this client speaks 3.8 only).
local core = require("abx.core")

local M = {}

M.MAX_TEXT = 4096
M.MAX_CUT = 1024 * 1024
M.MAX_SIDE = 8192
M.MAX_PIXELS = 16 * 1024 * 1024
M.MAX_RECTS = 65535
M.MAX_UPDATES = 4096
M.SEC_NONE, M.SEC_VNC = 1, 2 -- RFC 6143 §7.1.2

local function perr(msg) core.error("Protocol", 0, "RFB: " .. msg) end

local function u8(t) return (t:read(1)):byte() end
local function u16(t) return (string.unpack(">I2", t:read(2))) end
local function u32(t) return (string.unpack(">I4", t:read(4))) end

-- A length-prefixed string (u32 length), bounded.
local function text(t, what)
  local n = u32(t)
  if n > M.MAX_TEXT then perr(string.format("%s of %d bytes (at most %d)", what, n, M.MAX_TEXT)) end
  return t:read(n)
end

--- ProtocolVersion, security (VNC authentication), ClientInit and ServerInit (RFC 6143 §7.1,
--- §7.2.2, §7.3), then SetPixelFormat (32 bpp, depth 24, little-endian true colour, red at bit
--- 16, green 8, blue 0: §7.5.1) and SetEncodings [Raw] (§7.5.2).
--- Raises: Authentication, Protocol (see the file header).
---@param t table transport
---@param password string at most 8 bytes are used (VNC authentication's DES key)
---@return {width: integer, height: integer, name: string, version: string, security: integer[]}
function M.handshake(t, password)
  local v = t:read(12)
  local maj, min = v:match("^RFB (%d%d%d)%.(%d%d%d)\n$")
  if not maj then perr("not an RFB ProtocolVersion: " .. string.format("%q", v)) end
  maj, min = tonumber(maj), tonumber(min)
  if maj < 3 or (maj == 3 and min < 8) then
    perr(string.format("the server speaks RFB %d.%d; this client speaks 3.8 only", maj, min))
  end
  t:write("RFB 003.008\n")
  local n = u8(t)
  if n == 0 then perr("the server refused the connection: " .. text(t, "reason")) end
  local types, offered = {}, {}
  for i = 1, n do
    types[i] = u8(t)
    offered[types[i]] = true
  end
  if not offered[M.SEC_VNC] then
    core.error("Authentication", 0, "RFB: the server offers no VNC authentication (security types "
      .. table.concat(types, ", ") .. "): a password is required")
  end
  t:write(string.char(M.SEC_VNC))
  local challenge = t:read(16)
  t:write(core.vnc_auth(password, challenge))
  local result = u32(t)
  if result ~= 0 then
    local reason = result == 1 and text(t, "failure reason") or ""
    core.error("Authentication", 0, string.format("RFB: VNC authentication failed (SecurityResult %d%s)",
      result, reason ~= "" and (": " .. reason) or ""))
  end
  t:write(string.char(1)) -- ClientInit: shared
  local w, h = u16(t), u16(t)
  t:read(16) -- the server's PIXEL_FORMAT: replaced by SetPixelFormat below
  local name = text(t, "desktop name")
  if w < 1 or h < 1 or w > M.MAX_SIDE or h > M.MAX_SIDE or w * h > M.MAX_PIXELS then
    perr(string.format("a framebuffer of %dx%d (each side 1..%d, at most %d pixels)", w, h,
      M.MAX_SIDE, M.MAX_PIXELS))
  end
  t:write(string.pack(">BxxxBBBBI2I2I2BBBxxx", 0, 32, 24, 0, 1, 255, 255, 255, 16, 8, 0))
  t:write(string.pack(">BxI2i4", 2, 1, 0))
  return { width = w, height = h, name = name, version = string.format("%d.%d", maj, min),
    security = types }
end

-- One row of 32-bit little-endian pixels (blue, green, red, padding bytes) as RGB.
local function row_rgb(s) return (s:gsub("(.)(.)(.).", "%3%2%1")) end

--- FramebufferUpdateRequest for the whole screen (not incremental, §7.5.3), then the server's
--- messages until every row was covered by Raw rectangles whose areas add up to the screen's:
--- FramebufferUpdate (§7.6.1), SetColourMapEntries, Bell and ServerCutText skipped.
--- Raises: Protocol (see the file header), and what t:read raises (Timeout at its deadline).
---@param t table transport
---@param s table the handshake's answer
---@return string rgb width*height*3 bytes
---@return table stats {updates, rects}
function M.capture(t, s)
  local W, H = s.width, s.height
  t:write(string.pack(">BBI2I2I2I2", 3, 0, 0, 0, W, H))
  local rows, area, updates, rects = {}, 0, 0, 0
  local blank = string.rep("\0", W * 3)
  local covered_rows = 0
  while covered_rows < H or area < W * H do
    local typ = u8(t)
    if typ == 0 then
      updates = updates + 1
      if updates > M.MAX_UPDATES then perr("more than " .. M.MAX_UPDATES .. " updates for one request") end
      t:read(1)
      local nr = u16(t)
      for _ = 1, nr do
        local x, y, w, h = u16(t), u16(t), u16(t), u16(t)
        local enc = string.unpack(">i4", t:read(4))
        if enc ~= 0 then perr("a rectangle in encoding " .. enc .. " (only Raw, 0, was asked for)") end
        if x + w > W or y + h > H then
          perr(string.format("a rectangle %dx%d+%d+%d outside the %dx%d framebuffer", w, h, x, y, W, H))
        end
        rects = rects + 1
        if rects > M.MAX_RECTS then perr("more than " .. M.MAX_RECTS .. " rectangles") end
        -- an empty rectangle paints nothing (and must not cost a pass over every row it names)
        for yy = y, w > 0 and (y + h - 1) or (y - 1) do
          local line = row_rgb(t:read(w * 4))
          local cur = rows[yy + 1]
          if not cur then
            cur = blank
            covered_rows = covered_rows + 1
          end
          rows[yy + 1] = cur:sub(1, x * 3) .. line .. cur:sub((x + w) * 3 + 1)
        end
        area = area + w * h
      end
    elseif typ == 1 then
      t:read(3)
      local nc = u16(t)
      t:read(nc * 6) -- at most 65535 * 6 bytes: u16 bounds it
    elseif typ == 3 then
      t:read(3)
      local n = u32(t)
      if n > M.MAX_CUT then perr(string.format("ServerCutText of %d bytes (at most %d)", n, M.MAX_CUT)) end
      t:read(n)
    elseif typ ~= 2 then -- 2 is Bell: the type byte alone
      perr("unknown server message type " .. typ)
    end
  end
  return table.concat(rows), { updates = updates, rects = rects }
end

return M
