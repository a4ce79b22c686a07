-- 05_network_and_code: servers inside a sandbox reached from outside (port URLs, 502 for a closed
-- port, content served by code running in the sandbox), the traffic access token, outbound
-- network rules (deny and restore), and code execution in the code interpreter (sbx:run_code:
-- state, output, results, errors, env vars; code contexts).
-- Fixtures: ctx.sandbox_factory (own sandbox per test), code (file: one ctx.code_sandbox, template
-- code-interpreter-v1 or E2E_CODE_TEMPLATE, shared by the code tests). Markers: none.
-- Requires: network_update (outbound rules), code_display (a figure as a png result).
-- Protocol: docs/protocol/e2b-control-plane.md §3.2 (NewSandbox allow_internet_access, network
--           allowPublicTraffic/allowOut/denyOut; SandboxNetworkUpdateConfig replaces the rules),
--           §3.3 (trafficAccessToken), §3.4 (PUT /sandboxes/{id}/network 204), §7.1 (host
--           <port>-<id>.<domain>), §7.4 (E2b-Sandbox-* headers, e2b-traffic-access-token only on
--           non-envd ports, 403 and 502 JSON {sandboxId, message, code}); docs/protocol/envd-protocol.md
--           §10 (the code interpreter on port 49999: /execute NDJSON, /contexts).
-- User complaints covered: docs/protocol/anchors.md §C item 14 ("The sandbox is running but port is not open").
-- Outbound reachability: the local platform never routes a sandbox beyond this machine; "outside"
-- is the host side of the sandbox's own link (GET /sandboxes/{id} abxNetwork.hostAddress, in the
-- platform's hub namespace, where a scenario cannot start a server). The probe therefore sends UDP
-- datagrams to a closed port there: when traffic is allowed the host side's kernel answers with
-- ICMP port-unreachable (ECONNREFUSED, "reached"); when it is denied the sandbox's own rules drop
-- the datagram before it leaves (EPERM/EHOSTUNREACH, "blocked"). TCP cannot tell the two apart
-- (a closed port and the deny rule both answer with a reset). tests/platform/test_network.py shows
-- the same rules with a real TCP server on the host side.
local t = require("abx.test")
local http = require("abx.http")
local envd_health = require("lib.envd_health") -- scenarios/lib/envd_health.lua

local PORT = 8080

-- Starts python3's http.server on 127.0.0.1:PORT serving `dir`, detached from envd's stream.
local function start_server(sbx, dir)
  local r = sbx.commands:run(string.format("mkdir -p %s && cd %s && setsid python3 -m http.server %d "
    .. "--bind 127.0.0.1 >/dev/null 2>&1 </dev/null & echo started", dir, dir, PORT))
  t.eq(r.exit_code, 0, "starting http.server: " .. r.stderr)
end

-- Waits until the server answers something other than the edge's 502. Returns the response.
local function wait_served(sbx, opts)
  return t.eventually(function()
    local r = sbx:http(PORT, opts)
    t.neq(r.status, 502, "the port is still closed")
    return r
  end, { timeout = 60, interval = 0.3 })
end

local function json(body)
  local ok, v = pcall(require("cjson").decode, body or "")
  return ok and type(v) == "table" and v or {}
end

t.test("a port answers 502 'port is not open' before a server listens and 200 after",
  { requires = { "e2b_api" } }, function(ctx)
  local sbx = ctx.sandbox_factory({})
  local before = sbx:http(PORT)
  t.eq(before.status, 502, "a closed port through the edge")
  local j = json(before.body)
  t.eq(j.sandboxId, sbx.id)
  t.eq(math.tointeger(j.code), 502)
  t.match(j.message or "", "port is not open")
  start_server(sbx, "/tmp/www")
  local after = wait_served(sbx)
  t.eq(after.status, 200)
  t.match(after.body, "Directory listing")
  local other = sbx:http(PORT + 1)
  t.eq(other.status, 502, "another port stays closed")
  sbx:kill()
  local gone = sbx:http(PORT)
  t.eq(gone.status, 502, "a killed sandbox's port")
  t.match(json(gone.body).message or "", "not found", "the edge's message for a killed sandbox")
end)

