-- abx.run.cmd.doctor: `abxlua doctor`: what the run would use and whether it answers. Shows the
-- resolved provider, endpoint, domain, envd routing, capabilities, the credentials found and where
-- (values masked: e2b_****), the .env files read; then checks connectivity: for the local
-- platform, start it, GET /health and list sandboxes; for a remote provider, GET {api_url}/health
-- and an authenticated list of one sandbox (GET /v2/sandboxes?limit=1; OpenSandbox: GET /sandboxes).
-- Exit 0 when every check passed, 1 when one failed, 4 for usage errors (unknown provider, bad
-- config).
local core = require("abx.core")
local config = require("abx.run.config")
local provider = require("abx.run.provider")

local M = {}

function M.configure(parser)
  local cmd = parser:command("doctor", "Show the resolved provider, endpoint and credentials "
    .. "(masked, with their source) and check connectivity.")
  cmd:option("--provider", "Provider from config/abxlua.yaml (default: ABX_PROVIDER or config).")
  require("abx.run.suite").add_flavor_option(cmd)
  cmd:option("--config", "Config file (default: ABX_CONFIG or config/abxlua.yaml).")
end

local function say(fmt, ...) core.write(string.format(fmt, ...) .. "\n") end

local function field(label, value) say("  %-14s %s", label .. ":", value) end

