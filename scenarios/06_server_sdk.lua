-- 06_server_sdk: the agent-sandbox-server inside a real sandbox (template python-hello), through
-- sbx:server(): auth, commands, files, processes, capabilities, system info, env, ports, the
-- command catalogue and the template's custom route, all over the sandbox's port routing as a
-- client outside reaches it.
-- Fixtures: ctx.server_sandbox (template E2E_SERVER_TEMPLATE, default python-hello; a provider
-- without it skips, naming the template), ctx.sandbox_factory (a server sandbox created with its
-- own AGENT_SERVER_TOKEN). Markers: none.
-- Server API: scenarios/templates/python-hello/server/server.py (its doc comment) and README.md
-- "Templates"; client: lib/abx/client/server.lua. Routing: docs/protocol/e2b-control-plane.md §7.1,
-- §7.4 (<port>-<id>.<domain>, E2b-Sandbox-* headers).
local t = require("abx.test")
local fixtures = require("abx.fixtures")
local cjson = require("cjson")

local PORT = 8080

local function decoded(body)
  local ok, v = pcall(cjson.decode, body or "")
  return ok and type(v) == "table" and v or {}
end

local function find(list, pred)
  for _, v in ipairs(list) do
    if pred(v) then return v end
  end
  return nil
end

t.test("the agent server answers health without a token and 401 without the right one", function(ctx)
  local srv = ctx.server_sandbox:server()
  t.eq(srv:health().status, "ok")
  local anon = srv:with({ token = false })
  t.eq(anon:health().status, "ok", "health is open to readiness probes")
  local e = t.raises("Authentication", function() anon:hello() end)
  t.eq(e.status, 401)
  t.eq(e.code, "unauthorized")
  t.raises("Authentication", function() srv:with({ token = "wrong-token" }):run("true") end)
  t.raises("Authentication", function() anon:capabilities() end)
  -- the raw answer: JSON body and the Bearer challenge
  local r = anon:request("GET", "/files/etc/hostname")
  t.eq(r.status, 401)
  t.match(r.headers["www-authenticate"] or "", "^Bearer")
  t.eq(decoded(r.body).error, "unauthorized")
  t.match(r.headers["content-type"] or "", "application/json")
  -- the right token works on the same route
  t.eq(srv:hello().message, "hello from python-hello")
end)

-- env_vars: the token reaches the server as a create-time environment variable
t.test("a server sandbox created with AGENT_SERVER_TOKEN takes that token",
  { requires = { "env_vars" } }, function(ctx)
  ctx.server_sandbox:kill() -- on a provider without the template the fixture has skipped already
  local token = "e2e-" .. ctx.run_id .. "-" .. tostring(math.random(1, 1e9))
  local sbx = ctx.sandbox_factory({ template = fixtures.template("server_sandbox"),
    envs = { AGENT_SERVER_TOKEN = token } })
  t.eq(sbx:server({ token = token }):hello().message, "hello from python-hello")
  t.eq(sbx:server():hello().message, "hello from python-hello", "the token file holds it too")
  t.raises("Authentication", function() sbx:server({ token = token .. "x" }):hello() end)
  t.eq(sbx:server({ token = token }):env().AGENT_SERVER_TOKEN, nil,
    "the token is not in the environment commands see")
end)

t.test("capabilities name the server, its port, its user and every route", function(ctx)
  local caps = ctx.server_sandbox:server():capabilities()
  t.eq(caps.name, "agent-sandbox-server")
  t.eq(caps.api_version, 1)
  t.eq(caps.port, PORT)
  t.eq(caps.user, "user")
  for _, route in ipairs({ "POST /commands", "GET /files/<path>", "PUT /files/<path>",
    "DELETE /files/<path>", "POST /process/start", "GET /process", "GET /process/<pid>",
    "POST /process/<pid>/kill", "GET /capabilities", "GET /system/info", "GET /env",
    "GET /ports", "GET /hello", "GET /health", "GET /catalogue", "POST /catalogue/<name>" }) do
    t.ok(find(caps.routes, function(r) return r == route end), "capabilities lists " .. route)
  end
end)

