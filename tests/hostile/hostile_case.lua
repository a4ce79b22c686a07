-- Hostile answers (run against tests/hostile/hostile_api.py by test_hostile.py): every call must
-- end in a typed error, within the test's deadline, without crashing the engine.
local t = require("abx.test")

local function sbx(ctx) return ctx.conn:create({ template = "base" }) end

-- `why`: a pattern the message must match (the engine's reason, not curl's "Failure writing ...")
local function start_fails(kind, mode, why)
  return function(ctx)
    local s = sbx(ctx)
    local err = t.raises(kind, function() s.commands:run(mode, { timeout = 5 }) end)
    if why then t.match(err.message, why) end
  end
end

t.test("an envelope announcing 4 GiB is a Protocol error",
  start_fails("Protocol", "huge-length", "exceeds the 4194304%-byte limit"))
t.test("a stream cut inside an envelope is a Protocol error", start_fails("Protocol", "truncated"))
t.test("a compressed envelope is a Protocol error",
  start_fails("Protocol", "compressed", "compressed envelope"))
t.test("invalid JSON in an envelope is a Protocol error", start_fails("Protocol", "bad-json"))
t.test("a stream without its end-of-stream envelope is a Protocol error", start_fails("Protocol", "no-end"))
t.test("a stream whose first event is not start is a Protocol error", start_fails("Protocol", "first-not-start"))
t.test("an endless stream ends at the command timeout", start_fails("Timeout", "endless"))

-- output events in envd's compact form and in Go protojson's spaced one arrive alike and in order
t.test("output events with and without spaces are all kept, in order", function(ctx)
  local r = sbx(ctx).commands:run("spaced-data", { timeout = 5 })
  t.eq(r.stdout, "hi\nthere\nbye")
  t.eq(r.stderr, "e\n")
  t.eq(r.exit_code, 3)
end)

-- nothing of a stream is dropped silently: a chunk that does not decode ends the call
t.test("invalid UTF-8 in stream data is a Protocol error",
  start_fails("Protocol", "bad-utf8", "^commands:run: stdout of message 2 is not base64"))
t.test("an output chunk that is not base64 is a Protocol error",
  start_fails("Protocol", "bad-base64", "^commands:run: stdout of message 3 is not base64"))
t.test("an event of the wrong shape is a Protocol error",
  start_fails("Protocol", "bad-event", "^commands:run: message 2: event data must be an object"))

t.test("a truncated JSON body is a Protocol error", function(ctx)
  t.raises("Protocol", function() ctx.conn:get_info("ibadjson") end)
end)

t.test("response headers over 256 KiB are a Protocol error", function(ctx)
  t.raises("Protocol", function() ctx.conn:get_info("ihugeheaders") end)
end)

t.test("a body over the limit is a Protocol error", function(ctx)
  t.raises("Protocol", function() ctx.conn:get_info("ihugebody") end)
end)

t.test("a server that never answers gives Timeout", function(ctx)
  t.raises("Timeout", function() ctx.conn:get_info("isilent") end)
end)