t.test("an HTTP service in the sandbox serves a file written through envd, at its port URL",
  function(ctx)
  local sbx = ctx.sandbox_factory({})
  local content = "served-" .. ctx.run_id .. "-" .. tostring(math.random(1, 1e9)) .. "\n"
  sbx.files:write("/home/user/www/hello.txt", content)
  start_server(sbx, "/home/user/www")
  local r = wait_served(sbx, { path = "/hello.txt" })
  t.eq(r.status, 200)
  t.eq(r.body, content)
  t.eq(http.get(sbx, PORT, "/missing.txt").status, 404, "the server's own 404 passes through")
  -- a POST reaches the server too (http.server answers 501 for an unsupported method)
  t.eq(sbx:http(PORT, { method = "POST", path = "/hello.txt", body = "x" }).status, 501)
end)

-- E2B's host names; OpenSandbox reaches a port through its endpoint instead (sbx:get_host is
-- Skipped there, naming host-name routing).
t.test("the HTTP service is also served at its host name <port>-<id>.<domain>", function(ctx)
  local sbx = ctx.sandbox_factory({})
  local content = "by-host-" .. ctx.run_id .. "-" .. tostring(math.random(1, 1e9)) .. "\n"
  sbx.files:write("/home/user/www/hello.txt", content)
  -- the host name a client outside would use: <port>-<id>.<domain> (reference §7.1)
  t.eq(sbx:get_host(PORT), PORT .. "-" .. sbx.id .. "." .. sbx.domain)
  t.match(sbx:port_url(PORT), "^https?://" .. PORT .. "%-" .. sbx.id .. "%." .. sbx.domain:gsub("%p", "%%%0"))
  start_server(sbx, "/home/user/www")
  wait_served(sbx, { path = "/hello.txt" })
  local by_host = sbx:with({})
  by_host.conn = ctx.conn:with({ envd_routing = "host" })
  local r2 = by_host:http(PORT, { path = "/hello.txt" })
  t.eq(r2.status, 200, "GET " .. sbx:port_url(PORT) .. "/hello.txt")
  t.eq(r2.body, content)
end)

-- Outbound probe, see the file header. Prints "reached", "blocked <errno>" or "silent".
local PROBE = [[
import errno, socket, sys
host, port = sys.argv[1], int(sys.argv[2])
res = "silent"
for attempt in range(3):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    try:
        s.connect((host, port))
        s.send(b"abx-probe")
        s.recv(64)
        res = "reached"
    except ConnectionRefusedError:
        res = "reached"
    except socket.timeout:
        res = "silent"
    except OSError as e:
        res = "blocked " + errno.errorcode.get(e.errno, str(e.errno))
    finally:
        s.close()
    if res != "silent":
        break
print(res)
]]

-- The host side of the sandbox's link, or a skip when the platform does not expose it.
local function host_side(sbx)
  local info = sbx:get_info()
  if not (info.abx_network and info.abx_network.host_address) then
    t.skip("the platform exposes no host-side address (abxNetwork) to probe outbound traffic")
  end
  sbx.files:write("/tmp/abx-probe.py", PROBE)
  return info.abx_network.host_address
end

local function probe(sbx, host)
  local r = sbx.commands:run("python3 /tmp/abx-probe.py " .. host .. " 9", { timeout = 30 })
  return (r.stdout:gsub("%s+$", ""))
end

local function expect(sbx, host, want, why)
  local got = probe(sbx, host)
  if want == "reached" then
    t.eq(got, "reached", why .. ": the sandbox could not reach " .. host)
  else
    t.match(got, "^blocked ", why .. ": traffic to " .. host .. " was not blocked (" .. got .. ")")
  end
