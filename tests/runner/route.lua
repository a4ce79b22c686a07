-- Runner case: one routing function (abx.route) for envd, sbx:http and run_code, which never
-- doubles a port when the sandbox's domain already carries one (issue 9, item 6).
-- Expected (-j 1): every test passes; exit code 0.
-- expect-line: ^PASSED +tests/runner/route\.lua::route builds host, header and envd_url targets
-- expect-line: ^PASSED +tests/runner/route\.lua::a domain with a port is not given a second one
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
