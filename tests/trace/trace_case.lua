-- Trace case (run by tests/trace/test_trace.py): a test that fails on a 404 after a few calls,
-- one that passes, and one that makes many requests. TRACE_PLANTED_TOKEN (a secret-named
-- variable the test sets) is sent as a header value and in a request body: no report may show it.
local t = require("abx.test")

local SECRET = os.getenv("TRACE_PLANTED_TOKEN") or "unset"
local ENVD = 49983

t.test("fails on a missing file", function(ctx)
  local sbx = ctx.base_sandbox
  print("writing the note of " .. sbx.id)
  sbx.files:write("/home/user/trace-note.txt", "note body with " .. SECRET .. " inside\n")
  local r = sbx:http(ENVD, { path = "/health?probe=1", headers = { ["X-Planted"] = SECRET } })
  t.ok(r.status < 500)
  sbx.files:read("/home/user/missing dir/nope.txt") -- 404: NotFound, the test fails here
end)

t.test("passes after one call", function(ctx)
  ctx.base_sandbox:http(ENVD, { path = "/health" })
end)

t.test("makes many requests", function(ctx)
  local n = tonumber(os.getenv("TRACE_MANY") or "260")
  for i = 1, n do ctx.base_sandbox:http(ENVD, { path = "/health?i=" .. i }) end
end)

-- The reproducer of an exchange with awkward bytes: test_trace.py runs the printed line in bash
-- with a `curl` function that prints its arguments, so the quoting is checked by a shell.
t.test("prints a reproducer with awkward quoting", function()
  local reproducer = require("abx.run.reproducer")
  print(reproducer.curl({ method = "POST", url = "http://127.0.0.1:9/x?a=1&b='q'",
    request = { headers = { Authorization = "Bearer " .. SECRET, ["X-Note"] = "it's \"q\" $HOME" },
      body = { length = 22, text = "body 'with' $HOME `x`\n", truncated = false } } }))
end)
