-- Provider semantics case (run by tests/runner/run_case.sh from the source root; issue 12 part 1):
-- URL construction for every routing style (abx.client.route), TTL conversion and bounds
-- (abx.client.semantics), ${region} substitution and the missing-region error, pagination
-- parameters and the paging loop's checks (abx.client.pages), and the exact messages of
-- abx.run.config's provider validation. Pure functions and
-- a connection to a closed port (the TTL bound must fail before any request).
-- tests/providers/tests.cmake sets ABX_TEST_REGION=eu-test-1 and clears ABX_REGION.
-- Sources: docs/protocol/e2b-control-plane.md §3.4, §7, §8; docs/protocol/e2b-v2-and-peers.md §4-5.
-- Expected: 10 passed, exit 0.
-- expect-line: ^10 passed, 0 failed
local t = require("abx.test")
local core = require("abx.core")
local route = require("abx.client.route")
local sem = require("abx.client.semantics")
local sandbox = require("abx.client.sandbox")
local config = require("abx.run.config")
local provider = require("abx.run.provider")

-- A closed port answers Transport at once: no retries (sandbox.RETRY) to wait through.
sandbox.RETRY.attempts = 1

-- The message of the InvalidArgument `fn` raises.
local function message(fn)
  return t.raises("InvalidArgument", fn).message
end

-- config.load of a YAML text (a temporary file, removed after).
local function load_yaml(text)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
  local ok, cfg = pcall(config.load, path)
  os.remove(path)
  if not ok then error(cfg, 0) end
  return cfg, path
end

-- The message config.load raises for `providers: {x: <body>}`, with the temp path replaced by F.
local function config_error(body)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write("providers:\n  x:\n" .. body)
  f:close()
  local ok, err = pcall(config.load, path)
  os.remove(path)
  t.ok(not ok and core.is_error(err) and err.kind == "InvalidArgument",
    "an InvalidArgument: " .. tostring(err))
  return (err.message:gsub(path:gsub("%p", "%%%0"), "F"))
end

t.test("route: host, headers and path routing build the expected URLs", function()
  local r = { routing = "host", api_url = "https://api.e2b.app", sandbox_id = "isb1",
    domain = "e2b.app" }
  local url, connect_to, h = route.target(r, 49983, "/health")
  t.eq(url, "https://49983-isb1.e2b.app/health")
  t.eq(connect_to, nil)
  t.eq(next(h), nil)
  -- loopback api_url: its port joins the URL, the connection goes to its address
  r = { routing = "host", api_url = "http://127.0.0.1:3000", sandbox_id = "isb1", domain = "cube.app" }
  url, connect_to = route.target(r, 8080, "/x?y=1")
  t.eq(url, "http://8080-isb1.cube.app:3000/x?y=1")
  t.eq(connect_to, "127.0.0.1:3000")
  r = { routing = "headers", api_url = "https://api.e2b.app", envd_url = "https://sandbox.e2b.app/",
    sandbox_id = "isb1", domain = "e2b.app" }
  url, connect_to, h = route.target(r, 49983, "/files")
  t.eq(url, "https://sandbox.e2b.app/files")
  t.eq(connect_to, nil)
  t.eq(h["E2b-Sandbox-Id"], "isb1")
  t.eq(h["E2b-Sandbox-Port"], "49983")
  -- ACS path protocol: DOMAIN/kruise/<id>/<port>
  r = { routing = "path", api_url = "https://acs.example.com/kruise/api", sandbox_id = "sbx-7",
    domain = "acs.example.com" }
  url, connect_to, h = route.target(r, 49983, "/health")
  t.eq(url, "https://acs.example.com/kruise/sbx-7/49983/health")
  t.eq(connect_to, nil)
  t.eq(next(h), nil)
  t.eq(route.path_url(r, 8080), "https://acs.example.com/kruise/sbx-7/8080")
  r.api_url = "http://127.0.0.1:8081"
  url, connect_to = route.target(r, 3000, "/")
  t.eq(url, "http://acs.example.com/kruise/sbx-7/3000/")
  t.eq(connect_to, "127.0.0.1:8081")
  t.eq(message(function() route.target({ routing = "dns", api_url = "http://a", sandbox_id = "i",
    domain = "d" }, 1, "/") end), "envd_routing must be \"headers\", \"host\" or \"path\", got dns")
  t.eq(message(function() route.target(r, 0, "/") end), "port must be an integer 1..65535, got 0")
  t.eq(message(function() sandbox.connection({ api_url = "http://a", envd_routing = "dns" }) end),
    "envd_routing must be \"headers\", \"host\" or \"path\", got dns")
end)

