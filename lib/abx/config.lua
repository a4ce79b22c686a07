-- abx.config: loads config/abxlua.yaml over built-in defaults and resolves the provider.
local core = require("abx.core")

local M = {}

M.DEFAULTS = {
  defaults = { jobs = 4, max_sandboxes = 5, test_timeout = 300, teardown_timeout = 60,
    sandbox_ttl = 300, template = "base", request_timeout = 60 },
  provider = "local",
  providers = { ["local"] = { kind = "local", domain = "localhost", envd_routing = "headers" } },
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
    "request_timeout" }) do
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
