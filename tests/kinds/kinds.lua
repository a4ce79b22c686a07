-- Kinds case (run by tests/runner/run_case.sh from the source root): the error kinds are one list
-- in C (bindings/errors.c, core.KINDS), an error of any other kind cannot be made, docs/scenarios.md
-- and docs/ENGINE.md name the same list, and abx.errmap maps 413 and the edge's three answers
-- (paused, gone, closed port) to their own kinds by status and fields, a gateway's bare
-- 502/503/504 to Unavailable (issue 27), and an error from an answer names its route when shown.
-- Sources: docs/protocol/e2b-control-plane.md §6, §7.4; e2b-dev/infra
-- packages/shared/pkg/proxy/template/{sandbox_paused,sandbox_not_found,port_closed}.go.
-- Expected: 8 passed, exit 0.
-- expect-line: ^8 passed, 0 failed
local t = require("abx.test")
local core = require("abx.core")
local errmap = require("abx.errmap")

t.test("core.KINDS is one ordered list of unique names, each with a description", function()
  t.eq(type(core.KINDS), "table")
  local seen = {}
  for i, k in ipairs(core.KINDS) do
    t.eq(type(k), "string", "KINDS[" .. i .. "]")
    t.ok(not seen[k], "duplicate kind " .. k)
    seen[k] = true
    t.eq(type(core.KINDS[k]), "string", "description of " .. k)
  end
  for _, k in ipairs({ "Authentication", "NotFound", "SandboxNotFound", "InvalidArgument",
    "Conflict", "RateLimit", "PayloadTooLarge", "Timeout", "SandboxPaused", "SandboxGone",
    "PortNotOpen", "Unavailable", "NotEnoughSpace", "Protocol", "Transport", "Sandbox", "Assertion", "Skipped",
    "Interrupted", "Internal", "LuaError" }) do
    t.ok(seen[k], "kind " .. k .. " is in core.KINDS")
  end
end)

