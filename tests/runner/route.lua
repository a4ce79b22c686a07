-- Runner case: one routing function (abx.route) for envd, sbx:http and run_code, which never
-- doubles a port when the sandbox's domain already carries one (issue 9, item 6); the Sandbox
-- alone holds its id, domain and tokens, which all three read from it (issue 9, item 8).
-- Expected (-j 1): every test passes; exit code 0.
-- expect-line: ^PASSED +tests/runner/route\.lua::route builds host, header and envd_url targets
-- expect-line: ^PASSED +tests/runner/route\.lua::a domain with a port is not given a second one
-- expect-line: ^PASSED +tests/runner/route\.lua::the sandbox alone owns its id, domain and tokens
-- expect-no-line: ^(FAILED|ERROR)
local t = require("abx.test")

t.test("route builds host, header and envd_url targets", function()
  local route = require("abx.route")
  local host = { routing = "host", api_url = "http://127.0.0.1:4000", sandbox_id = "i1",
    domain = "localhost" }
  local url, connect_to, h = route.target(host, 8080, "/x")
  t.eq(url, "http://8080-i1.localhost:4000/x")
  t.eq(connect_to, "127.0.0.1:4000")
  t.eq(h, {})
  host.domain = "localhost:3000"
  url, connect_to = route.target(host, 8080, "/x")
  t.eq(url, "http://8080-i1.localhost:3000/x", "the domain's port, not a second one")
  t.eq(connect_to, "127.0.0.1:4000")
  t.eq(route.port_url(host, 8080), "http://8080-i1.localhost:3000")
  local remote = { routing = "host", api_url = "https://api.e2b.app", sandbox_id = "i2",
    domain = "e2b.app" }
  url, connect_to = route.target(remote, 49983, "/health")
  t.eq(url, "https://49983-i2.e2b.app/health")
  t.eq(connect_to, nil)
  local hdr = { routing = "headers", api_url = "http://127.0.0.1:4000",
    envd_url = "http://127.0.0.1:5000/", sandbox_id = "i3", domain = "localhost" }
  url, connect_to, h = route.target(hdr, 49999, "/execute")
  t.eq(url, "http://127.0.0.1:5000/execute")
  t.eq(connect_to, nil)
  t.eq(h, { ["E2b-Sandbox-Id"] = "i3", ["E2b-Sandbox-Port"] = "49999" })
  hdr.envd_url = nil
  t.eq((route.target(hdr, 49983, "/health")), "http://127.0.0.1:4000/health", "envd_url defaults to api_url")
end)

t.test("a domain with a port is not given a second one", { timeout = 120 }, function(ctx)
  local conn = ctx.conn:with({ envd_routing = "host" })
  local sbx = conn:create({ template = "base", timeout = 120 })
  ctx.finally(function() sbx:kill() end)
  sbx.domain = "localhost:3000" -- as a provider whose domain carries a port answers
  t.eq(sbx:port_url(8080), "http://8080-" .. sbx.id .. ".localhost:3000")
  local r = sbx:http(49983, { path = "/health" })
  t.ok(r.status == 200 or r.status == 204, "envd's /health through the ingress: " .. r.status)
  -- no code interpreter listens on 49999 here: the ingress answers 502, it is not a bad URL
  local ok, err = pcall(sbx.run_code, sbx, "1")
  t.eq(ok, false)
  t.eq(err.status, 502, "run_code reached the ingress: " .. tostring(err))
end)

t.test("the sandbox alone owns its id, domain and tokens", { timeout = 120 }, function(ctx)
  local conn = ctx.conn:with({ envd_routing = "host" })
  local sbx = conn:create({ template = "base", timeout = 120 })
  ctx.finally(function() sbx:kill() end)
  local envd = sbx:envd_request()
  t.ok(envd:headers()["X-Access-Token"], "a secure sandbox's envd calls carry its token")
  -- what sbx:connect does with an answer that names another domain (or a test, as above)
  sbx.domain = "localhost:3000"
  local want = "http://49983-" .. sbx.id .. ".localhost:3000"
  t.eq(sbx:port_url(49983), want, "sbx:http and run_code route by sbx.domain")
  t.eq((envd:url("/health")), want .. "/health", "envd routes by sbx.domain too")
  t.eq((sbx:envd_request():url("/health")), want .. "/health")
  -- the token: a copy without one sends none, the original still sends its own
  local bare = sbx:with({ access_token = false })
  t.eq(bare:envd_request():headers()["X-Access-Token"], nil, "the copy's envd sends no token")
  t.ok(envd:headers()["X-Access-Token"], "the original keeps its token")
  -- connect takes the answer's domain and token; every client follows the Sandbox at once
  sbx:connect()
  t.eq(sbx.domain, "localhost", "connect took the answer's domain")
  t.ok(rawequal(sbx:envd_request(), envd), "the same envd client, reading the Sandbox")
  t.eq((envd:url("/health")), "http://49983-" .. sbx.id .. ".localhost:" ..
    sbx.conn.api_url:match(":(%d+)$") .. "/health")
  t.eq(sbx.files:write("/tmp/owned", "x").path, "/tmp/owned")
  t.eq(sbx.files:read("/tmp/owned"), "x")
  t.eq(sbx.commands:run("cat /tmp/owned").stdout, "x")
  local r = sbx:http(49983, { path = "/health" })
  t.ok(r.status == 200 or r.status == 204, "envd's /health through sbx:http: " .. r.status)
  local ok, err = pcall(sbx.run_code, sbx, "1")
  t.eq(ok, false)
  t.eq(err.status, 502, "run_code reached the ingress: " .. tostring(err))
end)