end

t.test("network deny_out blocks traffic out of the sandbox and an update restores it",
  { requires = { "network_update" } }, function(ctx)
  local sbx = ctx.sandbox_factory({})
  local host = host_side(sbx)
  expect(sbx, host, "reached", "default rules")
  sbx:update_network({ deny_out = { host } })
  expect(sbx, host, "blocked", "deny_out {host}")
  local net = sbx:get_info().network
  t.ok(net, "get_info has no network")
  t.eq(net.deny_out[1], host)
  sbx:update_network({})
  expect(sbx, host, "reached", "after update_network{} (the rules are replaced, omitted = cleared)")
  sbx:update_network({ deny_out = { "0.0.0.0/0" }, allow_out = { host .. "/32" } })
  expect(sbx, host, "reached", "allow_out beats deny_out")
  sbx:update_network({ deny_out = { "0.0.0.0/0" } })
  expect(sbx, host, "blocked", "deny_out 0.0.0.0/0")
  sbx:update_network({ allow_internet_access = false })
  expect(sbx, host, "blocked", "allow_internet_access = false")
  t.eq(sbx:get_info().allow_internet_access, false)
  sbx:update_network({ allow_internet_access = true })
  expect(sbx, host, "reached", "allow_internet_access = true again")
end)

t.test("a sandbox created without internet access is blocked until its network is updated",
  { requires = { "network_update" } }, function(ctx)
  local sbx = ctx.sandbox_factory({ allow_internet_access = false })
  local host = host_side(sbx)
  t.eq(sbx:get_info().allow_internet_access, false)
  expect(sbx, host, "blocked", "created with allow_internet_access = false")
  sbx:update_network({ allow_internet_access = true })
  expect(sbx, host, "reached", "after update_network{allow_internet_access = true}")
  t.eq(sbx:get_info().allow_internet_access, true)
end)

t.test("create with network allow_out and deny_out applies the rules from the start",
  { requires = { "network_update" } }, function(ctx)
  local sbx = ctx.sandbox_factory({ network = { deny_out = { "10.0.0.0/8" } } })
  local host = host_side(sbx)
  expect(sbx, host, "blocked", "created with deny_out 10.0.0.0/8")
  local net = sbx:get_info().network
  t.eq(net.deny_out[1], "10.0.0.0/8")
  sbx:update_network({ deny_out = { "10.0.0.0/8" }, allow_out = { host } })
  expect(sbx, host, "reached", "allow_out {host} beats deny_out 10.0.0.0/8")
end)

t.test("update_network with an invalid address is InvalidArgument and leaves the rules alone",
  { requires = { "network_update" } }, function(ctx)
  local sbx = ctx.sandbox_factory({})
  local host = host_side(sbx)
  local err = t.raises("InvalidArgument", function() sbx:update_network({ deny_out = { "10.0.0.0/33" } }) end)
  t.eq(err.status, 400)
  expect(sbx, host, "reached", "after a rejected update")
  sbx:kill()
  t.eq(t.raises("SandboxNotFound", function() sbx:update_network({}) end).status, 404,
    "update_network of a killed sandbox")
end)

