-- Runner case: the stream object of core.stream and core.ndjson (abx.stream, bindings/core_http.c)
-- against core.http_server, without a platform: its methods come from a methods table, so the
-- metamethods (__gc, __close) are not reachable as fields of a stream; the methods still work and
-- <close> still closes it.
-- Expected: 2 passed, exit 0.
-- expect-max-seconds: 30
-- expect-no-line: ^(FAILED|ERROR)
local t = require("abx.test")
local core = require("abx.core")

-- An NDJSON stream to a local server that answers 200 with `body`; returns the stream.
local function ndjson_stream(server, body)
  local url = "http://127.0.0.1:" .. server:port() .. "/execute"
  core.spawn(function()
    local req = server:accept()
    req:respond(200, { ["Content-Type"] = "application/x-ndjson" }, body)
  end)
  return core.ndjson({ url = url, body = "{}" })
end

t.test("a stream's fields are its methods, never its metamethods", function()
  local server <close> = core.http_server({ port = 0 })
  local s = ndjson_stream(server, '{"a":1}\n')
  t.eq(s.__gc, nil, "__gc is not a method")
  t.eq(s.__close, nil, "__close is not a method")
  t.eq(s.__index, nil, "__index is not a method")
  for _, m in ipairs({ "next", "next_data", "status", "held_peak", "close" }) do
    t.eq(type(s[m]), "function", m .. " is a method")
  end
  local mt = getmetatable(s)
  t.eq(type(mt.__gc), "function", "the metatable finalizes")
  t.eq(type(mt.__close), "function", "the metatable closes")
  t.eq(type(mt.__index), "table", "the methods table is __index")
  t.eq(s:status(), 200)
  local kind, value, line = s:next()
  t.eq(kind, "line")
  t.eq(value.a, 1)
  t.eq(line, 1)
  t.eq(s:next(), nil, "the body ended")
  s:close()
  s:close() -- idempotent
end)

t.test("<close> closes a stream", function()
  local server <close> = core.http_server({ port = 0 })
  local held
  do
    local s <close> = ndjson_stream(server, '{"b":2}\n')
    held = s
  end
  t.ok(held:held_peak() >= 0, "held_peak answers after close")
end)
