-- abx.run.config: loads config/abxlua.yaml over built-in defaults and resolves the provider.
local core = require("abx.core")

local M = {}

-- What a provider can do beyond the core lifecycle, files and commands. A test names the ones it
-- needs in `requires`; a provider lists the ones it has in `capabilities:`.
-- v2_routes: create and connect through POST /v2/sandboxes and /v2/sandboxes/{id}/connect (E2B
-- SDK ≥ 2.51; e2b-v2-and-peers.md §1.1); without it the client speaks the v1 routes.
M.CAPABILITIES = { "pause", "snapshot", "volume", "file_metadata", "network_update",
  "code_interpreter", "metrics", "templates_build", "pty", "watch", "v2_routes" }
M.CAPABILITY_SET = {}
for _, c in ipairs(M.CAPABILITIES) do M.CAPABILITY_SET[c] = true end

-- The embedded local platform's capabilities when the config does not list them.
M.LOCAL_CAPABILITIES = { "pause", "snapshot", "volume", "file_metadata", "network_update",
  "metrics", "templates_build", "pty", "watch", "v2_routes" }

local PROVIDER_KEYS = { kind = "string", api_url = "string", domain = "string",
  envd_routing = "string", envd_url = "string", capabilities = "table", description = "string",
  tls = "boolean" }

-- The domain of a `kind: local, tls: true` provider that names none: a wildcard certificate needs
-- two labels under it (Node's tls.checkServerIdentity refuses *.localhost; platform/tls.h).
M.LOCAL_TLS_DOMAIN = "e2b.localhost"

---True when `domain` has two or more non-empty labels of letters, digits and '-' (what
---`abxlua serve --tls` accepts, platform/tls.h abx_tls_domain_ok).
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
    sandbox_ttl = 300, template = "base", request_timeout = 60, build_jobs = 2,
    build_timeout = 1800 },
  provider = "local",
  providers = { ["local"] = { kind = "local", domain = "localhost", envd_routing = "headers" },
    -- the same platform over HTTPS in E2B's default addressing (`abxlua serve --tls`)
    ["local-tls"] = { kind = "local", tls = true, domain = "e2b.localhost",
      envd_routing = "host" } },
  markers = { e2e = "every test", known_issue = "a strict expected failure" },
  known_issues = "config/known_issues.yaml",
}

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

---Finds the config file: explicit path, ABX_CONFIG, or config/abxlua.yaml under the current
---directory. Returns nil when there is none (the defaults apply).
---@param explicit string|nil
---@return string|nil
function M.find(explicit)
  local p = explicit or core.getenv("ABX_CONFIG")
  if p then
    if not core.exists(p) then
      core.error("InvalidArgument", 0, "config file " .. p .. " does not exist (fix --config or ABX_CONFIG)")
    end
    return p
  end
  if core.exists("config/abxlua.yaml") then return "config/abxlua.yaml" end
  return nil
end

-- Checks providers.<name> and fills in its capabilities (a list) and capability set.
local function check_provider(path, name, p)
  local where = string.format("%s: providers.%s", path or "config", tostring(name))
  if type(p) ~= "table" then core.error("InvalidArgument", 0, where .. " must be a mapping") end
  for k, v in pairs(p) do
    local want = PROVIDER_KEYS[k]
    if not want then
      core.error("InvalidArgument", 0, string.format("%s: unknown key %q (known: kind, api_url, "
        .. "domain, envd_routing, envd_url, capabilities, description, tls)", where, tostring(k)))
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
  if p.envd_routing and p.envd_routing ~= "host" and p.envd_routing ~= "headers" then
    core.error("InvalidArgument", 0, where .. ".envd_routing must be host or headers, got "
      .. p.envd_routing)
  end
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
end

---Loads and validates the configuration.
---@param path string|nil a YAML file, or nil for the defaults
---@return table config { defaults = {...}, provider = name, providers = {...}, markers = {...}, path = }
---Raises: InvalidArgument naming the file and key (bad YAML, wrong types)
function M.load(path)
  local raw = {}
  if path then
    raw = core.yaml_load(path) or {}
    if type(raw) ~= "table" then
      core.error("InvalidArgument", 0, path .. ": the top level must be a mapping")
    end
  end
  local known = { defaults = true, provider = true, providers = true, markers = true,
    known_issues = true, profiles = true }
  for k in pairs(raw) do
    if not known[k] then
      core.error("InvalidArgument", 0, string.format("%s: unknown top-level key %q (known: defaults, "
        .. "provider, providers, markers, profiles, known_issues)", path, tostring(k)))
    end
  end
  for k in pairs(type(raw.defaults) == "table" and raw.defaults or {}) do
    if M.DEFAULTS.defaults[k] == nil then
      local names = {}
      for n in pairs(M.DEFAULTS.defaults) do names[#names + 1] = n end
      table.sort(names)
      core.error("InvalidArgument", 0, string.format("%s: unknown key defaults.%s (known: %s)", path,
        tostring(k), table.concat(names, ", ")))
    end
  end
  local cfg = merge(M.DEFAULTS, raw)
  cfg.defaults = merge(M.DEFAULTS.defaults, raw.defaults)
  for _, key in ipairs({ "jobs", "max_sandboxes", "test_timeout", "teardown_timeout", "sandbox_ttl",
    "request_timeout", "build_jobs", "build_timeout" }) do
    check_number("defaults", key, cfg.defaults[key])
  end
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
  cfg.path = path
  return cfg
end

---Resolves the provider to use: --provider, ABX_PROVIDER, then the config's `provider`.
---@return string name, table settings
---Raises: InvalidArgument for an unknown provider
function M.provider(cfg, name)
  name = name or core.getenv("ABX_PROVIDER") or cfg.provider
  local p = cfg.providers[name]
  if type(p) ~= "table" then
    local names = {}
    for k in pairs(cfg.providers) do names[#names + 1] = k end
    table.sort(names)
    core.error("InvalidArgument", 0, string.format("unknown provider %q (configured: %s)", name,
      table.concat(names, ", ")))
  end
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