t.test("TTL: bounds checked with exact messages; seconds <-> absolute RFC 3339 expiresAt", function()
  local acs = { min = 30, max = 2592000, where = "providers.acs.ttl" }
  t.eq(sem.check_ttl(acs, 30), 30)
  t.eq(sem.check_ttl(acs, 2592000), 2592000)
  t.eq(sem.check_ttl(acs, 29.2), 30) -- rounded up first, as the body sends it
  t.eq(message(function() sem.check_ttl(acs, 29, "conn:create") end),
    "conn:create: timeout 29 s is below this provider's minimum of 30 s (providers.acs.ttl.min)")
  t.eq(message(function() sem.check_ttl(acs, 2592001, "sbx:set_timeout") end),
    "sbx:set_timeout: timeout 2592001 s is above this provider's maximum of 2592000 s "
    .. "(providers.acs.ttl.max)")
  t.eq(message(function() sem.check_ttl(nil, "300") end),
    "timeout: timeout must be a number of seconds, got 300")
  t.eq(sem.check_ttl(nil, 0), 0) -- no bounds configured: the server's to refuse
  -- 2026-12-01T17:41:13Z = 1796146873 (date -u -d @1796146873)
  t.eq(sem.expires_at(1796146873, 0), "2026-12-01T17:41:13Z")
  t.eq(sem.expires_at(1796146873.7, 300), "2026-12-01T17:46:13Z")
  t.eq(sem.expires_at(1796146873, 86400 * 31), "2027-01-01T17:41:13Z")
  t.eq(sem.parse_rfc3339("2026-12-01T17:41:13Z"), 1796146873)
  t.eq(sem.parse_rfc3339("2026-12-01T19:41:13+02:00"), 1796146873)
  t.eq(sem.parse_rfc3339("2026-12-01T12:41:13.5-05:00"), 1796146873.5)
  t.eq(sem.parse_rfc3339("2024-02-29T00:00:00Z"), 1709164800)
  t.eq(sem.parse_rfc3339("1970-01-01T00:00:00Z"), 0)
  t.eq(sem.seconds_until(1796146873, "2026-12-01T17:46:13Z"), 300)
  t.eq(sem.seconds_until(1796146873, sem.expires_at(1796146873, 3600)), 3600)
  for _, bad in ipairs({ "2026-12-01", "2026-13-01T00:00:00Z", "2026-12-01T17:41:13",
    "2026-12-01T17:41:13+0200", "2026-12-01T17:41:13.Z" }) do
    t.eq(message(function() sem.parse_rfc3339(bad) end), "not an RFC 3339 date-time: " .. bad)
  end
  t.eq(sem.ttl_body(nil, 0, 299.5).timeout, 300)
  local opensandbox_ttl = { mode = "expires_at", min = 60, where = "providers.opensandbox.ttl" }
  t.eq(sem.ttl_body(opensandbox_ttl, 1796146873, 60).expiresAt, "2026-12-01T17:42:13Z")
  t.eq(message(function() sem.ttl_body(opensandbox_ttl, 1796146873, 59) end),
    "timeout: timeout 59 s is below this provider's minimum of 60 s (providers.opensandbox.ttl.min)")
  t.eq(message(function() sem.ttl_body({ mode = "forever" }, 0, 1) end),
    "ttl.mode must be lifetime or expires_at, got forever")
end)

t.test("TTL bounds fail before any request (a closed port would give Transport)", function()
  local conn = sandbox.connection({ api_url = "http://127.0.0.1:1", api_key = "k",
    ttl = { min = 30, max = 2592000, where = "providers.acs.ttl" } })
  t.eq(message(function() conn:create({ timeout = 10 }) end),
    "conn:create: timeout 10 s is below this provider's minimum of 30 s (providers.acs.ttl.min)")
  t.eq(message(function() conn:connect("isb1", { timeout = 2592001 }) end),
    "conn:connect: timeout 2592001 s is above this provider's maximum of 2592000 s "
    .. "(providers.acs.ttl.max)")
  t.eq(message(function() conn:resume("isb1", { timeout = 1 }) end),
    "conn:resume: timeout 1 s is below this provider's minimum of 30 s (providers.acs.ttl.min)")
  -- within bounds the request is made: the closed port answers Transport
  t.raises("Transport", function() conn:create({ timeout = 30 }) end)
  t.eq(message(function() sandbox.connection({ api_url = "http://a", ttl = { mode = "expires_at" } }) end),
    "sandbox.connection: ttl.mode expires_at is not spoken by the E2B client (lifetime only)")
  t.eq(message(function() sandbox.connection({ api_url = "http://a", pagination = "offset" }) end),
    "sandbox.connection: pagination must be cursor or page, got offset")
end)

