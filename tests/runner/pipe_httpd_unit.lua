-- Runner case: core.process_start and its pipes (bindings/core_pipe.c) and core.http_server
-- (bindings/core_httpd.c) on the event loop, without a platform: a child reads stdin and writes
-- stdout until EOF and exits with its code; a write to a child that closed its stdin is Transport;
-- a signal ends a child; the server answers two concurrent requests with their own status,
-- headers and body, marks a body over max_body too_large, and close() answers an unanswered
-- request 503 and ends accept().
-- Expected: 4 passed, exit 0.
-- expect-max-seconds: 30
-- expect-no-line: ^(FAILED|ERROR)
local t = require("abx.test")
local core = require("abx.core")

local function read_all(pipe)
  local out = {}
  while true do
    local c = pipe:read()
    if not c then return table.concat(out) end
    out[#out + 1] = c
  end
end

local function wait_exit(p)
  for _ = 1, 500 do
    local st = p.handle:poll()
    if st then return st end
    core.sleep(0.01)
  end
  error("the child did not exit")
end

t.test("a child reads its stdin, writes its stdout and exits with its code", function()
  local p = core.process_start({ argv = { "/bin/sh", "-c", "cat; echo done:$ABX_T; exit 3" },
    env = { ABX_T = "v" }, stderr = "null" })
  local big = string.rep("x", 300 * 1024) .. "\n"
  core.spawn(function() p.stdin:write(big); p.stdin:close() end)
  local out = read_all(p.stdout)
  t.eq(#out, #big + #"done:v\n")
  t.eq(out:sub(-7), "done:v\n")
  t.eq(wait_exit(p).code, 3)
  t.ok(math.type(p.handle:pid()) == "integer", "pid is an integer")
  t.eq(p.handle:signal(15), false, "signal after the reap is false")
end)

t.test("writing to a child that closed its stdin is Transport; a signal ends a child", function()
  local p = core.process_start({ argv = { "/bin/sh", "-c", "exec 0<&-; sleep 30" } })
  core.sleep(0.2)
  t.raises("Transport", function()
    for _ = 1, 100 do p.stdin:write(string.rep("y", 65536)) end
  end)
  t.eq(p.handle:signal(15), true)
  t.eq(wait_exit(p).signal, 15)
  t.raises("InvalidArgument", function() p.stdout:write("x") end)
end)

t.test("the HTTP server answers concurrent requests and refuses a body over max_body", function()
  local s <close> = core.http_server({ port = 0, max_body = 1024 })
  local url = "http://127.0.0.1:" .. s:port() .. "/mcp"
  local got = {}
  local done = 0
  for i = 1, 2 do
    core.spawn(function()
      got[i] = core.request({ method = "POST", url = url, body = "b" .. i, headers = { ["X-N"] = tostring(i) } })
      done = done + 1
    end)
  end
  local reqs = {}
  for _ = 1, 2 do
    local req, info = s:accept()
    t.eq(info.method, "POST")
    t.eq(info.path, "/mcp")
    t.eq(info.body, "b" .. info.headers["x-n"])
    reqs[#reqs + 1] = { req, info }
  end
  for _, r in ipairs(reqs) do
    t.eq(r[1]:respond(200 + tonumber(r[2].headers["x-n"]), { ["X-Back"] = r[2].body }, "answer " .. r[2].body), true)
  end
  while done < 2 do core.sleep(0.01) end
  for i = 1, 2 do
    t.eq(got[i].status, 200 + i)
    t.eq(got[i].headers["x-back"], "b" .. i)
    t.eq(got[i].body, "answer b" .. i)
  end
  core.spawn(function() got[3] = core.request({ method = "POST", url = url, body = string.rep("z", 5000) }) end)
  local req, info = s:accept()
  t.eq(info.too_large, true)
  t.eq(info.body, nil)
  req:respond(413, {}, "too large")
  while not got[3] do core.sleep(0.01) end
  t.eq(got[3].status, 413)
end)

t.test("close answers an unanswered request 503 and ends accept", function()
  local s = core.http_server({ port = 0 })
  local url = "http://127.0.0.1:" .. s:port() .. "/x"
  local resp
  core.spawn(function() resp = core.request({ method = "GET", url = url }) end)
  local req = s:accept()
  t.ok(req ~= nil, "a request came")
  local ended = false
  core.spawn(function() t.eq(s:accept(), nil); ended = true end)
  core.sleep(0.05)
  s:close()
  while not resp or not ended do core.sleep(0.01) end
  t.eq(resp.status, 503)
  t.eq(req:respond(200, {}, ""), false, "respond after close: the client is gone")
  s:close()
end)