t.test("commands return exit code, stdout and stderr and honour cwd, env and timeout", function(ctx)
  local srv = ctx.server_sandbox:server()
  local r = srv:run("echo out; echo err >&2; exit 3")
  t.eq(r.exit_code, 3)
  t.eq(r.stdout, "out\n")
  t.eq(r.stderr, "err\n")
  t.eq(r.timed_out, false)
  t.eq(srv:run("id -un").stdout, "user\n", "commands run as the template user")
  t.eq(srv:run("pwd").stdout, "/home/user\n", "the default cwd is the user's home")
  t.eq(srv:run("pwd", { cwd = "/tmp" }).stdout, "/tmp\n")
  t.eq(srv:run("printf %s \"$GREETING\"", { env = { GREETING = "hi there" } }).stdout, "hi there")
  local slow = srv:run("echo before; sleep 30; echo after", { timeout = 1 })
  t.eq(slow.timed_out, true)
  t.eq(slow.exit_code, 124)
  t.eq(slow.stdout, "before\n")
  t.ok(slow.duration_ms < 20000, "the timeout ended it: " .. slow.duration_ms .. " ms")
end)

t.test("the agent server refuses unknown fields and bad values with 400 naming them", function(ctx)
  local srv = ctx.server_sandbox:server()
  local r = srv:request("POST", "/commands", { body = { cmd = "true", cdw = "/tmp" } })
  t.eq(r.status, 400)
  local j = decoded(r.body)
  t.eq(j.error, "bad_request")
  t.match(j.message, "unknown field 'cdw'")
  t.match(j.message, "valid: cmd, cwd, env, timeout")
  t.eq(srv:request("POST", "/commands", { body = { cmd = 42 } }).status, 400)
  t.eq(srv:request("POST", "/commands", { body = "[1]" }).status, 400, "a body that is not an object")
  t.eq(srv:request("POST", "/commands", { body = "{" }).status, 400, "malformed JSON")
  t.eq(srv:request("POST", "/commands", { body = { cmd = "true", timeout = 0 } }).status, 400)
  t.eq(srv:request("GET", "/ports?verbose=1").status, 400, "an unknown query parameter")
  t.eq(srv:request("POST", "/commands", { body = "{}", headers = { ["Content-Type"] = "text/plain" } })
    .status, 415)
  local nf = srv:request("GET", "/no-such-route")
  t.eq(nf.status, 404)
  t.eq(decoded(nf.body).error, "not_found")
  local na = srv:request("DELETE", "/hello")
  t.eq(na.status, 405)
  t.eq(na.headers["allow"], "GET")
  -- the client fails closed before sending
  t.raises("InvalidArgument", function() srv:run("true", { cdw = "/tmp" }) end)
  t.raises("InvalidArgument", function() srv:run("true", { timeout = 0 }) end)
end)

t.test("the command catalogue lists typed descriptors and runs them without a shell", function(ctx)
  local srv = ctx.server_sandbox:server()
  local cat = srv:catalogue()
  local by = {}
  for _, c in ipairs(cat) do by[c.name] = c end
  for _, name in ipairs({ "argv", "stat_files", "head_file", "grep_files" }) do
    t.ok(by[name], "the catalogue has " .. name)
  end
  t.eq(by.head_file.args[2].name, "lines")
  t.eq(by.head_file.args[2].type, "integer")
  t.eq(by.head_file.args[2].required, false)
  t.eq(by.head_file.args[2].default, 10)
  -- each element one argv entry, no shell: "$HOME" and ";" stay text
  local values = { "a b", "$HOME", "x; echo injected", "", "ünï" }
  local r = srv:call("argv", { values = values })
  t.eq(r.exit_code, 0, r.stderr)
  t.eq(cjson.decode(r.stdout), values)
  t.eq(r.name, "argv")
  srv:write_file("/home/user/cat one.txt", "alpha\nBeta\ngamma\n")
  local g = srv:call("grep_files", { pattern = "beta", files = { "/home/user/cat one.txt" },
    ignore_case = true })
  t.eq(g.exit_code, 0, g.stderr)
  t.eq(g.stdout, "2:Beta\n")
  local h = srv:call("head_file", { path = "/home/user/cat one.txt", lines = 1 }, { cwd = "/tmp" })
  t.eq(h.stdout, "alpha\n")
  t.eq(h.argv, { "head", "-n", "1", "--", "/home/user/cat one.txt" })
  local st = srv:call("stat_files", { paths = { "/home/user/cat one.txt" } })
  t.eq(st.stdout, "/home/user/cat one.txt\t17\n")
  t.eq(srv:call("argv", { values = {} }).stdout, "[]\n", "an empty array stays an array")
end)