t.test("without public traffic a non-envd port needs the traffic access token; envd's port does not",
  { requires = { "secure" } }, function(ctx)
  local err = t.raises("InvalidArgument", function()
    ctx.sandbox_factory({ secure = false, network = { allow_public_traffic = false } })
  end)
  -- v1: the server's rule (400); v2 has no unsecured sandboxes, so the client refuses secure=false
  t.eq(err.status, ctx.conn.v2_routes and 0 or 400, "public traffic off without secure")
  local sbx = ctx.sandbox_factory({ secure = true, network = { allow_public_traffic = false } })
  t.ok(type(sbx.traffic_access_token) == "string" and #sbx.traffic_access_token >= 16,
    "create answered a trafficAccessToken")
  t.eq(sbx:get_info().network.allow_public_traffic, false)
  start_server(sbx, "/tmp/www")
  local ok = wait_served(sbx)
  t.eq(ok.status, 200, "with the token")
  local missing = sbx:http(PORT, { traffic_token = false })
  t.eq(missing.status, 403, "without the token")
  local j = json(missing.body)
  t.eq(math.tointeger(j.code), 403)
  t.eq(j.sandboxId, sbx.id)
  t.match(j.message or "", "e2b%-traffic%-access%-token")
  local tok = sbx.traffic_access_token
  local wrong = (tok:sub(1, 1) == "0" and "1" or "0") .. tok:sub(2)
  t.eq(sbx:http(PORT, { traffic_token = wrong }).status, 403, "with a wrong token of the right length")
  t.eq(sbx:http(PORT, { traffic_token = "wrong" }).status, 403, "with a short wrong token")
  local health, answers = envd_health.probe(sbx, { traffic_token = false })
  t.ok(health.status == 204 or health.status == 200, "envd's port without the token: " .. answers)
  t.eq(sbx.commands:run("echo envd-ok").stdout, "envd-ok\n", "envd calls need no traffic token")
  -- connect answers the same token
  t.eq(ctx.conn:connect(sbx.id, { timeout = 300 }).traffic_access_token, sbx.traffic_access_token)
end)

-- ---- code execution (the code interpreter on port 49999) ---------------------------------------

-- One code-interpreter sandbox for the file's code tests: each boots Jupyter and a kernel (about
-- 1.3 s of CPU), and six of them at once, beside a second suite on a busy 2-core machine, took
-- longer than the template's 180 s ready timeout (CI, `make test-contention`). The tests run at
-- once on it, so each one that counts executions or keeps state does so in a context of its own.
t.fixture("code", { scope = "file" }, function(ctx) return ctx.code_sandbox end)

