-- Streamed files against the local platform (run by tests/kinds/test_stream_rss.py from the source
-- root): a 256 MiB file is uploaded from an open Lua file (files:write(path, fh)) and read back
-- into another (files:read(path, {to = fh})) and through on_chunk; at the end the engine's own
-- peak RSS (VmHWM of this process, not of the platform child) is printed as `peak_rss_kb=N`.
-- ABX_STREAM_MODE=string does the same through strings (the SDK-like default), for comparison.
-- Inputs (environment): ABX_STREAM_SRC (the file), ABX_STREAM_DST (where to read it back),
-- ABX_STREAM_SHA (its sha256). Source: docs/protocol/envd-protocol.md §7 (GET/POST /files).
local t = require("abx.test")
local core = require("abx.core")

local function peak_kb()
  local f = assert(io.open("/proc/self/status", "r"))
  local text = f:read("a")
  f:close()
  return tonumber(text:match("VmHWM:%s*(%d+)"))
end

t.test("a 256 MiB file streams up and down with bounded engine memory", { timeout = 600 },
  function(ctx)
  local src, dst = core.getenv("ABX_STREAM_SRC"), core.getenv("ABX_STREAM_DST")
  local sha = core.getenv("ABX_STREAM_SHA")
  t.ok(src and dst and sha, "ABX_STREAM_SRC, ABX_STREAM_DST and ABX_STREAM_SHA are set")
  local sbx = ctx.sandbox_factory({ timeout = 600 })
  local path = "/home/user/big.bin"
  local size
  if core.getenv("ABX_STREAM_MODE") == "string" then
    local f = assert(io.open(src, "rb"))
    local data = f:read("a")
    f:close()
    size = #data
    sbx.files:write(path, data)
    data = nil -- luacheck: ignore
    local back = sbx.files:read(path)
    t.eq(#back, size)
    local out = assert(io.open(dst, "wb"))
    out:write(back)
    out:close()
  else
    local f = assert(io.open(src, "rb"))
    size = f:seek("end")
    f:seek("set", 0)
    local entry = sbx.files:write(path, f)
    f:close()
    t.eq(entry.path, path)
    local out = assert(io.open(dst, "wb"))
    t.eq(sbx.files:read(path, { to = out }), size, "bytes written to `to`")
    out:close()
    local n = 0
    t.eq(sbx.files:read(path, { on_chunk = function(c) n = n + #c end }), size)
    t.eq(n, size, "bytes handed to on_chunk")
  end
  local r = sbx.commands:run("sha256sum " .. path, { timeout = 120 })
  t.eq(r.stdout:match("^(%x+)"), sha, "sha256 of the uploaded file inside the sandbox")
  core.write(string.format("size_bytes=%d\npeak_rss_kb=%d\n", size, peak_kb()))
end)