t.test("the catalogue refuses unknown names, arguments and types with 400 naming the valid ones",
  function(ctx)
  local srv = ctx.server_sandbox:server()
  local function refused(name, body, pattern)
    local r = srv:request("POST", "/catalogue/" .. name, { body = body })
    t.eq(r.status, 400, name .. " " .. tostring(r.body))
    local j = decoded(r.body)
    t.eq(j.error, "bad_request")
    t.match(j.message, pattern)
  end
  refused("nope", "{\"args\": {}}", "unknown command 'nope' %(commands: argv, grep_files, head_file, stat_files%)")
  refused("argv", "{\"args\": {\"valuez\": []}}", "unknown argument 'valuez' %(arguments: values%)")
  refused("argv", "{\"args\": {}}", "argument 'values' %(string_array%) is required")
  refused("argv", "{\"args\": {\"values\": \"a\"}}", "'values' must be string_array")
  refused("argv", "{\"args\": {\"values\": [1]}}", "'values' must be string_array")
  refused("argv", "{\"args\": {\"values\": [\"a\\u0000b\"]}}", "without NUL")
  refused("head_file", "{\"args\": {\"path\": \"/etc/hostname\", \"lines\": true}}", "'lines' must be integer")
  refused("head_file", "{\"args\": {\"path\": \"/etc/hostname\", \"lines\": 1.5}}", "'lines' must be integer")
  refused("grep_files", "{\"args\": {\"pattern\": \"x\", \"files\": [], \"ignore_case\": 1}}",
    "'ignore_case' must be boolean")
  refused("argv", "{\"args\": []}", "field 'args' must be a JSON object")
  refused("argv", "{\"args\": {\"values\": []}, \"shell\": true}", "unknown field 'shell'")
  t.eq(srv:request("GET", "/catalogue/argv").status, 405)
  -- the client: a table that is not an array is refused before sending
  t.raises("InvalidArgument", function() srv:call("argv", { values = { a = "b" } }) end)
  local e = t.raises("InvalidArgument", function() srv:call("nope", {}) end)
  t.eq(e.status, 400)
end)

