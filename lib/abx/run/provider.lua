-- abx.run.provider: turns a configured provider into a live sandbox connection. For `kind: local` it
-- starts the embedded platform (`abxlua serve`) as a child and stops it at the end of the run;
-- with `tls: true`, as `abxlua serve --tls`: the connection then uses E2B's default addressing
-- (https://api.<domain>:<port>, https://<port>-<id>.<domain>:<port>, or with header routing the
-- shared host https://sandbox.<domain>:<port>), and every HTTPS transfer of the run trusts the CA
-- serve names on its ready line (core.set_ca_file).
-- For `kind: remote` it resolves the credentials: each of API key, API URL and domain is looked up
-- under its two names (ABX_SANDBOX_* first, then E2B_*) in the environment, then in .env at the
-- project root (the working directory), then in scenarios/.env; the first found wins. API URL and
-- domain fall back to the provider's config. Where each value came from is recorded; the API key
-- is registered with core.add_secret (masked in every sink). Every credential and secret-named
-- variable of the environment and the .env files is registered before any of this, under every
-- kind of provider, by abx.run.secrets (abx.run.config.load calls it).
local core = require("abx.core")
local cjson = require("cjson")
local sandbox = require("abx.client.sandbox")
local opensandbox = require("abx.client.opensandbox")
local semantics = require("abx.client.semantics")
local flavor = require("abx.run.flavor")

local M = {}

-- The .env files read after the environment, in order of precedence.
M.DOTENV_FILES = { ".env", "scenarios/.env" }

-- The credentials of a remote provider: the name shown when it is missing comes first.
M.CREDENTIALS = {
  { field = "api_key", names = { "ABX_SANDBOX_API_KEY", "E2B_API_KEY" }, secret = true },
  { field = "api_url", names = { "ABX_SANDBOX_BASE_URL", "E2B_API_URL" } },
  { field = "domain", names = { "ABX_SANDBOX_DOMAIN", "E2B_DOMAIN" } },
}

-- The admin credential of the API-key routes on a remote provider (Authorization: Bearer; with
-- ABX_SANDBOX_TEAM_ID as X-Team-ID when set): optional, looked up like the API key.
M.ACCESS_TOKEN_ENV = { "ABX_SANDBOX_ACCESS_TOKEN", "E2B_ACCESS_TOKEN" }

local dotenv_cache = nil

---Reads the .env files once per process (a missing file is fine). Their secrets are registered
---by abx.run.secrets.register (abx.run.config.load calls it), not here: the config's exemptions
---apply to them.
---@return table[] files { path =, exists =, values = {KEY = value}, errors = {{line, message}} }
function M.dotenv()
  if dotenv_cache then return dotenv_cache end
  local files = {}
  for _, path in ipairs(M.DOTENV_FILES) do
    local f = { path = path, exists = false, values = {}, errors = {} }
    if core.exists(path) and not core.isdir(path) then
      f.exists = true
      local text, err = core.read_file(path)
      if not text then
        f.errors[1] = { line = 0, message = "cannot read: " .. tostring(err) }
      else
        local ok, values, errors = pcall(core.dotenv_parse, text)
        if ok then
          f.values, f.errors = values, errors
        else
          f.errors[1] = { line = 0, message = tostring(values) }
        end
      end
    end
    files[#files + 1] = f
  end
  dotenv_cache = files
  return files
end

local warned = false

---Writes the malformed lines of the .env files to stderr, once per process.
function M.warn_dotenv()
  if warned then return end
  warned = true
  for _, f in ipairs(M.dotenv()) do
    for _, e in ipairs(f.errors) do
      core.ewrite(string.format("abxlua: warning: %s:%d: %s (line skipped)\n", f.path, e.line,
        e.message))
    end
  end
end

-- The variables abxlua itself reads, from the environment and then the .env files (besides a
-- provider's credential_env and region_env, and what a scenario reads with t.secret). A .env name
-- with one of abxlua's prefixes that is none of these is warned about (M.warn_unknown_dotenv):
-- a typo there would otherwise be ignored silently.
M.VARIABLES = { "ABX_SANDBOX_API_KEY", "E2B_API_KEY", "ABX_SANDBOX_BASE_URL", "E2B_API_URL",
  "ABX_SANDBOX_DOMAIN", "E2B_DOMAIN", "E2B_SANDBOX_URL", "ABX_REGION", "ABX_PROVIDER",
  "ABX_FLAVOR", "ABX_CONFIG", "E2E_SANDBOX_TTL", "E2E_RUN_ID", "E2E_CODE_TEMPLATE",
  "E2E_SERVER_TEMPLATE", "ABX_LOCAL_URL", "ABX_LOCAL_API_KEY", "ABX_SANDBOX_ACCESS_TOKEN",
  "E2B_ACCESS_TOKEN", "ABX_SANDBOX_TEAM_ID", "E2E_VOLUME_ACCEPTANCE", "E2E_VOLUME_OWNER_RUN",
  "E2E_VOLUME_RW_NAME", "E2E_VOLUME_RO_NAME", "E2E_VOLUME_TEMPLATE" }
M.PREFIXES = { "ABX_", "E2B_", "E2E_" }

---Warns (stderr, once per name) about each .env name with an abxlua prefix that abxlua does not
---read: not in M.VARIABLES nor a configured provider's credential_env or region_env.
---@param cfg table a loaded config
function M.warn_unknown_dotenv(cfg)
  local known = {}
  for _, n in ipairs(M.VARIABLES) do known[n] = true end
  for _, p in pairs(cfg.providers or {}) do
    if type(p) == "table" then
      for _, n in ipairs(p.credential_env or {}) do known[n] = true end
      if p.region_env then known[p.region_env] = true end
    end
  end
  for _, f in ipairs(M.dotenv()) do
    local names = {}
    for n in pairs(f.values) do names[#names + 1] = n end
    table.sort(names)
    for _, n in ipairs(names) do
      local prefixed = false
      for _, pre in ipairs(M.PREFIXES) do
        if n:sub(1, #pre) == pre then prefixed = true end
      end
      if prefixed and not known[n] then
        core.ewrite(string.format("abxlua: warning: %s: %s is not a variable abxlua reads "
          .. "(ignored; known: %s)\n", f.path, n, table.concat(M.VARIABLES, ", ")))
      end
    end
  end
end

---Forgets the .env files read (tests and long-lived callers).
function M.reset() dotenv_cache, warned = nil, false end

---Looks a name up: the environment, then the .env files.
---@param name string
---@return string|nil value, string|nil source "environment" or the .env file's path
function M.lookup(name)
  local v = core.getenv(name)
  if v and v ~= "" then return v, "environment" end
  for _, f in ipairs(M.dotenv()) do
    v = f.values[name]
    if v and v ~= "" then return v, f.path end
  end
  return nil
end

-- The first of several names: every name in the environment, then every name in each .env file
-- (the environment wins over a file whatever the name).
local function lookup_any(names)
  for _, n in ipairs(names) do
    local v = core.getenv(n)
    if v and v ~= "" then return v, "environment", n end
  end
  for _, f in ipairs(M.dotenv()) do
    for _, n in ipairs(names) do
      local v = f.values[n]
      if v and v ~= "" then return v, f.path, n end
    end
  end
  return nil
end

---The region of a provider: ABX_REGION, then its region_env, each in the environment then the
---.env files; then its config `region`.
---@param name string
---@param p table provider settings
---@return string|nil region, string|nil source, string[] vars (the variables looked at, in order)
function M.region(name, p)
  local vars = { "ABX_REGION" }
  if p.region_env then vars[#vars + 1] = p.region_env end
  local v, source, via = lookup_any(vars)
  if v then return v, source .. " (" .. via .. ")", vars end
  if p.region then return p.region, "config (providers." .. name .. ".region)", vars end
  return nil, nil, vars
end

---A display form of a secret that never shows it: its prefix up to the last `_` among the
---first 8 characters (e2b_, sk_e2b_), then ****.
---@param value string|nil
---@return string
function M.masked(value)
  if not value then return "(none)" end
  local prefix = value:sub(1, 8):match("^([%w_]*_)") or ""
  if #prefix * 3 > #value then prefix = "" end
  return prefix .. "****"
end

---Resolves a provider's endpoint and credentials without opening anything.
---@param name string
---@param p table provider settings (abx.run.config)
---@return table r { name, kind, api_url, domain, envd_routing, envd_url, capabilities,
---  credentials = { {field, name, value, source, via, secret} ... }, missing = {names},
---  tls = boolean (kind local only: `tls: true`) }
function M.resolve(name, p)
  local r = { name = name, kind = p.kind, envd_routing = p.envd_routing or "host",
    capabilities = p.capabilities or {}, credentials = {}, missing = {}, protocol = p.protocol,
    route_version = p.route_version, pagination = p.pagination, create = p.create, ttl = p.ttl,
    auth_header = p.auth_header, ca_file = p.ca_file }
  if p.kind == "local" then
    r.envd_routing = p.envd_routing or "headers"
    r.domain = p.domain or (p.tls and "e2b.localhost" or "localhost")
    r.tls = p.tls == true
    return r
  end
  local region, region_source, region_vars = M.region(name, p)
  r.region, r.region_source = region, region_source
  for _, c in ipairs(M.CREDENTIALS) do
    local names = c.names
    if c.field == "api_key" and p.credential_env then names = p.credential_env end
    c = { field = c.field, names = names, secret = c.secret }
    local v, source, via = lookup_any(c.names)
    if not v and c.field ~= "api_key" and p[c.field] then
      local where = "providers." .. name .. "." .. c.field
      -- ${region} only in the config's value (a variable's value is the user's, used as is)
      v = semantics.substitute_region(p[c.field], region, where, region_vars)
      source, via = "config", where
      if v ~= p[c.field] then source = "config, region from " .. region_source end
    end
    r[c.field] = v
    r.credentials[#r.credentials + 1] = { field = c.field, name = c.names[1], value = v,
      source = source, via = via, secret = c.secret }
    if v and c.secret then core.add_secret(v) end
  end
  -- the SDKs derive one from the other (reference §1.1): https://api.<domain>
  if not r.api_url and r.domain then
    r.api_url = "https://api." .. r.domain
    r.credentials[2].value, r.credentials[2].source = r.api_url, "derived from the domain"
  end
  if not r.domain and r.api_url then
    r.domain = r.api_url:match("^https?://api%.([^/:]+)")
    if r.domain then
      r.credentials[3].value, r.credentials[3].source = r.domain, "derived from the API URL"
    end
  end
  r.envd_url = M.lookup("E2B_SANDBOX_URL") or p.envd_url
  if not r.api_key then r.missing[#r.missing + 1] = r.credentials[1].name end
  if not r.api_url then r.missing[#r.missing + 1] = "ABX_SANDBOX_BASE_URL" end
  if not r.domain and r.envd_routing == "host" and not r.envd_url then
    r.missing[#r.missing + 1] = "ABX_SANDBOX_DOMAIN"
  end
  return r
end

---Checks what opening a provider would refuse for its configuration alone: a protocol without
---a client in this build, a `${region}` with no region. Reads the environment and .env files.
---@param name string
---@param p table provider settings
---Raises: InvalidArgument naming the provider and what to set
function M.preflight(name, p)
  if p.kind ~= "remote" then return end
  if p.protocol and p.protocol ~= "e2b" and p.protocol ~= "opensandbox" then
    -- no silent fallback onto the E2B client: it would speak the wrong wire
    core.error("InvalidArgument", 0, string.format("providers.%s: protocol %s has no client in "
      .. "this build (e2b, opensandbox)", name, p.protocol))
  end
  M.resolve(name, p)
end

-- The serve logs kept in the state dir (each kept only after a run that was not clean) are
-- removed by age, never by count: on a shared machine a count would let other runs prune the log
-- a failed run has just named. A log goes once it is SERVE_LOG_MAX_AGE_DAYS old; a log younger
-- than SERVE_LOG_MIN_AGE_DAYS is never removed, whatever the max age says.
M.SERVE_LOG_MAX_AGE_DAYS = 7
M.SERVE_LOG_MIN_AGE_DAYS = 1

---Removes the `serve-*.log` files of `dir` last modified `max_age_days` ago or earlier (at least
---SERVE_LOG_MIN_AGE_DAYS: younger logs always stay). Files it cannot remove are left.
---@param dir string
---@param max_age_days number
---@param now? integer Unix seconds (default os.time())
---@return integer removed
function M.prune_serve_logs(dir, max_age_days, now)
  local days = math.max(max_age_days, M.SERVE_LOG_MIN_AGE_DAYS)
  local cutoff = (now or os.time()) - math.floor(days * 86400)
  local removed = 0
  for _, n in ipairs(core.readdir(dir) or {}) do
    if n:match("^serve%-[%w_-]+%.log$") then
      local st = core.lstat(dir .. "/" .. n)
      if st and st.type == "file" and st.mtime <= cutoff and os.remove(dir .. "/" .. n) then
        removed = removed + 1
      end
    end
  end
  return removed
end

-- True when this process may do what the local platform needs (namespaces, mounts, cgroups):
-- effective uid 0 or CAP_SYS_ADMIN (bit 21 of CapEff, capabilities(7)) in /proc/self/status.
local function privileged()
  local status = core.read_file("/proc/self/status") or ""
  local euid = status:match("\nUid:%s+%d+%s+(%d+)")
  if euid == "0" then return true end
  local cap = status:match("\nCapEff:%s+(%x+)")
  local v = cap and tonumber(cap:sub(-8), 16)
  return v ~= nil and (v >> 21) & 1 == 1
end

---Raises the error of a local platform that did not start, in one line: the cause serve logged
---(its last line that is not a warning) and, without root or CAP_SYS_ADMIN, that the local
---provider needs them. Raises InvalidArgument (not privileged: a usage error) or Transport.
---@param err any core.platform_start's error
---@param log? string serve's log
function M.start_failure(err, log)
  local cause
  local text = log and core.read_file(log)
  for line in (text or ""):gmatch("[^\n]+") do
    -- serve's lines: "<ISO 8601 UTC time> abxlua serve: <message>" (platform/util/log.h)
    local msg = line:match("^%d%d%d%d%-%d%d%-%d%dT[%d:.]+Z abxlua serve: (.*)$")
      or line:match("^abxlua serve: (.*)$")
    if msg and not msg:match("^warning:") then cause = msg end
  end
  local msg = core.is_error(err) and err.message or tostring(err)
  if not privileged() then
    core.error("InvalidArgument", 0, string.format("the local provider needs root (or "
      .. "CAP_SYS_ADMIN) for its sandboxes' namespaces, mounts and cgroups: %s; run as root, or "
      .. "use a remote provider (--provider NAME)", cause or msg))
  end
  core.error("Transport", 0, "the local platform did not start: " .. (cause or msg)
    .. (log and (" (log: " .. log .. ")") or ""))
end

-- The connection options of a provider's wire semantics (abx.run.config): auth header,
-- pagination, route version, TTL bounds (named after providers.<entry>.ttl in their errors) and,
-- for OpenSandbox, the create polling. `entry` is the config entry they come from.
local function wire_semantics(opts, p, entry)
  opts.auth_header = p.auth_header
  opts.pagination = p.pagination
  opts.v2_routes = p.route_version == "v2"
  if p.ttl and (p.ttl.min or p.ttl.max) then
    opts.ttl = { mode = p.ttl.mode, min = p.ttl.min, max = p.ttl.max,
      where = "providers." .. entry .. ".ttl" }
  end
  if p.protocol == "opensandbox" then opts.create = p.create end
end

-- The connection options of a running local platform (`abxlua serve`) from its ready line
-- {url, port, api_key, domain, ca_cert?}: its address, key and routing, and with a flavour that
-- cloud entry's semantics on serve's address.
local function local_opts(opts, p, ready)
  local tls = p.tls == true
  opts.api_url, opts.api_key, opts.domain = ready.url, ready.api_key, ready.domain
  opts.envd_url = ready.url
  if tls then
    -- the domain a sandbox answer names (with the port: E2B's SDK derives every URL from it),
    -- and the shared host the ingress takes E2b-Sandbox-* headers on (platform/ingress/ingress.h);
    -- the certificate covers *.<domain>
    opts.domain = ready.domain .. ":" .. math.tointeger(ready.port)
    opts.envd_url = "https://sandbox." .. ready.domain .. ":" .. math.tointeger(ready.port)
  end
  if p.flavor then
    -- the cloud entry's semantics (abx.run.flavor.apply), on serve's address
    opts.api_url = ready.url .. (flavor.API_PATH[p.flavor] or "")
    opts.envd_routing = p.envd_routing
    wire_semantics(opts, p, p.flavor_of)
  end
end

-- The connection of the options: OpenSandbox's /v1 lifecycle API and execd
-- (abx.client.opensandbox) for a cloud entry of that protocol or the local flavour that takes
-- its semantics (abx.run.flavor), never the E2B client; otherwise the E2B client.
local function connection(name, p, opts)
  if p.protocol == "opensandbox" then
    opts.provider_name = name
    -- E2B-only connection fields (API-key management, the local/remote kind): OpenSandbox's
    -- client refuses unknown options
    opts.v2_routes, opts.kind, opts.access_token, opts.team_id, opts.ca_file = nil, nil, nil, nil, nil
    opts.config_entry = nil
    opts.create_timeout = nil -- its create polls for the state, up to its create.deadline
    return opensandbox.connection(opts)
  end
  return sandbox.connection(opts)
end

-- serve's command line for provider settings `p` (domain, TLS, warm pool, flavour, build cache,
-- the caller's run.serve_args); notes the flavour and the build cache in `info`. `dir`: the state dir.
local function serve_args(p, run, info, dir)
  local tls = p.tls == true
  local args = { "--domain", p.domain or (tls and "e2b.localhost" or "localhost") }
  if tls then args[#args + 1] = "--tls" end
  if p.pool then -- serve's warm pool (platform/sandbox/warm_pool.h); default: its own
    args[#args + 1] = "--pool"
    args[#args + 1] = p.pool
  end
  if p.flavor then -- abx.run.flavor: serve reproduces that platform's wire
    args[#args + 1] = "--flavor"
    args[#args + 1] = p.flavor
    info.flavor = p.flavor
  end
  -- serve keeps its build cache (step layers by content) and the templates built from it
  -- between runs in <state dir>/build-cache: its default (`abxlua serve --help`, --build-cache),
  -- the same dir as core.state_dir()'s, so every local serve shares it
  if (p.capability_set or {}).templates_build and dir then
    info.build_cache = dir .. "/build-cache"
  end
  -- what a caller adds to serve's command line (abx.accept.skill_tools: --git-root DIR)
  for _, a in ipairs(run.serve_args or {}) do args[#args + 1] = a end
  return args
end

-- Starts serve and reads its ready line. Returns the child and the ready line (a table).
-- Raises: Transport when it does not start, Protocol when the ready line is not the expected JSON.
local function start_serve(args, log, tls)
  local sok, child = pcall(core.platform_start, args, 20, log)
  if not sok then M.start_failure(child, log) end
  local ok, ready = pcall(cjson.decode, child.ready)
  if not ok or type(ready) ~= "table" or type(ready.api_key) ~= "string"
    or type(ready.url) ~= "string" or not math.tointeger(ready.port)
    or type(ready.domain) ~= "string" or (tls and type(ready.ca_cert) ~= "string") then
    core.platform_stop(child.pid, 5)
    core.error("Protocol", 0, "the local platform's ready line is not the expected JSON")
  end
  return child, ready
end

-- Takes serve's credentials (masked from now on) and, with TLS, its CA into `opts` and `info`,
-- then checks that serve answers. Stops serve and raises when its CA or health check fails.
local function adopt_serve(child, ready, info, opts, tls)
  core.add_secret(ready.api_key)
  -- the admin credential of serve's API-key routes (platform/api/apikeys.h); absent from a serve
  -- that has none (then the connection has none either)
  if type(ready.access_token) == "string" then
    core.add_secret(ready.access_token)
    opts.access_token = ready.access_token
  end
  if tls then
    -- before the first request: the health check below is already HTTPS
    local cok, cerr = pcall(core.set_ca_file, ready.ca_cert)
    if not cok then
      core.platform_stop(child.pid, 5)
      error(cerr, 0)
    end
    info.ca_cert = ready.ca_cert
    opts.ca_file = ready.ca_cert
  end
  -- the ready line comes after the listen socket exists; one health check proves it answers
  local hok, health = pcall(core.request, { url = ready.url .. "/health", timeout = 10 })
  if not hok or health.status ~= 200 then
    core.platform_stop(child.pid, 5)
    core.error("Transport", 0, "the local platform started but GET /health failed: "
      .. (hok and ("status " .. health.status) or tostring(health)) .. " (log: "
      .. tostring(info.log) .. ")")
  end
end

-- Kind local: starts serve (its log in the state dir) and fills `opts` and `info` from it.
local function open_local(p, run, info, opts)
  -- the log is private (0600 in the 0700 state dir, no API key in it); kept only after a failure
  local dir, derr = core.state_dir()
  if dir then
    info.log = dir .. "/serve-" .. run.run_id .. ".log"
  else
    core.ewrite("abxlua: warning: the local platform's log is not kept: " .. derr .. "\n")
  end
  local tls = p.tls == true
  local args = serve_args(p, run, info, dir)
  if dir then M.prune_serve_logs(dir, M.SERVE_LOG_MAX_AGE_DAYS) end
  local child, ready = start_serve(args, info.log, tls)
  adopt_serve(child, ready, info, opts, tls)
  local_opts(opts, p, ready)
  info.ready = ready
  info.endpoint, info.base_url = opts.api_url, ready.url
  info.stop = function(keep_log)
    core.platform_stop(child.pid, 15)
    if tls then core.set_ca_file(nil) end -- the CA went with serve's state dir
    -- the log only matters when something failed
    if info.log and not keep_log then os.remove(info.log) end
  end
  info.pid = child.pid
end

-- Kind remote: resolves the endpoint and credentials into `opts` and `info`. Returns false when
-- credentials are missing (info.missing names them).
local function open_remote(name, p, info, opts)
  M.preflight(name, p)
  local r = M.resolve(name, p)
  info.resolved = r
  info.endpoint = r.api_url
  M.warn_dotenv()
  if #r.missing > 0 then
    info.missing = r.missing
    return false
  end
  info.credential_source = r.credentials[1].source .. " (" .. r.credentials[1].via .. ")"
  opts.api_url, opts.api_key, opts.domain = r.api_url, r.api_key, r.domain
  opts.envd_url = r.envd_url
  -- the API-key routes' admin credential, optional (abx.client.apikey): never required to run
  local token, tsource = lookup_any(M.ACCESS_TOKEN_ENV)
  if token then
    core.add_secret(token)
    opts.access_token, info.access_token_source = token, tsource
    opts.team_id = M.lookup("ABX_SANDBOX_TEAM_ID")
  end
  wire_semantics(opts, p, name)
  if p.ca_file then
    opts.ca_file = p.ca_file
    core.set_ca_file(p.ca_file) -- every HTTPS transfer of the run (engine/http.h)
    info.stop = function() core.set_ca_file(nil) end
  else
    info.stop = function() end
  end
  return true
end

---Opens the provider.
---@param name string provider name
---@param p table provider settings from the config
---@param run table { run_id =, defaults =, serve_args? = {string} (kind local: appended to
---  serve's arguments) }
---@return table|nil conn a sandbox.connection (an abx.client.opensandbox connection for protocol
---  opensandbox), or nil when credentials are missing
---@return table info { endpoint =, stop = function(keep_log), missing = {names}, resolved =
---  (M.resolve), log = path | nil } (local: serve's log, <core.state_dir()>/serve-<run id>.log,
---  removed by stop unless keep_log; ca_cert = path, with tls: true; build_cache = path: with
---  the templates_build capability, serve's build cache and template store (its default,
---  <core.state_dir()>/build-cache);
---  ready = serve's ready line, local only: what M.attach takes)
---Raises: Transport when the local platform does not start
function M.open(name, p, run)
  local info = { name = name, kind = p.kind, capabilities = p.capabilities or {} }
  local opts = { request_timeout = run.defaults.request_timeout,
    create_timeout = run.defaults.create_timeout,
    default_metadata = { e2e = run.run_id }, envd_routing = p.envd_routing or "host",
    v2_routes = (p.capability_set or {}).v2_routes == true, kind = p.kind,
    -- where the route version is set: a flavoured run takes its cloud entry's (abx.run.flavor)
    config_entry = "providers." .. (p.flavor_of or name) }
  if p.kind == "local" then
    open_local(p, run, info, opts)
  elseif not open_remote(name, p, info, opts) then
    return nil, info
  end
  return connection(name, p, opts), info
end

---Connects to a local platform that is already running (`abxlua sandbox serve`'s state file, or
---ABX_LOCAL_URL and ABX_LOCAL_API_KEY: abx.run.sandbox_cli.common): the connection M.open would
---give for it, without starting or stopping anything. With `tls: true` every HTTPS transfer of
---the process trusts ready.ca_cert.
---@param name string provider name (kind local)
---@param p table provider settings
---@param ready table serve's ready line {url, port, api_key, domain, ca_cert?}
---@param run table { run_id =, defaults = }
---@return table conn
function M.attach(name, p, ready, run)
  core.add_secret(ready.api_key)
  if p.tls == true then core.set_ca_file(ready.ca_cert) end
  local opts = { request_timeout = run.defaults.request_timeout,
    create_timeout = run.defaults.create_timeout,
    default_metadata = { e2e = run.run_id }, envd_routing = p.envd_routing or "host",
    v2_routes = (p.capability_set or {}).v2_routes == true,
    config_entry = "providers." .. (p.flavor_of or name) }
  local_opts(opts, p, ready)
  return connection(name, p, opts)
end

return M