-- The default context is one for the whole sandbox: the tests take turns in it (default_turn).
-- OpenSandbox's execd refuses code for a context that is running code ("session is busy":
-- components/execd/pkg/runtime/jupyter.go @3bb6fad, kernel.mu.TryLock), where E2B's server
-- queues it; a test's code in the default context must not meet another test's there.
local default_turn
do
  local core = require("abx.core")
  local busy, waiting = false, {}
  local function release()
    while #waiting > 0 do -- the turn passes to the next waiter still parked (one whose deadline
      if core.unpark(table.remove(waiting, 1)) then return end -- passed left the queue's head)
    end
    busy = false
  end
  default_turn = function(fn)
    if busy then
      waiting[#waiting + 1] = core.current()
      core.park()
    end
    busy = true
    local res = table.pack(pcall(fn))
    release()
    if not res[1] then error(res[2], 0) end
    return table.unpack(res, 2, res.n)
  end
end

t.test("run_code keeps state, returns stdout, stderr, the main result and the execution count",
  function(ctx)
  local sbx = ctx.code
  -- a context of its own: the other tests run code on this sandbox at the same time
  local c = sbx:create_code_context({ language = "python" })
  local first = sbx:run_code("x = 20", { context = c })
  t.eq(first.error, nil, "x = 20")
  -- the count of a cell with a value (OpenSandbox's execd reports a count only with a result)
  local before = sbx:run_code("x", { context = c })
  t.eq(before.text, "20")
  local seen = {}
  local ex = sbx:run_code("import sys\nprint('hello')\nprint('warn', file=sys.stderr)\nx * 2 + 2",
    { context = c, on_stdout = function(text) seen[#seen + 1] = text end })
  t.eq(ex.text, "42", "the main result's text")
  t.eq(ex.logs.stdout, { "hello\n" })
  t.eq(ex.logs.stderr, { "warn\n" })
  t.eq(seen, { "hello\n" }, "on_stdout saw the line as it came")
  t.eq(#ex.results, 1)
  t.eq(ex.results[1].is_main_result, true)
  t.ok(before.execution_count and ex.execution_count == before.execution_count + 1,
    "execution counts " .. tostring(before.execution_count) .. " then " .. tostring(ex.execution_count))
  t.eq(sbx:run_code("'quoted'", { context = c }).text, "quoted", "one pair of surrounding quotes is stripped")
  sbx:remove_code_context(c)
end)

t.test("run_code envs apply to that execution only", function(ctx)
  local sbx = ctx.code
  default_turn(function()
    local env = sbx:run_code("import os\nos.environ.get('ABX_SCENARIO', 'unset')",
      { envs = { ABX_SCENARIO = ctx.run_id } })
    t.eq(env.text, ctx.run_id, "envs apply to that execution")
    t.eq(sbx:run_code("import os\nos.environ.get('ABX_SCENARIO', 'unset')").text, "unset",
      "and only to it")
  end)
end)

t.test("run_code returns the code's exception as error, and code reads a file envd wrote",
  function(ctx)
  local sbx = ctx.code
  default_turn(function()
    local ex = sbx:run_code("print('before')\n1 / 0")
    t.ok(ex.error, "no error for 1 / 0")
    t.eq(ex.error.name, "ZeroDivisionError")
    t.eq(ex.error.value, "division by zero")
    t.match(ex.error.traceback, "ZeroDivisionError")
    t.eq(ex.logs.stdout, { "before\n" }, "output before the error is kept")
    -- code and files share the sandbox: a file written through envd is read by the code
    sbx.files:write("/home/user/from_envd.txt", ctx.run_id)
    t.eq(sbx:run_code("open('/home/user/from_envd.txt').read()").text, ctx.run_id)
  end)
end)

t.test("run_code returns a matplotlib figure as a png result", { requires = { "code_display" } },
  function(ctx)
  local sbx = ctx.code
  local fig = default_turn(function()
    return sbx:run_code("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()")
  end)
  local png
  for _, r in ipairs(fig.results) do png = png or r.png end
  t.ok(png, "no png among the results")
  t.eq(png:sub(1, 11), "iVBORw0KGgo", "the png result is base64 of a PNG image (its signature)")
end)

t.test("code contexts: own cwd and state, isolated from the default one, listed, removed",
  function(ctx)
  local sbx = ctx.code
  local c = sbx:create_code_context({ language = "python", cwd = "/tmp" })
  t.eq(c.language, "python")
  t.eq(c.cwd, "/tmp")
  t.eq(sbx:run_code("import os\nos.getcwd()", { context = c }).text, "/tmp")
  sbx:run_code("only_here = 1", { context = c })
  t.eq(sbx:run_code("only_here", { context = c }).text, "1")
  local other = default_turn(function() return sbx:run_code("only_here") end)
  t.eq(other.error and other.error.name, "NameError", "the default context sees another's state")
  local listed = false
  for _, x in ipairs(sbx:list_code_contexts()) do listed = listed or x.id == c.id end
  t.ok(listed, "the new context is not listed")
  sbx:remove_code_context(c)
  for _, x in ipairs(sbx:list_code_contexts()) do t.neq(x.id, c.id, "a removed context is listed") end
  t.eq(sbx:remove_code_context(c), false, "removing it again")
  t.raises("NotFound", function() sbx:run_code("1", { context = c }) end)
  t.raises("InvalidArgument", function()
    sbx:run_code("1", { context = sbx:create_code_context({}), language = "python" })
  end)
end)

t.test("restart_code_context drops a context's state", function(ctx)
  local sbx = ctx.code
  local c = sbx:create_code_context({ language = "python" })
  sbx:run_code("only_here = 1", { context = c })
  sbx:restart_code_context(c)
  local after = sbx:run_code("only_here", { context = c })
  t.eq(after.error and after.error.name, "NameError", "a restart drops the context's state")
  sbx:remove_code_context(c)
end)