t.test("a file written through the agent server reads back, lists and deletes", function(ctx)
  local sbx = ctx.server_sandbox
  local srv = sbx:server()
  local dir = "/home/user/e2e-" .. ctx.run_id
  local bytes = {}
  for i = 0, 255 do bytes[#bytes + 1] = string.char(i) end
  local data = table.concat(bytes) .. "\n" .. "héllo"
  local w = srv:write_file(dir .. "/sub/data.bin", data, { mode = "0640" })
  t.eq(w.size, #data)
  t.eq(w.created, true)
  t.eq(srv:write_file(dir .. "/sub/data.bin", data).created, false, "a second write replaces")
  t.eq(srv:read_file(dir .. "/sub/data.bin"), data, "binary round trip through the server")
  t.eq(sbx.files:read(dir .. "/sub/data.bin"), data, "envd sees the same bytes")
  srv:write_file(dir .. "/sub/note.txt", "text\n")
  local list = srv:list_dir(dir .. "/sub")
  t.eq(#list, 2)
  t.eq(list[1].name, "data.bin")
  t.eq(list[1].type, "file")
  t.eq(list[1].size, #data)
  t.eq(list[2].name, "note.txt")
  local top = srv:list_dir(dir)
  t.eq(top[1].name, "sub")
  t.eq(top[1].type, "dir")
  t.eq(sbx.commands:run("stat -c '%a %U' " .. dir .. "/sub/data.bin").stdout, "640 user\n",
    "mode and owner (the server's user)")
  t.raises("InvalidArgument", function() srv:read_file(dir .. "/sub") end)
  t.raises("NotFound", function() srv:read_file(dir .. "/missing") end)
  local e = t.raises("Conflict", function() srv:delete_file(dir .. "/sub") end)
  t.eq(e.status, 409)
  t.eq(srv:delete_file(dir .. "/sub/note.txt"), true)
  t.raises("NotFound", function() srv:read_file(dir .. "/sub/note.txt") end)
  t.eq(srv:delete_file(dir, { recursive = true }), true)
  t.eq(sbx.files:exists(dir), false, "gone for envd too")
  t.raises("NotFound", function() srv:delete_file(dir) end)
  -- a client's URL library removes literal dot segments; encoded ones reach the server
  t.eq(srv:request("GET", "/files/home/user/%2E%2E/%2E%2E/etc/passwd").status, 400, "'..' is refused")
  -- the OS refuses the server's user: 403 forbidden, the Sandbox kind (as envd's permission_denied)
  local denied = t.raises("Sandbox", function() srv:write_file("/etc/abx-e2e-denied", "x") end)
  t.eq(denied.status, 403)
  t.eq(denied.code, "forbidden")
end)

t.test("a process started through the agent server is listed, inspected and killed", function(ctx)
  local srv = ctx.server_sandbox:server()
  local p = srv:start_process("echo started; exec sleep 300", { cwd = "/tmp" })
  t.ok(p.pid > 1)
  t.eq(p.status, "running")
  t.eq(p.cwd, "/tmp")
  t.ok(find(srv:list_processes(), function(x) return x.pid == p.pid end), "listed")
  t.eventually(function()
    t.eq(srv:get_process(p.pid).stdout, "started\n")
  end, { timeout = 30, interval = 0.2 })
  t.eq(srv:run("kill -0 " .. p.pid .. " && echo alive").stdout, "alive\n")
  local k = srv:kill_process(p.pid)
  t.eq(k.signal, "TERM")
  t.eq(k.status, "killed")
  local after = srv:get_process(p)
  t.eq(after.status, "killed")
  t.eq(after.signal, "TERM")
  t.eq(after.exit_code, nil)
  t.ok(after.ended_at >= after.started_at)
  t.raises("Conflict", function() srv:kill_process(p.pid) end)
  t.raises("NotFound", function() srv:get_process(999999) end)
  t.raises("InvalidArgument", function() srv:kill_process(p.pid, { signal = "BOGUS" }) end)
  -- one that ends by itself
  local q = srv:start_process("echo out; echo err >&2; exit 7", { env = { X = "1" } })
  local done = t.eventually(function()
    local s = srv:get_process(q.pid)
    t.eq(s.status, "exited")
    return s
  end, { timeout = 30, interval = 0.2 })
  t.eq(done.exit_code, 7)
  t.eq(done.stdout, "out\n")
  t.eq(done.stderr, "err\n")
end)

t.test("system info reports the sandbox's hostname, kernel, CPUs and memory", function(ctx)
  local sbx = ctx.server_sandbox
  local info = sbx:server():system_info()
  t.eq(info.hostname .. "\n", sbx.commands:run("hostname").stdout)
  t.eq(info.kernel.release .. "\n", sbx.commands:run("uname -r").stdout)
  t.eq(info.kernel.sysname, "Linux")
  t.ok(math.type(info.cpu_count) == "integer" and info.cpu_count >= 1, "cpu_count")
  t.ok(info.memory.total_bytes > 0, "memory.total_bytes")
  if info.memory.cgroup_limit_bytes then
    t.ok(info.memory.cgroup_limit_bytes > 0, "a cgroup memory limit, when visible, is positive")
  end
  if info.cpu_quota then t.ok(info.cpu_quota > 0) end
  t.eq(info.user.name, "user")
  t.eq(info.user.uid, 1000)
  t.ok(info.uptime_s > 0)
end)

t.test("env shows the environment commands start with, without the server's token", function(ctx)
  local srv = ctx.server_sandbox:server()
  local env = srv:env()
  t.eq(env.HOME, "/home/user")
  t.eq(env.USER, "user")
  t.ok(env.PATH and env.PATH:find("/usr/bin", 1, true), "PATH")
  t.eq(env.AGENT_SERVER_TOKEN, nil)
  t.eq(srv:run("printf %s \"$HOME\"").stdout, env.HOME)
end)

t.test("ports lists the server's own port and a port a process opens", function(ctx)
  local srv = ctx.server_sandbox:server()
  local own = find(srv:ports(), function(p) return p.port == PORT end)
  t.ok(own, "the server's port " .. PORT .. " is listening")
  local web = srv:start_process("exec python3 -m http.server 9091 --bind 127.0.0.1", { cwd = "/tmp" })
  ctx.finally(function() pcall(srv.kill_process, srv, web.pid) end)
  local seen = t.eventually(function()
    local p = find(srv:ports(), function(x) return x.port == 9091 end)
    t.ok(p, "port 9091 appears")
    return p
  end, { timeout = 30, interval = 0.3 })
  t.eq(seen.address, "127.0.0.1")
  t.eq(seen.family, "ipv4")
  srv:kill_process(web.pid, { signal = "KILL" })
  t.eventually(function()
    t.eq(find(srv:ports(), function(x) return x.port == 9091 end), nil, "port 9091 closed")
  end, { timeout = 30, interval = 0.3 })
end)

t.test("the template's custom route answers at the sandbox's port URL", function(ctx)
  local sbx = ctx.server_sandbox
  local srv = sbx:server()
  t.eq(srv:hello().message, "hello from python-hello")
  t.eq(srv:url(), sbx:port_url(PORT))
  -- the same route through plain port traffic: a client outside with the token
  local token = sbx.files:read("/var/lib/agent-server/token", { user = "root" })
  local r = sbx:http(PORT, { path = "/hello", headers = { Authorization = "Bearer " .. token } })
  t.eq(r.status, 200)
  t.eq(decoded(r.body).message, "hello from python-hello")
  t.eq(sbx:http(PORT, { path = "/hello" }).status, 401)
end)