t.test("region: ${region} substitution and the missing-region error naming the variables", function()
  local vars = { "ABX_REGION", "FC_REGION" }
  t.eq(sem.substitute_region("https://api.${region}.e2b.fc.aliyuncs.com", "cn-hangzhou",
    "providers.alicloud-fc.api_url", vars), "https://api.cn-hangzhou.e2b.fc.aliyuncs.com")
  t.eq(sem.substitute_region("${region}.x.${region}", "us-east-1", "w", vars), "us-east-1.x.us-east-1")
  t.eq(sem.substitute_region("https://api.e2b.app", nil, "w", vars), "https://api.e2b.app")
  t.eq(message(function() sem.substitute_region("https://api.${region}.x", nil,
    "providers.alicloud-fc.api_url", vars) end), "providers.alicloud-fc.api_url needs ${region}: "
    .. "set ABX_REGION or FC_REGION or providers.alicloud-fc.region")
  t.eq(message(function() sem.substitute_region("https://${zone}.x", "a", "p.x.api_url", vars) end),
    "p.x.api_url: unknown placeholder ${zone} (known: ${region})")
  t.eq(message(function() sem.substitute_region("https://${region}.x", "a.b/c", "p.x.api_url", vars) end),
    "p.x.api_url: region must be letters, digits and '-' (e.g. cn-hangzhou), got \"a.b/c\"")
  -- through the config and abx.run.provider: region_env's variable (set by tests.cmake), then
  -- the config's region; none -> the error names every variable looked at
  local cfg = load_yaml([[
providers:
  fc:
    kind: remote
    api_url: https://api.${region}.e2b.fc.aliyuncs.com
    domain: ${region}.e2b.fc.aliyuncs.com
    region_env: ABX_TEST_REGION
    region: cn-beijing
  fixed:
    kind: remote
    api_url: https://api.${region}.sandbox.aliyuncs.com
    region: ap-southeast-1
  none:
    kind: remote
    api_url: https://api.${region}.sandbox.aliyuncs.com
    region_env: ABX_TEST_NO_SUCH_REGION
]])
  local r = provider.resolve("fc", cfg.providers.fc)
  t.eq(r.api_url, "https://api.eu-test-1.e2b.fc.aliyuncs.com")
  t.eq(r.domain, "eu-test-1.e2b.fc.aliyuncs.com")
  t.eq(r.region_source, "environment (ABX_TEST_REGION)")
  r = provider.resolve("fixed", cfg.providers.fixed)
  t.eq(r.api_url, "https://api.ap-southeast-1.sandbox.aliyuncs.com")
  t.eq(r.domain, "ap-southeast-1.sandbox.aliyuncs.com") -- derived from the API URL
  t.eq(message(function() provider.resolve("none", cfg.providers.none) end),
    "providers.none.api_url needs ${region}: set ABX_REGION or ABX_TEST_NO_SUCH_REGION or "
    .. "providers.none.region")
end)