-- "Kinds: A, B, ..., Z." in a document, as a list of names.
local function doc_kinds(path)
  local text = assert(core.read_file(path))
  local list = text:match("Kinds: ([%w%s,`]-)%.")
  t.ok(list, path .. " has a 'Kinds: ...' list")
  local out = {}
  for name in list:gmatch("%a+") do out[#out + 1] = name end
  return out
end

t.test("docs/scenarios.md and docs/ENGINE.md list exactly core.KINDS, in order", function()
  local want = table.concat(core.KINDS, ", ")
  t.eq(table.concat(doc_kinds("docs/scenarios.md"), ", "), want, "docs/scenarios.md")
  t.eq(table.concat(doc_kinds("docs/ENGINE.md"), ", "), want, "docs/ENGINE.md")
end)

t.test("an error of an unknown kind cannot be made: InvalidArgument naming the valid kinds",
  function()
  for name, fn in pairs({
    ["core.error"] = function() core.error("SandboxGon", 502, "typo") end,
    ["core.new_error"] = function() return core.new_error("Nope", 0, "x") end,
    ["errmap.raise"] = function() errmap.raise("RateLimited", 429, "typo") end,
    ["core.abort"] = function() core.abort(core.current(), "Bogus", "x") end,
    ["core.abort_all"] = function() core.abort_all("Bogus", "x") end,
    ["t.raises"] = function() t.raises("NotFund", function() end) end,
  }) do
    local err = t.raises("InvalidArgument", fn)
    t.match(err.message, "unknown error kind", name)
    t.match(err.message, "SandboxPaused, SandboxGone, PortNotOpen", name .. " names the valid kinds")
  end
end)

-- The error `fn` raises (an abx.error), or a failed check.
local function err_of(fn)
  local ok, err = pcall(fn)
  t.ok(not ok and core.is_error(err), "an abx.error was raised: " .. tostring(err))
  return err
end

t.test("413 is PayloadTooLarge with its status on every path, and 429 stays RateLimit", function()
  local e = err_of(function()
    errmap.raise_api({ status = 413, body = '{"code":413,"message":"body too large"}' }, "POST /x")
  end)
  t.eq(e.kind, "PayloadTooLarge"); t.eq(e.status, 413)
  e = err_of(function()
    errmap.raise_envd_http(413, '{"code":413,"message":"request body too large"}', "POST /files")
  end)
  t.eq(e.kind, "PayloadTooLarge"); t.eq(e.status, 413)
  e = err_of(function()
    errmap.raise_envd_http(413, '{"code":"resource_exhausted","message":"too big"}', "POST /rpc")
  end)
  t.eq(e.kind, "PayloadTooLarge", "a Connect resource_exhausted sent with 413")
  e = err_of(function() errmap.raise_envd_http(413, "too large", "POST /files") end)
  t.eq(e.kind, "PayloadTooLarge", "a plain-text 413")
  e = err_of(function() errmap.raise_code(413, "Request Entity Too Large", "POST /execute") end)
  t.eq(e.kind, "PayloadTooLarge"); t.eq(e.status, 413)
  e = err_of(function()
    errmap.raise_envd_http(429, '{"code":"resource_exhausted","message":"slow down"}', "POST /rpc")
  end)
  t.eq(e.kind, "RateLimit", "429 is still RateLimit")
  e = err_of(function() errmap.raise_api({ status = 429, body = "{}" }, "POST /sandboxes") end)
  t.eq(e.kind, "RateLimit")
end)

t.test("the edge's answers are SandboxPaused, SandboxGone and PortNotOpen by status and fields",
  function()
  local paused = '{"sandboxId":"iabc","message":"The sandbox is paused","code":409,'
    .. '"canAutoResume":false}'
  local gone = '{"sandboxId":"iabc","message":"The sandbox was not found","code":502}'
  local closed = '{"sandboxId":"iabc","message":"The sandbox is running but port is not open",'
    .. '"port":49999,"code":502}'
  for _, c in ipairs({
    { 409, paused, "SandboxPaused" }, { 502, paused:gsub("409", "502"), "SandboxPaused" },
    { 502, gone, "SandboxGone" }, { 502, closed, "PortNotOpen" },
    { 404, '{"sandboxId":"iabc","message":"The sandbox was not found"}', "SandboxGone" },
  }) do
    local status, body, kind = c[1], c[2], c[3]
    local e = err_of(function() errmap.raise_envd_http(status, body, "GET /files") end)
    t.eq(e.kind, kind, "envd path: " .. body); t.eq(e.status, status)
    e = err_of(function() errmap.raise_code(status, body, "GET /contexts") end)
    t.eq(e.kind, kind, "code path: " .. body); t.eq(e.status, status)
  end
  -- envd's and the code interpreter's own answers carry no sandboxId: their usual kinds
  t.eq(err_of(function()
    errmap.raise_envd_http(404, '{"code":404,"message":"path not found"}', "GET /files")
  end).kind, "NotFound")
  local e = err_of(function()
    errmap.raise_envd_http(409, '{"code":"already_exists","message":"exists"}', "POST /rpc")
  end)
  t.eq(e.code, "already_exists", "envd's own 409 keeps its Connect code")
  t.neq(e.kind, "SandboxPaused")
end)

-- issue 27: a gateway's bare 502/503/504 (e2b-dev/E2B#1262) says nothing about the sandbox
t.test("a gateway's bare 502/503/504 is Unavailable on every path, quoting one line of its HTML; "
  .. "a JSON one keeps its kind", function()
  local html = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>"
    .. "502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
  for _, status in ipairs({ 502, 503, 504 }) do
    for _, raise in ipairs({
      function() errmap.raise_envd_http(status, html, "GET /files", 4) end,
      function() errmap.raise_code(status, "Bad Gateway", "GET /contexts", 4) end,
      function() errmap.raise_server(status, "", "GET /catalogue") end,
      function() errmap.raise_api({ status = status, body = html, attempts = 4 }, "GET /v2/sandboxes") end,
    }) do
      local e = err_of(raise)
      t.eq(e.kind, "Unavailable", "status " .. status .. ": " .. tostring(e))
      t.eq(e.status, status)
      t.ok(not e.message:find("<", 1, true) and not e.message:find("\n", 1, true),
        "one line of text, no markup: " .. e.message)
    end
  end
  local e = err_of(function() errmap.raise_envd_http(502, html, "GET /files", 4) end)
  t.eq(e.message, "502 Bad Gateway (a gateway's answer, no platform JSON) after 4 attempts")
  t.eq(tostring(e), "Unavailable: GET /files answered 502: 502 Bad Gateway (a gateway's answer, "
    .. "no platform JSON) after 4 attempts")
  e = err_of(function()
    errmap.raise_envd_http(502, "", "POST /process.Process/Start", 1, "POST /process.Process/Start starts work")
  end)
  t.eq(e.message, "(empty body) (a gateway's answer, no platform JSON) after 1 attempt (not "
    .. "retried: POST /process.Process/Start starts work)")
  -- a text page: its first line only
  e = err_of(function() errmap.raise_code(503, "Service Unavailable\nretry later\n", "GET /x") end)
  t.eq(e.message, "Service Unavailable (a gateway's answer, no platform JSON) after 1 attempt")
  -- the platform's own JSON 502/503 keeps its documented kind
  t.eq(err_of(function()
    errmap.raise_api({ status = 502, body = '{"code":502,"message":"sandbox gone"}' }, "GET /sandboxes/x")
  end).kind, "SandboxGone")
  t.eq(err_of(function()
    errmap.raise_envd_http(503, '{"code":"unavailable","message":"closing"}', "POST /rpc")
  end).kind, "SandboxGone")
end)

t.test("an error from an HTTP answer names its method and route when shown", function()
  local e = err_of(function()
    errmap.raise_api({ status = 405, body = '{"code":405,"message":"method not allowed"}' },
      "POST /v2/sandboxes")
  end)
  t.eq(tostring(e), "Sandbox: POST /v2/sandboxes answered 405: method not allowed")
  t.eq(e.message, "method not allowed", "the message itself is the platform's")
  -- no request, or no status: as before
  t.eq(tostring(core.new_error("NotFound", 404, "gone")), "NotFound (404): gone")
  t.eq(tostring(err_of(function()
    core.error("Transport", 0, "GET http://x/: refused", { request = "GET /" })
  end)), "Transport: GET http://x/: refused")
  -- a message that already starts with its request is not prefixed twice
  t.eq(tostring(err_of(function()
    core.error("Protocol", 200, "GET /x: cut short", { request = "GET /x" })
  end)), "Protocol (200): GET /x: cut short")
end)

t.test("a known issue's raises must name a kind of core.KINDS", function()
  local collect = require("abx.collect")
  local dir = os.tmpname()
  os.remove(dir)
  local f = assert(io.open(dir .. ".lua", "w"))
  f:write('local t = require("abx.test")\n'
    .. 't.test("x", { known_issue = "KI-001", raises = "PayloadTooLarg" }, function() end)\n')
  f:close()
  local file = collect.load(dir .. ".lua", {}, { entries = { ["KI-001"] = {} }, path = "-" })
  os.remove(dir .. ".lua")
  t.match(file.error or "", "is not an error kind %(valid: .*PayloadTooLarge")
end)
