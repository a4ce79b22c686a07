-- The code-interpreter client (lib/abx/client/code.lua over core.ndjson) against
-- tests/code_interpreter/fake_code_interpreter.py, run by test_code_interpreter.py with both routings
-- (E2b-Sandbox-* headers and 49999-<id>.<domain> hosts). The code string picks what the fake
-- /execute streams. Fixtures: code_sandbox, sandbox_factory, conn.
-- Expect: 33 passed. Source: docs/protocol/envd-protocol.md §10.
local t = require("abx.test")
local core = require("abx.core")
local cjson = require("cjson")
local code = require("abx.code")

local MiB = 1024 * 1024
local TS = "2026-11-30T04:00:00.123456Z"

-- What "normal" streams, as an Execution.
local function normal_execution()
  return {
    logs = { stdout = { "hello\n", "h\u{e9}llo w\u{f6}rld \u{2713}\n" }, stderr = { "warn\n" } },
    results = {
      { is_main_result = false, png = "aGk=", html = "<b>hi</b>",
        extra = { ["application/x-custom"] = "y" } },
      { is_main_result = true, text = "2", json = { a = 1 } },
    },
    execution_count = 3,
    text = "2",
  }
end

local function elapsed(fn)
  local t0 = core.now()
  local ok, err = pcall(fn)
  return core.now() - t0, ok, err
end

-- --- well-formed streams ----------------------------------------------------------------------

t.test("run_code returns logs, results, the main text and the execution count", function(ctx)
  local ex = ctx.code_sandbox:run_code("normal")
  t.eq(ex, normal_execution())
  t.eq(ex.error, nil)
end)