t.test("pagination: cursor and page parameters and next tokens", function()
  local function flat(q)
    local out = {}
    for _, kv in ipairs(q) do out[#out + 1] = kv[1] .. "=" .. kv[2] end
    return table.concat(out, "&")
  end
  t.eq(flat(sem.page_query("cursor", 100, nil)), "limit=100")
  t.eq(flat(sem.page_query("cursor", 5, "tok/1")), "limit=5&nextToken=tok/1")
  t.eq(flat(sem.page_query("cursor", nil, nil)), "")
  t.eq(flat(sem.page_query("page", 20, nil)), "page=1&pageSize=20")
  t.eq(flat(sem.page_query("page", 20, "3")), "page=3&pageSize=20")
  t.eq(flat(sem.page_query("page", nil, nil)), "page=1")
  t.eq(message(function() sem.page_query("page", 20, "0") end),
    "page pagination: the token must be a page number >= 1, got 0")
  t.eq(message(function() sem.page_query("page", 20, "abc") end),
    "page pagination: the token must be a page number >= 1, got abc")
  t.eq(message(function() sem.page_query("offset", 1) end), "pagination must be cursor or page, got offset")
  t.eq(sem.next_token("cursor", { ["x-next-token"] = "abc" }), "abc")
  t.eq(sem.next_token("cursor", { ["x-next-token"] = "" }), nil)
  t.eq(sem.next_token("cursor", {}), nil)
  t.eq(sem.next_token("page", {}, { items = {}, pagination = { page = 2, pageSize = 20,
    totalItems = 60, totalPages = 3, hasNextPage = true } }), "3")
  t.eq(sem.next_token("page", {}, { items = {}, pagination = { page = 3, hasNextPage = false } }), nil)
  t.eq(sem.next_token("page", {}, { items = {} }), nil)
end)

-- issue 27 part 4: the one paging loop (abx.client.pages) checks every page and has a bound
t.test("pagination: a lying list is a Protocol error at once, and the loop is bounded", function()
  local pages = require("abx.client.pages")
  -- a list of fixed pages: pages[i] = {ids, next token}; counts the requests
  local function fake(list)
    local n = 0
    return function(token)
      n = n + 1
      local p = list[math.min(n, #list)]
      local items = {}
      for i, id in ipairs(p[1]) do items[i] = { id = id } end
      return items, p[2], token
    end, function() return n end
  end
  local function id_of(it) return it.id end
  local function follow(style, list)
    local fetch, count = fake(list)
    local ok, v = pcall(pages.follow, "GET /x", style, fetch, id_of)
    return ok, v, count()
  end
  local ok, v, n = follow("cursor", { { { "a" }, "t1" }, { { "b" }, "t2" }, { { "c" } } })
  t.ok(ok and #v == 3 and n == 3, "an honest list: every item once")
  ok, v, n = follow("cursor", { { { "a" }, "same" } })
  t.eq({ ok, v.kind, v.message, v.request, n }, { false, "Protocol", "next token \"same\" repeats "
    .. "after 2 pages (first given by page 1): the platform ignores the token; stopped instead of "
    .. "asking forever", "GET /x", 2 })
  ok, v, n = follow("cursor", { { { "a" }, "t1" }, { { "a" }, "t2" }, { { "c" } } })
  t.eq({ ok, v.message, n }, { false, "page 2 repeats id \"a\" of page 1 (the platform ignores "
    .. "the next token, or its cursor is not stable)", 2 })
  -- page numbers: a sandbox made between two pages shifts them (a repeat is dropped), but a page
  -- of nothing new is the platform ignoring the page number
  ok, v = follow("page", { { { "a", "b" }, "2" }, { { "b", "c" }, "3" }, { { "d" } } })
  t.ok(ok and #v == 4, "page: an id seen before is dropped, not an error")
  ok, v, n = follow("page", { { { "a", "b" }, "2" }, { { "a", "b" }, "3" }, { { "c" } } })
  t.eq({ ok, v.message, n }, { false, "page 2 holds only items of earlier pages (id \"a\" of page "
    .. "1; the platform ignores the page number)", 2 })
  local max = pages.MAX_PAGES
  pages.MAX_PAGES = 5
  local count = 0
  ok, v = pcall(pages.follow, "GET /x", "cursor", function()
    count = count + 1
    return { { id = "i" .. count } }, "t" .. count
  end, id_of)
  pages.MAX_PAGES = max
  t.eq({ ok, v.message, count }, { false, "more than 5 pages (next token \"t5\"): stopped "
    .. "(abx.client.pages.MAX_PAGES)", 5 })
end)

t.test("config: every provider of config/abxlua.yaml resolves its semantics", function()
  local cfg = config.load("config/abxlua.yaml")
  local want = {
    e2b = { "e2b", "v2", "cursor", "X-API-Key", "sync", "lifetime", "host" },
    ["alicloud-fc"] = { "e2b", "v1", "cursor", "X-API-Key", "sync", "lifetime", "host" },
    ["alicloud-express"] = { "e2b", "v1", "cursor", "X-API-Key", "sync", "lifetime", "host" },
    acs = { "e2b", "v1", "cursor", "X-API-Key", "sync", "lifetime", "host" },
    cubesandbox = { "e2b", "v1", "cursor", "X-API-Key", "sync", "lifetime", "host" },
    opensandbox = { "opensandbox", "v1", "page", "OPEN-SANDBOX-API-KEY", "poll", "expires_at",
      "headers" },
  }
  for name, w in pairs(want) do
    local p = cfg.providers[name]
    t.eq({ p.protocol, p.route_version, p.pagination, p.auth_header, p.create.mode, p.ttl.mode,
      p.envd_routing }, w, name)
  end
  t.eq({ cfg.providers.acs.ttl.min, cfg.providers.acs.ttl.max }, { 30, 2592000 }, "acs TTL bounds")
  t.eq(cfg.providers.cubesandbox.ttl.default, 15, "cubesandbox default TTL")
  t.eq(cfg.providers.opensandbox.credential_env, { "ABX_SANDBOX_API_KEY", "OPEN_SANDBOX_API_KEY" })
  t.eq(cfg.providers.opensandbox.create.deadline, 120)
  t.eq(cfg.providers.e2b.credential_env, { "ABX_SANDBOX_API_KEY", "E2B_API_KEY" })
  t.eq(cfg.providers["local"].protocol, nil, "local has no remote semantics")
  -- opensandbox opens its own adapter (abx.client.opensandbox), never the E2B client; without a
  -- key it is reported missing like any provider
  local conn, info = provider.open("opensandbox", cfg.providers.opensandbox,
    { run_id = "x", defaults = cfg.defaults })
  if conn then
    t.eq(getmetatable(conn), require("abx.client.opensandbox").Connection)
  else
    t.ok(info.missing and #info.missing > 0, "a missing credential reported")
  end
end)

t.test("config: unknown keys and bad values are refused with exact messages", function()
  t.eq(config_error("    kind: remote\n    regoin: x\n"), "F: providers.x: unknown key \"regoin\" "
    .. "(known: api_url, auth_header, ca_file, capabilities, create, credential_env, description, "
    .. "domain, envd_routing, envd_url, flavor, kind, pagination, pool, protocol, region, "
    .. "region_env, route_version, tls, ttl)")
  -- pool: serve's --pool, on a local provider only, in its form
  t.eq(config_error("    kind: remote\n    pool: base=1\n"),
    "F: providers.x.pool applies to kind local only (the local platform's warm pool)")
  t.eq(config_error("    kind: local\n    pool: base\n"), "F: providers.x.pool must be none or "
    .. "TEMPLATE=N[,TEMPLATE=N...] with N 0..8 (e.g. code-interpreter-v1=1), got \"base\"")
  t.eq(config_error("    kind: local\n    pool: base=1,code-interpreter-v1=9\n"), "F: providers.x.pool "
    .. "must be none or TEMPLATE=N[,TEMPLATE=N...] with N 0..8 (e.g. code-interpreter-v1=1), got "
    .. "\"base=1,code-interpreter-v1=9\"")
  t.eq(config_error("    kind: remote\n    envd_routing: dns\n"),
    "F: providers.x.envd_routing must be one of host, headers, path, got dns")
  t.eq(config_error("    kind: remote\n    protocol: grpc\n"),
    "F: providers.x.protocol must be one of e2b, opensandbox, got grpc")
  t.eq(config_error("    kind: remote\n    route_version: v3\n"),
    "F: providers.x.route_version must be one of v1, v2, got v3")
  t.eq(config_error("    kind: remote\n    pagination: offset\n"),
    "F: providers.x.pagination must be one of cursor, page, got offset")
  t.eq(config_error("    kind: remote\n    ttl: {mode: lifetime, minimum: 3}\n"),
    "F: providers.x.ttl: unknown key \"minimum\" (known: default, max, min, mode)")
  t.eq(config_error("    kind: remote\n    ttl: {min: thirty}\n"), "F: providers.x.ttl.min must be a number")
  t.eq(config_error("    kind: remote\n    ttl: {min: -1}\n"), "F: providers.x.ttl.min must be >= 0, got -1")
  t.eq(config_error("    kind: remote\n    ttl: {mode: forever}\n"),
    "F: providers.x.ttl.mode must be one of lifetime, expires_at, got forever")
  t.eq(config_error("    kind: remote\n    ttl: {min: 60, max: 30}\n"),
    "F: providers.x.ttl.min (60) is above ttl.max (30)")
  t.eq(config_error("    kind: remote\n    create: {mode: async}\n"),
    "F: providers.x.create.mode must be one of sync, poll, got async")
  t.eq(config_error("    kind: remote\n    create: {wait: 3}\n"),
    "F: providers.x.create: unknown key \"wait\" (known: deadline, interval, mode)")
  t.eq(config_error("    kind: remote\n    protocol: opensandbox\n    create: {mode: poll}\n"),
    "F: providers.x.create.deadline (seconds > 0) is required with create.mode poll")
  t.eq(config_error("    kind: remote\n    create: {mode: sync, deadline: 5}\n"),
    "F: providers.x.create.deadline and .interval apply to create.mode poll only")
  t.eq(config_error("    kind: remote\n    pagination: page\n"), "F: providers.x: ttl.mode "
    .. "expires_at, pagination page and create.mode poll are OpenSandbox's wire: set protocol: opensandbox")
  t.eq(config_error("    kind: remote\n    route_version: v2\n"),
    "F: providers.x.route_version v2 contradicts its capabilities (without v2_routes)")
  t.eq(config_error("    kind: remote\n    route_version: v1\n    capabilities: [v2_routes]\n"),
    "F: providers.x.route_version v1 contradicts its capabilities (with v2_routes)")
  t.eq(config_error("    kind: local\n    ca_file: /etc/ssl/x.pem\n"),
    "F: providers.x.ca_file applies to kind remote only (the local platform's wire is E2B's)")
  t.eq(config_error("    kind: remote\n    auth_header: \"X API Key\"\n"),
    "F: providers.x.auth_header must be an HTTP header name, got X API Key")
  t.eq(config_error("    kind: remote\n    credential_env: []\n"),
    "F: providers.x.credential_env must list one or more variable names")
  t.eq(config_error("    kind: remote\n    credential_env: [OK_NAME, \"bad-name\"]\n"),
    "F: providers.x.credential_env[2] must be an environment variable name, got bad-name")
  t.eq(config_error("    kind: remote\n    region_env: 1abc\n"),
    "F: providers.x.region_env must be an environment variable name, got 1abc")
  t.eq(config_error("    kind: remote\n    credential_env: OPEN_SANDBOX_API_KEY\n"),
    "F: providers.x.credential_env must be a list")
end)

t.test("credentials: credential_env names the key's variables; the missing one is reported", function()
  local cfg = load_yaml([[
providers:
  os:
    kind: remote
    protocol: opensandbox
    api_url: http://127.0.0.1:1/v1
    envd_routing: headers
    credential_env: [ABX_TEST_NO_SUCH_KEY, ABX_TEST_NO_SUCH_KEY2]
    auth_header: OPEN-SANDBOX-API-KEY
]])
  local r = provider.resolve("os", cfg.providers.os)
  t.eq(r.credentials[1].name, "ABX_TEST_NO_SUCH_KEY")
  t.eq(r.missing, { "ABX_TEST_NO_SUCH_KEY" })
  t.eq(r.auth_header, "OPEN-SANDBOX-API-KEY")
  t.eq(r.pagination, "page")
end)

t.test("provider.open hands the provider's semantics to the E2B client", function()
  -- ABX_TEST_KEY is set by tests/providers/tests.cmake; the port is closed
  local cfg = load_yaml([[
providers:
  kruise:
    kind: remote
    api_url: http://127.0.0.1:1/kruise/api
    domain: acs.example.com
    envd_routing: path
    credential_env: [ABX_TEST_KEY]
    auth_header: X-Test-Key
    ttl: {min: 30, max: 2592000}
]])
  local conn, info = provider.open("kruise", cfg.providers.kruise, { run_id = "x",
    defaults = config.DEFAULTS.defaults })
  t.ok(conn, "opened: " .. tostring(info.missing and table.concat(info.missing, ",")))
  t.eq(info.credential_source, "environment (ABX_TEST_KEY)")
  t.eq({ conn.auth_header, conn.pagination, conn.v2_routes, conn.envd_routing },
    { "X-Test-Key", "cursor", false, "path" })
  t.eq(conn.ttl, { mode = "lifetime", min = 30, max = 2592000, where = "providers.kruise.ttl" })
  t.eq(message(function() conn:create({ timeout = 15 }) end),
    "conn:create: timeout 15 s is below this provider's minimum of 30 s (providers.kruise.ttl.min)")
  t.raises("Transport", function() conn:create({ timeout = 300 }) end)
  info.stop()
end)