-- One check: runs fn (which returns a detail string or raises) and prints an ok / FAIL line.
local function check(results, label, fn)
  local ok, detail = pcall(fn)
  results[#results + 1] = ok
  if ok then
    say("  ok    %s%s", label, detail and (": " .. detail) or "")
  else
    say("  FAIL  %s: %s", label, tostring(detail))
  end
  return ok
end

local function show_dotenv()
  say("dotenv files (after the environment, in this order):")
  for _, f in ipairs(provider.dotenv()) do
    if not f.exists then
      say("  %-14s absent", f.path)
    else
      local n = 0
      for _ in pairs(f.values) do n = n + 1 end
      say("  %-14s %d binding(s), %d malformed line(s)", f.path, n, #f.errors)
      for _, e in ipairs(f.errors) do
        say("    %s:%d: %s (skipped)", f.path, e.line, e.message)
      end
    end
  end
end

local function show_credentials(r)
  say("credentials:")
  for _, c in ipairs(r.credentials) do
    local shown = c.value and (c.secret and provider.masked(c.value) or c.value) or "missing"
    local from = ""
    if c.source then from = "  from " .. c.source .. (c.via and (" (" .. c.via .. ")") or "") end
    say("  %-22s %s%s", c.name, shown, from)
  end
end

local function health(url)
  local resp = core.request({ method = "GET", url = url .. "/health", timeout = 10 })
  -- the spec says 204; the Go server writes 200 (reference §9.2)
  if resp.status ~= 200 and resp.status ~= 204 then
    error("status " .. resp.status .. " (expected 200 or 204)", 0)
  end
  return "status " .. resp.status
end

local function list_one(conn)
  local items = conn:list_page({ limit = 1 })
  return string.format("status 200, %d sandbox(es) on the first page", #items)
end

-- The list call's label and the health URL: OpenSandbox lists with GET /sandboxes (page +
-- pageSize) and serves /health at its root, not under /v1 (docs/protocol/e2b-v2-and-peers.md §4).
local function list_label(p)
  if p.protocol == "opensandbox" then return "GET /sandboxes?pageSize=1 (authenticated)" end
  return "GET /v2/sandboxes?limit=1 (authenticated)"
end

local function health_base(p, api_url)
  if p.protocol == "opensandbox" then return (api_url:gsub("/v1/?$", "")) end
  return api_url
end

local function local_checks(cfg, pname, p, results)
  local conn, info
  check(results, "start the local platform", function()
    conn, info = provider.open(pname, p, { run_id = "doctor-" .. core.random_hex(4),
      defaults = cfg.defaults })
    return "listening on " .. info.endpoint
  end)
  if not conn then
    results[#results + 1] = false
    say("  FAIL  %s: not tried (the platform did not start)", list_label(p))
    return
  end
  check(results, "GET " .. info.base_url .. "/health", function() return health(info.base_url) end)
  check(results, list_label(p), function() return list_one(conn) end)
  if info.stop then info.stop(false) end
end

local function remote_checks(cfg, pname, p, r, results)
  if r.api_url then
    local base = health_base(p, r.api_url)
    check(results, "GET " .. base .. "/health", function() return health(base) end)
  else
    results[#results + 1] = false
    say("  FAIL  GET /health: no API URL (set ABX_SANDBOX_BASE_URL or providers.%s.api_url)", pname)
  end
  if #r.missing > 0 then
    results[#results + 1] = false
    say("  FAIL  %s: not tried, missing credentials [%s]", list_label(p),
      table.concat(r.missing, ", "))
    return
  end
  check(results, list_label(p), function()
    local conn = provider.open(pname, p, { run_id = "doctor-" .. core.random_hex(4),
      defaults = cfg.defaults })
    return list_one(conn)
  end)
end

-- The provider's wire semantics (abx.run.config), and the proxy variables libcurl will read.
local function show_semantics(r)
  local example = ({ host = "<port>-<id>.<domain>", headers = "E2b-Sandbox-Id/-Port headers on "
    .. "the sandbox URL", path = "<domain>/kruise/<id>/<port>" })[r.envd_routing]
  field("routing", example or r.envd_routing)
  field("protocol", r.protocol or "e2b")
  field("route version", tostring(r.route_version))
  local c = r.create or {}
  field("create mode", c.mode == "poll" and string.format("poll (202, then GET until running; "
    .. "deadline %ss, every %ss)", tostring(c.deadline), tostring(c.interval or 1))
    or "sync (201)")
  local t = r.ttl or {}
  field("ttl", string.format("%s, min %s, max %s, server default %s", tostring(t.mode),
    t.min and (t.min .. " s") or "(server's)", t.max and (t.max .. " s") or "(server's)",
    t.default and (t.default .. " s") or "(unknown)"))
  field("pagination", tostring(r.pagination))
  field("auth header", tostring(r.auth_header))
  if r.region then field("region", r.region .. " from " .. r.region_source) end
  field("CA bundle", r.ca_file or "the system's")
  local proxies = {}
  for _, n in ipairs({ "http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
    "no_proxy", "NO_PROXY" }) do
    local v = core.getenv(n)
    if v and v ~= "" then
      -- a proxy URL may carry user:password
      proxies[#proxies + 1] = n .. "=" .. (v:find("@", 1, true) and (v:gsub("//[^@]*@", "//****@")) or v)
    end
  end
  field("proxy", #proxies > 0 and table.concat(proxies, " ") or "none (libcurl's variables unset)")
end

function M.execute(args)
  local cfg = config.load(config.find(args.config))
  local pname, p = config.provider(cfg, args.provider, args.flavor)
  local r = provider.resolve(pname, p)
  say("abxlua doctor")
  field("config", cfg.path or "(built-in defaults)")
  field("provider", pname .. " (kind " .. tostring(p.kind) .. ")"
    .. (p.description and (": " .. p.description) or ""))
  if p.kind == "local" then
    field("endpoint", "the embedded platform (started on a free port for each run)"
      .. (r.tls and ", HTTPS with its own CA (tls: true)" or "")
      .. (p.flavor and string.format(" as `serve --flavor %s`, with the semantics of providers.%s",
        p.flavor, p.flavor_of) or ""))
  else
    field("endpoint", r.api_url or "missing")
  end
  field("domain", r.domain or "missing")
  field("envd routing", r.envd_routing .. (r.envd_url and (" via " .. r.envd_url) or ""))
  field("capabilities", #r.capabilities > 0 and table.concat(r.capabilities, ", ") or "none")
  if p.kind ~= "local" or p.flavor then
    show_semantics(r)
  end
  if p.kind ~= "local" then
    show_credentials(r)
    show_dotenv()
  end
  say("checks:")
  local results = {}
  local ok, errs = core.run(function()
    if p.kind == "local" then
      local_checks(cfg, pname, p, results)
    else
      remote_checks(cfg, pname, p, r, results)
    end
  end)
  if not ok then
    core.ewrite("abxlua: " .. tostring(errs) .. " internal task error(s)\n")
    return 3
  end
  local failed = 0
  for _, v in ipairs(results) do if not v then failed = failed + 1 end end
  if failed > 0 then
    say("doctor: %d of %d check(s) failed", failed, #results)
    return 1
  end
  say("doctor: all %d check(s) passed", #results)
  return 0
end

return M