t.test("callbacks see every output line in order with its timestamp", function(ctx)
  local seen = {}
  local ex = ctx.code_sandbox:run_code("normal", {
    on_stdout = function(text, ts) seen[#seen + 1] = { "out", text, ts } end,
    on_stderr = function(text, ts) seen[#seen + 1] = { "err", text, ts } end,
    on_result = function(r) seen[#seen + 1] = { "result", r.is_main_result } end,
    on_error = function() seen[#seen + 1] = { "error" } end,
  })
  t.eq(seen, {
    { "out", "hello\n", TS }, { "err", "warn\n", TS }, { "out", "h\u{e9}llo w\u{f6}rld \u{2713}\n", TS },
    { "result", false }, { "result", true },
  })
  t.eq(ex.text, "2")
end)

t.test("keepalive, unknown and untyped lines are ignored", function(ctx)
  local ex = ctx.code_sandbox:run_code("ignored")
  t.eq(ex, { logs = { stdout = { "after\n" }, stderr = {} }, results = {}, execution_count = 1 })
end)

t.test("an error line is the execution's error, not a raise", function(ctx)
  local got
  local ex = ctx.code_sandbox:run_code("error", { on_error = function(e) got = e end })
  t.eq(ex.error, { name = "ZeroDivisionError", value = "division by zero",
    traceback = "Traceback (most recent call last):\n  1/0\n" })
  t.eq(got, ex.error)
  t.eq(ex.logs.stdout, { "before\n" })
  t.eq(ex.execution_count, 2)
  t.eq(ex.text, nil)
end)

t.test("a stream written byte by byte gives the same execution", function(ctx)
  t.eq(ctx.code_sandbox:run_code("bytewise"), normal_execution())
end)

t.test("CRLF endings, blank lines and odd write boundaries give the same execution", function(ctx)
  t.eq(ctx.code_sandbox:run_code("odd"), normal_execution())
end)

t.test("a final end_of_execution without a newline is read", function(ctx)
  t.eq(ctx.code_sandbox:run_code("unterminated-end"), normal_execution())
end)

t.test("lines after end_of_execution are not read", function(ctx)
  t.eq(ctx.code_sandbox:run_code("after-end"), normal_execution())
end)

t.test("a 15 MiB line, under the 16 MiB bound, is read whole", function(ctx)
  local ex = ctx.code_sandbox:run_code("big-line")
  t.eq(#ex.logs.stdout, 1)
  t.eq(#ex.logs.stdout[1], 15 * MiB)
  t.eq(ex.logs.stdout[1], string.rep("y", 15 * MiB))
end)

t.test("the request carries code, language, env_vars and JSON content type", function(ctx)
  local ex = ctx.code_sandbox:run_code("echo", { language = "python", envs = { A = "1", B = "two" } })
  local seen = cjson.decode(ex.logs.stdout[1])
  t.eq(seen.body, { code = "echo", language = "python", env_vars = { A = "1", B = "two" } })
  t.eq(seen.content_type, "application/json")
  t.eq(seen.traffic, false)
  t.ok(seen.routing == "headers" or seen.routing == "host", "routed: " .. tostring(seen.routing))
end)

t.test("a reader that stops early holds the server back (backpressure)", { timeout = 60 },
  function(ctx)
    local sbx = ctx.code_sandbox
    local st <close> = code.execute_stream(sbx, "flood:64", { timeout = 50 })
    local kind, first = st:next()
    t.eq(kind, "line")
    t.eq(first.type, "stdout")
    core.sleep(1.5) -- the server writes as fast as it can meanwhile
    local stats_url = sbx.conn.api_url .. "/_stats/" .. sbx.id
    local stats = cjson.decode(core.request({ url = stats_url, timeout = 5 }).body)
    t.eq(stats.done, false)
    -- 8 MiB of queued lines plus socket buffers (about 11 MiB), not the 64 MiB it has to send
    t.ok(stats.sent < 32 * MiB, string.format("server wrote %.1f MiB while the reader slept",
      stats.sent / MiB))
    local lines, kinds, last = 1, {}, nil
    while true do -- no assertion per line: 4,096 of them would slow the other tests' loop
      local k, v = st:next()
      kinds[tostring(k)] = true
      if k ~= "line" or v.type == "end_of_execution" then break end
      lines = lines + 1
      last = v
    end
    t.eq(kinds, { line = true })
    t.eq(lines, 64 * 1024 / 16)
    t.eq(#last.text, 16384 - #'{"type": "stdout", "text": ""}\n')
    t.eq(st:next(), nil)
    t.eq(cjson.decode(core.request({ url = stats_url, timeout = 5 }).body).done, true)
  end)

t.test("reading a full queue lets the other tasks run (a cooperative pause every 64 items)",
  { timeout = 60 }, function(ctx)
    local st <close> = code.execute_stream(ctx.code_sandbox, "flood:16", { timeout = 50 })
    t.eq((st:next()), "line")
    core.sleep(1.5) -- the queue fills: 8 MiB of 16 KiB lines, far more than 64
    local other_ran_at
    local n = 0
    core.spawn(function() other_ran_at = n end) -- ready now; runs at this task's next yield
    while n < 200 do
      local k = st:next()
      if k ~= "line" then break end
      n = n + 1
    end
    t.ok(other_ran_at ~= nil and other_ran_at <= 64,
      "the other task ran after " .. tostring(other_ran_at) .. " lines read from the queue")
  end)

-- --- broken streams ---------------------------------------------------------------------------

t.test("a stream that ends without end_of_execution is a Protocol error", function(ctx)
  local err = t.raises("Protocol", function() ctx.code_sandbox:run_code("no-end") end)
  t.match(err.message, "end_of_execution")
  t.eq(err.request, "POST /execute")
end)

t.test("a body cut inside a line is a Protocol error naming the line", function(ctx)
  local err = t.raises("Protocol", function() ctx.code_sandbox:run_code("cut") end)
  t.match(err.message, "line 3: invalid JSON")
end)

t.test("an invalid JSON line is a Protocol error naming the line", function(ctx)
  local out = {}
  local err = t.raises("Protocol", function()
    ctx.code_sandbox:run_code("bad-json", { on_stdout = function(s) out[#out + 1] = s end })
  end)
  t.match(err.message, "line 3: invalid JSON")
  t.eq(out, { "hello\n" }) -- the lines before it were delivered
end)

t.test("a line that is not an object is a Protocol error", function(ctx)
  local err = t.raises("Protocol", function() ctx.code_sandbox:run_code("not-object") end)
  t.match(err.message, "line 2: a JSON number")
  err = t.raises("Protocol", function() ctx.code_sandbox:run_code("array") end)
  t.match(err.message, "object on line 2")
end)

t.test("a stdout line without text is a Protocol error", function(ctx)
  t.raises("Protocol", function() ctx.code_sandbox:run_code("stdout-no-text") end)
end)

t.test("a line over the 16 MiB bound is a Protocol error", { timeout = 60 }, function(ctx)
  -- that it comes after 16 MiB, not 64, is test_code_interpreter.py's RSS bound for this case
  local err = t.raises("Protocol", function() ctx.code_sandbox:run_code("huge-line") end)
  t.match(err.message, "line 1 is longer than 16777216 bytes")
end)

-- --- timeouts ---------------------------------------------------------------------------------

t.test("timeout bounds a body that stalls", function(ctx)
  local took, ok, err = elapsed(function() ctx.code_sandbox:run_code("stall", { timeout = 1 }) end)
  t.eq(ok, false)
  t.eq(err.kind, "Timeout")
  t.ok(took >= 0.9 and took < 20, "Timeout after " .. took .. " s") -- the fake holds on for 30 s
end)

t.test("timeout bounds the whole body, keepalives or not", function(ctx)
  local took, ok, err = elapsed(function()
    ctx.code_sandbox:run_code("keepalive-forever", { timeout = 1 })
  end)
  t.eq(ok, false)
  t.eq(err.kind, "Timeout")
  t.ok(took >= 0.9 and took < 20, "Timeout after " .. took .. " s") -- the fake holds on for 30 s
end)

t.test("request_timeout bounds the time to the headers", function(ctx)
  local took, ok, err = elapsed(function()
    ctx.code_sandbox:run_code("slow-headers:30", { request_timeout = 1, timeout = 5 })
  end)
  t.eq(ok, false)
  t.eq(err.kind, "Timeout")
  t.ok(took >= 0.9 and took < 20, "Timeout after " .. took .. " s") -- the fake holds on for 30 s
end)

t.test("timeout starts when the headers arrive", function(ctx)
  local ex = ctx.code_sandbox:run_code("slow-headers:1.5", { request_timeout = 5, timeout = 1 })
  t.eq(ex, normal_execution())
end)

t.test("request_timeout does not bound the body", function(ctx)
  local ex = ctx.code_sandbox:run_code("slow-body:1.5", { request_timeout = 1, timeout = 5 })
  t.eq(ex, normal_execution())
end)

-- --- errors of the API ------------------------------------------------------------------------

t.test("an unknown context is NotFound", function(ctx)
  local err = t.raises("NotFound", function()
    ctx.code_sandbox:run_code("normal", { context = "missing" })
  end)
  t.eq(err.status, 404)
  t.match(err.message, "Context missing not found")
end)

t.test("context and language together are InvalidArgument (400)", function(ctx)
  local c = ctx.code_sandbox:create_code_context()
  local err = t.raises("InvalidArgument", function()
    ctx.code_sandbox:run_code("normal", { context = c, language = "python" })
  end)
  t.eq(err.status, 400)
end)

t.test("code that is not a string is InvalidArgument", function(ctx)
  t.raises("InvalidArgument", function() ctx.code_sandbox:run_code(42) end)
end)

t.test("a wrong access token is Authentication", function(ctx)
  local sbx = ctx.code_sandbox:with({ access_token = "wrong" })
  local err = t.raises("Authentication", function() sbx:run_code("normal") end)
  t.eq(err.status, 401)
end)

t.test("the traffic token is sent, and without it the edge refuses", function(ctx)
  local sbx = ctx.sandbox_factory({ template = "code-interpreter-v1", secure = true,
    network = { allow_public_traffic = false } })
  t.ok(sbx.traffic_access_token, "the sandbox has a traffic token")
  local seen = cjson.decode(sbx:run_code("echo").logs.stdout[1])
  t.eq(seen.traffic, true)
  t.raises("Authentication", function() sbx:run_code("normal", { traffic_token = false }) end)
end)

t.test("an error raised by a callback ends run_code", function(ctx)
  local calls = 0
  local ok, err = pcall(function()
    ctx.code_sandbox:run_code("normal", { on_stdout = function()
      calls = calls + 1
      error("stop here", 0)
    end })
  end)
  t.eq(ok, false)
  t.eq(err, "stop here")
  t.eq(calls, 1)
end)

-- --- contexts ---------------------------------------------------------------------------------

t.test("create_code_context returns the context the server made", function(ctx)
  local c = ctx.code_sandbox:create_code_context({ language = "JavaScript", cwd = "/tmp" })
  t.match(c.id, "^ctx%-%x+$")
  t.eq(c.language, "javascript")
  t.eq(c.cwd, "/tmp")
  local d = ctx.code_sandbox:create_code_context()
  t.eq({ d.language, d.cwd }, { "python", "/home/user" })
end)

t.test("run_code in a context sends its id", function(ctx)
  local c = ctx.code_sandbox:create_code_context()
  local seen = cjson.decode(ctx.code_sandbox:run_code("echo", { context = c }).logs.stdout[1])
  t.eq(seen.body, { code = "echo", context_id = c.id })
  seen = cjson.decode(ctx.code_sandbox:run_code("echo", { context = c.id }).logs.stdout[1])
  t.eq(seen.body.context_id, c.id)
end)

t.test("list, restart and remove code contexts", function(ctx)
  local sbx = ctx.code_sandbox
  t.eq(sbx:list_code_contexts(), {})
  local a = sbx:create_code_context({ language = "python" })
  local b = sbx:create_code_context({ language = "r", cwd = "/srv" })
  local list = sbx:list_code_contexts()
  table.sort(list, function(x, y) return x.language < y.language end)
  t.eq(list, { a, b })
  sbx:restart_code_context(a)
  sbx:restart_code_context(b.id)
  t.eq(sbx:remove_code_context(a), true)
  t.eq(sbx:remove_code_context(a.id), false)
  t.eq(sbx:list_code_contexts(), { b })
end)

t.test("restarting an unknown context is NotFound", function(ctx)
  local err = t.raises("NotFound", function() ctx.code_sandbox:restart_code_context("nope") end)
  t.match(err.message, "Context nope not found")
end)

t.test("a context the server cannot create is a Sandbox error (500)", function(ctx)
  local err = t.raises("Sandbox", function()
    ctx.code_sandbox:create_code_context({ language = "fail" })
  end)
  t.eq(err.status, 500)
end)
