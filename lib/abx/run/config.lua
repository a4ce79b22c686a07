-- abx.run.config: loads config/abxlua.yaml over built-in defaults and resolves the provider.
local core = require("abx.core")
local secrets = require("abx.run.secrets")
local suggest = require("abx.suggest")

local M = {}

-- What a provider can do beyond the core lifecycle, files and commands. A test names the ones it
-- needs in `requires`; a provider lists the ones it has in `capabilities:`.
-- v2_routes: create and connect through POST /v2/sandboxes and /v2/sandboxes/{id}/connect (E2B
-- SDK ≥ 2.51; docs/protocol/e2b-v2-and-peers.md §1.1); without it the client speaks the v1 routes.
-- What platforms differ on beyond routes (issue 12; docs/protocol/e2b-v2-and-peers.md §5,
-- docs/protocol/e2b-control-plane.md §8.1): api_key_check (a wrong or missing API key is refused; CubeSandbox takes
-- any), env_vars (create's envVars reach commands; CubeSandbox ignores them), secure (secure sandboxes: envd
-- access tokens, signed file URLs, traffic tokens; "access tokens: not compatible" on Alibaba FC
-- and Flash, ignored by CubeSandbox), access_token (a secure sandbox's data plane refuses a request
-- without its access token: envd's X-Access-Token, OpenSandbox's execd X-EXECD-ACCESS-TOKEN from
-- secureAccess), connect_resume (connect resumes a paused sandbox and
-- extends the TTL; CubeSandbox's does neither), ttl_shorten (set_timeout may shorten the TTL;
-- OpenKruise only extends), short_ttl (TTLs of a few seconds; OpenKruise's minimum is 30 s),
-- refresh (POST /sandboxes/{id}/refreshes; not on OpenKruise), metrics_disk (the metrics' disk
-- fields are real; FC: placeholders), envd (the data plane is E2B's envd: the default user `user`
-- with home /home/user, output bytes exactly as written, numeric pids, an envd version;
-- OpenSandbox's execd runs as root and sends output line by line, docs/protocol/e2b-v2-and-peers.md §4;
-- a test names envd only for envd itself, its version), and what envd does that OpenSandbox's execd
-- (specs/execd-api.yaml @ 3bb6fad3) does not: default_user (commands and file writes run as `user`
-- in /home/user unless asked otherwise; execd runs them as its own user, root, in /),
-- exact_output (output bytes exactly as written; execd's events are lines without their
-- terminator), process_list (commands:list and numeric pids; execd has command ids and no list),
-- e2b_api (E2B's control-plane wire itself: route names, 404 for an unknown template, the
-- sandbox info's CPU and memory, the edge's 502 bodies), api_keys (managed team API keys: E2B's
-- /api-keys routes under an admin credential, abx.client.apikey; not on Alibaba, OpenKruise,
-- CubeSandbox or OpenSandbox), code_display (the code interpreter sends display outputs, a
-- matplotlib figure or display(), as results, as E2B's does; OpenSandbox's execd sends only the
-- cell's value, pkg/jupyter/execute/execute.go).
M.CAPABILITIES = { "pause", "snapshot", "volume", "file_metadata", "network_update",
  "code_interpreter", "code_display", "metrics", "templates_build", "pty", "watch", "v2_routes",
  "api_key_check", "env_vars", "secure", "access_token", "connect_resume", "ttl_shorten",
  "short_ttl", "refresh", "metrics_disk", "envd", "default_user", "exact_output", "process_list",
  "e2b_api", "api_keys" }
M.CAPABILITY_SET = {}
for _, c in ipairs(M.CAPABILITIES) do M.CAPABILITY_SET[c] = true end

-- The embedded local platform's capabilities when the config does not list them: every one, the
-- code interpreter included (serve builds in code-interpreter-v1, platform/template/templates.c).
M.LOCAL_CAPABILITIES = { "pause", "snapshot", "volume", "file_metadata", "network_update",
  "code_interpreter", "code_display", "metrics", "templates_build", "pty", "watch", "v2_routes",
  "api_key_check", "env_vars", "secure", "access_token", "connect_resume", "ttl_shorten",
  "short_ttl", "refresh", "metrics_disk", "envd", "default_user", "exact_output", "process_list",
  "e2b_api", "api_keys" }

local PROVIDER_KEYS = { kind = "string", api_url = "string", domain = "string",
  envd_routing = "string", envd_url = "string", capabilities = "table", description = "string",
  tls = "boolean", protocol = "string", region = "string", region_env = "string",
  auth_header = "string", credential_env = "table", route_version = "string", create = "table",
  ttl = "table", pagination = "string", ca_file = "string", flavor = "string", pool = "string" }
M.PROVIDER_KEYS = {}
for k in pairs(PROVIDER_KEYS) do M.PROVIDER_KEYS[#M.PROVIDER_KEYS + 1] = k end
table.sort(M.PROVIDER_KEYS)

-- The wire a provider speaks: e2b (the E2B client, with the provider's semantics applied) or
-- opensandbox (its own /v1 lifecycle API and execd, reference §8.2; docs/protocol/e2b-v2-and-peers.md §4).
M.PROTOCOLS = { "e2b", "opensandbox" }
M.ROUTINGS = { "host", "headers", "path" }
M.ROUTE_VERSIONS = { "v1", "v2" }
M.CREATE_MODES = { "sync", "poll" }
M.TTL_MODES = { "lifetime", "expires_at" }
M.PAGINATIONS = { "cursor", "page" }
-- the keys of the nested mappings, with their types
M.CREATE_KEYS = { mode = "string", deadline = "number", interval = "number" }
M.TTL_KEYS = { mode = "string", min = "number", max = "number", default = "number" }
-- where a remote provider's API key is read from when it names no credential_env
M.DEFAULT_CREDENTIAL_ENV = { "ABX_SANDBOX_API_KEY", "E2B_API_KEY" }

local function one_of(list, v)
  for _, x in ipairs(list) do if x == v then return true end end
  return false
end

local function sorted_keys(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = k end
  table.sort(out)
  return table.concat(out, ", ")
end

-- A nested mapping (create:, ttl:): its keys and their types, fail closed.
local function check_mapping(where, key, v, keys)
  for k, x in pairs(v) do
    if type(k) ~= "string" or not keys[k] then
      core.error("InvalidArgument", 0, string.format("%s.%s: unknown key %q (known: %s)", where,
        key, tostring(k), sorted_keys(keys)))
    end
    if type(x) ~= keys[k] then
      core.error("InvalidArgument", 0, string.format("%s.%s.%s must be a %s", where, key, k, keys[k]))
    end
    if keys[k] == "number" and x < 0 then
      core.error("InvalidArgument", 0, string.format("%s.%s.%s must be >= 0, got %s", where, key, k,
        tostring(x)))
    end
  end
end

local function check_enum(where, key, v, list)
  if v ~= nil and not one_of(list, v) then
    core.error("InvalidArgument", 0, string.format("%s.%s must be one of %s, got %s", where, key,
      table.concat(list, ", "), tostring(v)))
  end
end

-- The domain of a `kind: local, tls: true` provider that names none: a wildcard certificate needs
-- two labels under it (Node's tls.checkServerIdentity refuses *.localhost; platform/util/tls.h).
M.LOCAL_TLS_DOMAIN = "e2b.localhost"

---True when `domain` has two or more non-empty labels of letters, digits and '-' (what
---`abxlua serve --tls` accepts, platform/util/tls.h abx_tls_domain_ok).
---@param domain string
---@return boolean
function M.tls_domain_ok(domain)
  if type(domain) ~= "string" or #domain > 200 then return false end
  local labels = 0
  for label in (domain .. "."):gmatch("([^.]*)%.") do
    if #label == 0 or #label > 63 or label:find("[^%w-]") then return false end
    labels = labels + 1
  end
  return labels >= 2
end

M.DEFAULTS = {
  defaults = { jobs = 4, max_sandboxes = 5, test_timeout = 300, teardown_timeout = 60,
    sandbox_ttl = 300, template = "base", request_timeout = 60, create_timeout = 900,
    build_jobs = 2, build_timeout = 1800, keep_failed_sandboxes = false, keep_failed_ttl = 1800,
    trace = "retain-on-failure" },
  provider = "local",
  providers = { ["local"] = { kind = "local", domain = "localhost", envd_routing = "headers" },
    -- the same platform over HTTPS in E2B's default addressing (`abxlua serve --tls`)
    ["local-tls"] = { kind = "local", tls = true, domain = "e2b.localhost",
      envd_routing = "host" } },
  markers = { e2e = "every test", known_issue = "a strict expected failure",
    flaky = "may fail for reasons outside the platform under test (rerun by --reruns N)" },
  known_issues = "config/known_issues.yaml",
  -- the languages every catalog entry needs a title and description in (KNOWN-ISSUES.md is en)
  known_issue_languages = { "en" },
}

-- The languages the known-issues catalog can be written in (abx.run.known_issues renders them).
M.KNOWN_ISSUE_LANGUAGES = { "en", "zh" }

---Checks `known_issues:` of the config: a file path, or a mapping {file, languages}. Returns the
---path (nil: the default) and the language list (nil: the default, English only).
---Raises: InvalidArgument naming the file, the key and the valid values
function M.check_known_issues(path, v)
  local where = (path or "config") .. ": known_issues"
  if v == nil or type(v) == "string" then return v, nil end
  if type(v) ~= "table" then
    core.error("InvalidArgument", 0, where .. " must be a file path or a mapping {file, languages}")
  end
  for k in pairs(v) do
    if k ~= "file" and k ~= "languages" then
      core.error("InvalidArgument", 0, string.format("%s: unknown key %q (known: file, languages)",
        where, tostring(k)))
    end
  end
  if v.file ~= nil and type(v.file) ~= "string" then
    core.error("InvalidArgument", 0, where .. ".file must be a path")
  end
  local langs = v.languages
  if langs == nil then return v.file, nil end
  if type(langs) ~= "table" or #langs == 0 then
    core.error("InvalidArgument", 0, where .. ".languages must be a non-empty list, e.g. [en, zh]")
  end
  local known, has_en = table.concat(M.KNOWN_ISSUE_LANGUAGES, ", "), false
  for i, l in ipairs(langs) do
    local ok = false
    for _, k in ipairs(M.KNOWN_ISSUE_LANGUAGES) do ok = ok or l == k end
    if not ok then
      core.error("InvalidArgument", 0, string.format("%s.languages[%d]: unknown language %q "
        .. "(known: %s)", where, i, tostring(l), known))
    end
    has_en = has_en or l == "en"
  end
  if not has_en then
    core.error("InvalidArgument", 0, where .. ".languages must include en (reports use the "
      .. "English title)")
  end
  return v.file, langs
end

local function merge(base, over)
  local out = {}
  for k, v in pairs(base) do out[k] = v end
  for k, v in pairs(over or {}) do
    if type(v) == "table" and type(out[k]) == "table" and #v == 0 then
      out[k] = merge(out[k], v)
    else
      out[k] = v
    end
  end
  return out
end

local function check_number(section, key, v)
  if type(v) ~= "number" or v <= 0 then
    core.error("InvalidArgument", 0, string.format(
      "config: %s.%s must be a positive number, got %s", section, key, tostring(v)))
  end
end

-- The warning that the built-in defaults apply is printed once per process.
local warned_defaults = false

---Finds the config file: the explicit path (--config), ABX_CONFIG, or the first
---config/abxlua.yaml found walking up from the working directory to / (as git finds .git), so
---abxlua works the same from any directory of a project. When none is found, a warning on stderr
---says that the built-in defaults apply (once per process) and nil is returned.
---@param explicit string|nil
---@return string|nil path (relative when found in the working directory, else absolute)
---Raises: InvalidArgument when an explicit path (--config, ABX_CONFIG) does not exist
function M.find(explicit)
  local p = explicit or require("abx.run.provider").lookup("ABX_CONFIG")
  if p then
    if not core.exists(p) then
      core.error("InvalidArgument", 0, "config file " .. p .. " does not exist (fix --config or ABX_CONFIG)")
    end
    return p
  end
  if core.exists("config/abxlua.yaml") then return "config/abxlua.yaml" end
  local cwd = core.realpath(".") or "."
  local dir = cwd:match("^(.*)/[^/]*$")
  while dir do
    local candidate = (dir == "" and "" or dir) .. "/config/abxlua.yaml"
    if core.exists(candidate) and not core.isdir(candidate) then return candidate end
    if dir == "" then break end
    dir = dir:match("^(.*)/[^/]*$")
  end
  if not warned_defaults then
    warned_defaults = true
    core.ewrite("abxlua: warning: no config/abxlua.yaml in " .. cwd .. " or any directory above "
      .. "it (and no --config or ABX_CONFIG): using the built-in defaults (provider local, no "
      .. "markers beyond e2e and known_issue)\n")
  end
  return nil
end

---The project root of a config path from M.find: the directory holding the `config/` directory
---the file is in; the working directory otherwise (no config, or a file elsewhere). Relative
---paths of the config (known_issues) and the scenarios' package.path are taken from it.
---@param path string|nil
---@return string root "." or a path
function M.root(path)
  if not path then return "." end
  if path:match("^config/[^/]+$") then return "." end
  local root = path:match("^(.*)/config/[^/]+$")
  if root then return root == "" and "/" or root end
  return "."
end

-- providers.<name>: a mapping of known keys with their types, its kind, and tls (kind local;
-- its domain, default LOCAL_TLS_DOMAIN, must take a wildcard certificate).
local function check_provider_shape(where, p)
  if type(p) ~= "table" then core.error("InvalidArgument", 0, where .. " must be a mapping") end
  for k, v in pairs(p) do
    local want = PROVIDER_KEYS[k]
    if not want then
      core.error("InvalidArgument", 0, string.format("%s: unknown key %q (known: %s)", where,
        tostring(k), table.concat(M.PROVIDER_KEYS, ", ")))
    end
    if type(v) ~= want then
      core.error("InvalidArgument", 0, string.format("%s.%s must be a %s%s", where, k,
        want == "table" and "list" or want, want == "boolean" and " (true or false)" or ""))
    end
  end
  if p.kind ~= "local" and p.kind ~= "remote" then
    core.error("InvalidArgument", 0, where .. ".kind must be local or remote, got "
      .. tostring(p.kind))
  end
  if p.tls ~= nil and p.kind ~= "local" then
    core.error("InvalidArgument", 0, where .. ".tls applies to kind local only (a remote "
      .. "provider's scheme is its api_url's)")
  end
  if p.tls then
    p.domain = p.domain or M.LOCAL_TLS_DOMAIN
    if not M.tls_domain_ok(p.domain) then
      core.error("InvalidArgument", 0, string.format("%s.domain must have two or more labels "
        .. "with tls: true (e.g. %s), got %s: TLS clients refuse a wildcard certificate for "
        .. "*.<one label>", where, M.LOCAL_TLS_DOMAIN, p.domain))
    end
  end
end

-- pool (kind local): serve's --pool (platform/sandbox/warm_pool.h): "none" or
-- "TEMPLATE=N[,TEMPLATE=N...]" with N 0..8.
local function check_pool(where, p)
  if p.pool == nil then return end
  if p.kind ~= "local" then
    core.error("InvalidArgument", 0, where .. ".pool applies to kind local only (the local "
      .. "platform's warm pool)")
  end
  local ok = p.pool == "none"
  if not ok then
    ok = true
    for part in (p.pool .. ","):gmatch("([^,]*),") do
      local name, n = part:match("^([%w._:-]+)=(%d+)$")
      ok = ok and name ~= nil and tonumber(n) <= 8
    end
  end
  if not ok then
    core.error("InvalidArgument", 0, string.format("%s.pool must be none or TEMPLATE=N[,TEMPLATE=N...] "
      .. "with N 0..8 (e.g. code-interpreter-v1=1), got %q", where, p.pool))
  end
end

-- The keys of a remote provider's wire are refused on kind local (its wire is E2B's); flavor
-- names the local flavour a remote provider is reproduced by.
local function check_provider_kind_keys(where, p)
  check_pool(where, p)
  if p.kind == "local" then
    for _, k in ipairs({ "protocol", "region", "region_env", "auth_header", "credential_env",
      "route_version", "create", "ttl", "pagination", "ca_file" }) do
      if p[k] ~= nil then
        core.error("InvalidArgument", 0, string.format("%s.%s applies to kind remote only (the "
          .. "local platform's wire is E2B's)", where, k))
      end
    end
  end
  if p.flavor ~= nil then
    local flavor = require("abx.run.flavor")
    if p.kind ~= "remote" then
      core.error("InvalidArgument", 0, where .. ".flavor applies to kind remote only (it names "
        .. "the local flavour that reproduces this provider: run --provider local --flavor NAME)")
    end
    check_enum(where, "flavor", p.flavor, flavor.NAMES)
  end
end

-- region_env and credential_env name environment variables; auth_header an HTTP header.
local function check_provider_names(where, p)
  if p.region_env and not p.region_env:match("^[%a_][%w_]*$") then
    core.error("InvalidArgument", 0, where .. ".region_env must be an environment variable name, got "
      .. p.region_env)
  end
  if p.auth_header and not p.auth_header:match("^[%w!#$%%&'*+.^_`|~-]+$") then
    core.error("InvalidArgument", 0, where .. ".auth_header must be an HTTP header name, got "
      .. p.auth_header)
  end
  if p.credential_env then
    if #p.credential_env == 0 then
      core.error("InvalidArgument", 0, where .. ".credential_env must list one or more variable names")
    end
    for i, n in pairs(p.credential_env) do
      if math.type(i) ~= "integer" or type(n) ~= "string" or not n:match("^[%a_][%w_]*$") then
        core.error("InvalidArgument", 0, string.format("%s.credential_env[%s] must be an "
          .. "environment variable name, got %s", where, tostring(i), tostring(n)))
      end
    end
  end
end

-- create and ttl: their keys and modes (create.mode poll takes a deadline; ttl.min <= ttl.max);
-- OpenSandbox's wire (expires_at, page, poll) only with protocol opensandbox.
local function check_provider_wire(where, p)
  if p.create then
    check_mapping(where, "create", p.create, M.CREATE_KEYS)
    check_enum(where, "create.mode", p.create.mode, M.CREATE_MODES)
    if p.create.mode == "poll" and not (p.create.deadline and p.create.deadline > 0) then
      core.error("InvalidArgument", 0, where .. ".create.deadline (seconds > 0) is required with "
        .. "create.mode poll")
    end
    if p.create.mode ~= "poll" and (p.create.deadline or p.create.interval) then
      core.error("InvalidArgument", 0, where .. ".create.deadline and .interval apply to "
        .. "create.mode poll only")
    end
  end
  if p.ttl then
    check_mapping(where, "ttl", p.ttl, M.TTL_KEYS)
    check_enum(where, "ttl.mode", p.ttl.mode, M.TTL_MODES)
    if p.ttl.min and p.ttl.max and p.ttl.min > p.ttl.max then
      core.error("InvalidArgument", 0, string.format("%s.ttl.min (%s) is above ttl.max (%s)", where,
        tostring(p.ttl.min), tostring(p.ttl.max)))
    end
  end
  if (p.protocol or "e2b") == "e2b" and ((p.ttl and p.ttl.mode == "expires_at")
    or p.pagination == "page" or (p.create and p.create.mode == "poll")) then
    -- every E2B route takes a lifetime, answers create with 201 and lists by cursor (reference §3.4)
    core.error("InvalidArgument", 0, where .. ": ttl.mode expires_at, pagination page and "
      .. "create.mode poll are OpenSandbox's wire: set protocol: opensandbox")
  end
end

-- Fills in p.capabilities (a list without repeats; a local provider's default is
-- LOCAL_CAPABILITIES) and p.capability_set; route_version must agree with v2_routes.
local function check_provider_capabilities(where, p)
  local caps = p.capabilities or (p.kind == "local" and M.LOCAL_CAPABILITIES or {})
  local list, set = {}, {}
  for i, c in ipairs(caps) do
    if type(c) ~= "string" or not M.CAPABILITY_SET[c] then
      core.error("InvalidArgument", 0, string.format("%s.capabilities[%d]: unknown capability "
        .. "%q (known: %s)", where, i, tostring(c), table.concat(M.CAPABILITIES, ", ")))
    end
    if not set[c] then list[#list + 1] = c; set[c] = true end
  end
  p.capabilities, p.capability_set = list, set
  -- route_version and the v2_routes capability say one thing (a test `requires` the capability)
  if p.route_version and (p.route_version == "v2") ~= (set.v2_routes == true) then
    core.error("InvalidArgument", 0, string.format("%s.route_version %s contradicts its "
      .. "capabilities (%s v2_routes)", where, p.route_version, set.v2_routes and "with" or "without"))
  end
end

-- A remote provider's wire settings left out get E2B's defaults (OpenSandbox's paging for
-- protocol opensandbox).
local function fill_remote_defaults(p)
  local proto = p.protocol or "e2b"
  p.protocol = proto
  p.route_version = p.route_version or (p.capability_set.v2_routes and "v2" or "v1")
  p.pagination = p.pagination or (proto == "opensandbox" and "page" or "cursor")
  p.auth_header = p.auth_header or "X-API-Key"
  p.credential_env = p.credential_env or M.DEFAULT_CREDENTIAL_ENV
  p.create = p.create or { mode = "sync" }
  p.create.mode = p.create.mode or "sync"
  p.ttl = p.ttl or {}
  p.ttl.mode = p.ttl.mode or "lifetime"
end

-- Checks providers.<name> and fills in its capabilities (a list) and capability set.
local function check_provider(path, name, p)
  local where = string.format("%s: providers.%s", path or "config", tostring(name))
  check_provider_shape(where, p)
  check_enum(where, "envd_routing", p.envd_routing, M.ROUTINGS)
  check_enum(where, "protocol", p.protocol, M.PROTOCOLS)
  check_enum(where, "route_version", p.route_version, M.ROUTE_VERSIONS)
  check_enum(where, "pagination", p.pagination, M.PAGINATIONS)
  check_provider_kind_keys(where, p)
  check_provider_names(where, p)
  check_provider_wire(where, p)
  check_provider_capabilities(where, p)
  if p.kind == "remote" then fill_remote_defaults(p) end
end

-- The `mcp` section (`abxlua mcp`, abx.run.cmd.mcp): key -> Lua type.
M.MCP_KEYS = { metadata_allow = "table", max_timeout = "number", list_all = "boolean" }

---Checks the optional `mcp` section: {metadata_allow: [keys], max_timeout: seconds, list_all}.
---Raises: InvalidArgument naming the key
function M.check_mcp(where, m)
  if m == nil then return end
  if type(m) ~= "table" then
    core.error("InvalidArgument", 0, where .. ": mcp must be a mapping (metadata_allow, "
      .. "max_timeout, list_all)")
  end
  for k, v in pairs(m) do
    local want = M.MCP_KEYS[k]
    if not want then
      core.error("InvalidArgument", 0, string.format("%s: unknown key mcp.%s (known: list_all, "
        .. "max_timeout, metadata_allow)", where, tostring(k)))
    end
    if type(v) ~= want or (k == "max_timeout" and (v < 1 or math.floor(v) ~= v)) then
      core.error("InvalidArgument", 0, string.format("%s: mcp.%s must be %s", where, k,
        k == "metadata_allow" and "a list of metadata keys" or k == "max_timeout"
        and "a whole number of seconds >= 1" or "true or false"))
    end
  end
  for i, key in ipairs(m.metadata_allow or {}) do
    if type(key) ~= "string" then
      core.error("InvalidArgument", 0, string.format("%s: mcp.metadata_allow[%d] must be a "
        .. "string", where, i))
    end
  end
end

-- The config file's top level (nil path: empty): a mapping of known keys, with known keys under
-- `defaults`, and a valid `mcp` section.
local function load_raw(path)
  local raw = {}
  if path then
    raw = core.yaml_load(path) or {}
    if type(raw) ~= "table" then
      core.error("InvalidArgument", 0, path .. ": the top level must be a mapping")
    end
  end
  local known = { defaults = true, provider = true, providers = true, markers = true,
    known_issues = true, profiles = true, mcp = true, secrets = true }
  for k in pairs(raw) do
    if not known[k] then
      core.error("InvalidArgument", 0, string.format("%s: unknown top-level key %q (known: defaults, "
        .. "provider, providers, markers, profiles, known_issues, mcp, secrets)", path, tostring(k)))
    end
  end
  M.check_mcp(path or "config", raw.mcp)
  for k in pairs(type(raw.defaults) == "table" and raw.defaults or {}) do
    if M.DEFAULTS.defaults[k] == nil then
      local names = {}
      for n in pairs(M.DEFAULTS.defaults) do names[#names + 1] = n end
      table.sort(names)
      core.error("InvalidArgument", 0, string.format("%s: unknown key defaults.%s%s (known: %s)",
        path, tostring(k), suggest.hint(k, names), table.concat(names, ", ")))
    end
  end
  return raw
end

-- cfg.defaults (the built-in ones under the file's), where each came from, and their checks.
local function load_defaults(path, cfg, raw)
  cfg.defaults = merge(M.DEFAULTS.defaults, raw.defaults)
  -- where each default came from (abx.run.limits names it in a deadline failure); `abxlua run
  -- --timeout` sets origin.test_timeout = "--timeout"
  cfg.origin = {}
  for k in pairs(cfg.defaults) do
    cfg.origin[k] = type(raw.defaults) == "table" and raw.defaults[k] ~= nil and "config" or "builtin"
  end
  for _, key in ipairs({ "jobs", "max_sandboxes", "test_timeout", "teardown_timeout", "sandbox_ttl",
    "request_timeout", "create_timeout", "build_jobs", "build_timeout" }) do
    check_number("defaults", key, cfg.defaults[key])
  end
  -- abx.run.keep: --keep-failed's config switch and the TTL a kept sandbox gets (bounded, so a
  -- forgotten sandbox still dies by itself)
  if type(cfg.defaults.keep_failed_sandboxes) ~= "boolean" then
    core.error("InvalidArgument", 0, string.format("%s: defaults.keep_failed_sandboxes must be "
      .. "true or false, got %s", path or "config", tostring(cfg.defaults.keep_failed_sandboxes)))
  end
  local kt = cfg.defaults.keep_failed_ttl
  if type(kt) ~= "number" or kt ~= math.floor(kt) or kt < 60 or kt > 86400 then
    core.error("InvalidArgument", 0, string.format("%s: defaults.keep_failed_ttl must be a whole "
      .. "number of seconds from 60 to 86400, got %s", path or "config", tostring(kt)))
  end
  -- which tests' HTTP exchanges the reports keep (abx.run.trace; `abxlua run --trace` wins)
  require("abx.run.trace").check_mode(cfg.defaults.trace, (path or "config") .. ": defaults.trace")
end

-- cfg.markers (e2e always) and cfg.profiles (name -> { m?, k? }).
local function load_selection(path, cfg, raw)
  if type(cfg.markers) ~= "table" then
    core.error("InvalidArgument", 0, (path or "config") .. ": markers must be a mapping name: description")
  end
  cfg.markers.e2e = cfg.markers.e2e or "every test"
  cfg.profiles = raw.profiles or {}
  if type(cfg.profiles) ~= "table" then
    core.error("InvalidArgument", 0, (path or "config") .. ": profiles must be a mapping name: {m, k}")
  end
  for name, prof in pairs(cfg.profiles) do
    if type(prof) ~= "table" then
      core.error("InvalidArgument", 0, string.format("%s: profiles.%s must be a mapping with "
        .. "optional keys m and k", path or "config", tostring(name)))
    end
    for k, v in pairs(prof) do
      if (k ~= "m" and k ~= "k") or type(v) ~= "string" then
        core.error("InvalidArgument", 0, string.format("%s: profiles.%s.%s: only m and k (strings) "
          .. "are allowed", path or "config", tostring(name), tostring(k)))
      end
    end
  end
end

-- cfg.providers: each a checked copy (check_provider fills defaults in: the tables of the file
-- and of DEFAULTS stay as they were).
local function load_providers(path, cfg)
  if type(cfg.providers) ~= "table" then
    core.error("InvalidArgument", 0, (path or "config") .. ": providers must be a mapping")
  end
  local providers = {}
  for name, p in pairs(cfg.providers) do
    local copy = {}
    for k, v in pairs(type(p) == "table" and p or {}) do copy[k] = v end
    providers[name] = type(p) == "table" and copy or p
    check_provider(path, name, providers[name])
  end
  cfg.providers = providers
end

---Loads and validates the configuration, then registers the secrets of the environment and the
---.env files under its rules (abx.run.secrets.register).
---@param path string|nil a YAML file, or nil for the defaults
---@return table config { defaults = {...}, origin = { [key of defaults] = "config" | "builtin" },
---  provider = name, providers = {...}, markers = {...}, path = }
---Raises: InvalidArgument naming the file and key (bad YAML, wrong types)
function M.load(path)
  local raw = load_raw(path)
  local ki_file, ki_langs = M.check_known_issues(path, raw.known_issues)
  local cfg = merge(M.DEFAULTS, raw)
  cfg.known_issues = ki_file or M.DEFAULTS.known_issues
  cfg.known_issue_languages = ki_langs or M.DEFAULTS.known_issue_languages
  load_defaults(path, cfg, raw)
  load_selection(path, cfg, raw)
  load_providers(path, cfg)
  secrets.check(path or "config", raw.secrets, cfg.providers)
  cfg.secrets = raw.secrets or {}
  cfg.path = path
  -- before anything prints a test's output: every command that reads the config masks them
  secrets.register(cfg)
  return cfg
end

-- The config the command of this process loaded (abx.run.suite.load, before it collects).
local current

---Makes `cfg` the config of this process's command (abx.run.suite.load does, before the scenario
---files are collected): what M.current gives the scenarios.
---@param cfg table a loaded config (M.load)
function M.use(cfg)
  current = cfg
end

---The config this run loaded (--config, ABX_CONFIG or the one found), for a scenario that needs
---the configured providers (08_providers): a scenario never reads a config file of its own, so
---`--config` reaches it.
---Raises: InvalidArgument outside `abxlua run` / `list` (no config loaded yet).
---@return table cfg as M.load returns it (path: the file, nil for the built-in defaults)
function M.current()
  if not current then
    core.error("InvalidArgument", 0, "abx.run.config.current: no config loaded yet (it is the "
      .. "one `abxlua run` or `abxlua list` loads before collecting the scenarios)")
  end
  return current
end

---Exports the run's config file, provider and flavour into this process's environment
---(ABX_CONFIG as an absolute path, ABX_PROVIDER, ABX_FLAVOR; core.setenv), so every child a
---test starts (`abxlua sandbox ...`, `abxlua run ...`) reads the same config and provider as
---the run. Without a config file ABX_CONFIG is removed (the child sees the built-in defaults too);
---without a flavour ABX_FLAVOR is removed.
---@param cfg table
---@param provider_name string
---@param flavor? string
function M.export(cfg, provider_name, flavor)
  core.setenv("ABX_CONFIG", cfg.path and (core.realpath(cfg.path) or cfg.path) or nil)
  core.setenv("ABX_PROVIDER", provider_name)
  core.setenv("ABX_FLAVOR", flavor)
end

---Resolves the provider to use: --provider, ABX_PROVIDER, then the config's `provider`; with a
---flavour (--flavor, or ABX_FLAVOR), the local provider's settings as that flavour
---(abx.run.flavor.apply: a new table with `flavor` set).
---@param cfg table
---@param name? string
---@param flavor? string
---@return string name, table settings
---Raises: InvalidArgument for an unknown provider or flavour, a flavour on a remote provider
function M.provider(cfg, name, flavor)
  -- the environment, then the .env files (abx.run.provider.lookup), as every variable abxlua reads
  local lookup = require("abx.run.provider").lookup
  name = name or lookup("ABX_PROVIDER") or cfg.provider
  flavor = flavor or lookup("ABX_FLAVOR")
  if flavor == "" then flavor = nil end
  local p = cfg.providers[name]
  if type(p) ~= "table" then
    local names = {}
    for k in pairs(cfg.providers) do names[#names + 1] = k end
    table.sort(names)
    core.error("InvalidArgument", 0, string.format("unknown provider %q (configured: %s)", name,
      table.concat(names, ", ")))
  end
  if flavor then return name, require("abx.run.flavor").apply(cfg, name, p, flavor) end
  return name, p
end

---Resolves a selection profile by name.
---@return table profile { m = string|nil, k = string|nil }
---Raises: InvalidArgument for an unknown profile, listing the configured names
function M.profile(cfg, name)
  local p = cfg.profiles and cfg.profiles[name]
  if type(p) ~= "table" then
    local names = {}
    for k in pairs(cfg.profiles or {}) do names[#names + 1] = k end
    table.sort(names)
    core.error("InvalidArgument", 0, string.format("unknown profile %q (configured: %s)", name,
      #names > 0 and table.concat(names, ", ") or "none; add `profiles:` to the config"))
  end
  return p
end

return M
