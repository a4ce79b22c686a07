-- abx.run.secrets: the secrets every command registers before it prints anything (issue 22 item
-- 2). abx.run.config.load calls M.register once the config is read, so `abxlua run` (before
-- collection, whatever -k, --lf, node ids, -s or -j select), `abxlua sandbox`, `abxlua mcp`,
-- `abxlua accept` and every other command that reads the config mask the same set, under every
-- provider and flavour, in every sink (console, captured output, JUnit, JSON, TAP, evidence, -vv
-- traces, and the local platform's log: engine/platform.h).
--
-- Registered (core.add_secret: the value and its derived forms, engine/secrets.h), from the
-- environment, then .env and scenarios/.env (abx.run.provider.DOTENV_FILES):
--   * the variables of M.NAMES (every provider's credentials abxlua knows), of every provider's
--     `credential_env` in the config, and of the config's `secrets.names`;
--   * every variable whose name holds one of M.PATTERNS or of `secrets.patterns`
--     (case-insensitive), unless `secrets.exempt` names it.
-- A value shorter than M.MIN_LEN bytes is not registered: it would mask ordinary text. (A value
-- registered explicitly, by t.secret or as the key a provider uses, keeps the engine's own floor,
-- ABX_SECRET_MIN_LEN.)
local core = require("abx.core")

local M = {}

-- Values shorter than this are not registered from the environment or .env.
M.MIN_LEN = 8

-- The credential variables of the providers abxlua knows, registered whatever their name: the
-- API key and admin token of E2B-compatible providers (abx.run.provider CREDENTIALS,
-- ACCESS_TOKEN_ENV), the local platform's own (platform/platform_main.h), and the Alibaba Cloud
-- AccessKey pair and STS token the alicloud-* providers' accounts use.
M.NAMES = { "ABX_SANDBOX_API_KEY", "E2B_API_KEY", "ABX_SANDBOX_ACCESS_TOKEN", "E2B_ACCESS_TOKEN",
  "ABX_LOCAL_API_KEY", "ABX_LOCAL_ACCESS_TOKEN", "ALIBABA_CLOUD_ACCESS_KEY_ID",
  "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_SECURITY_TOKEN" }

-- A variable whose name holds one of these (case-insensitive) is a secret.
M.PATTERNS = { "KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE", "AUTH" }

-- The keys of the config's `secrets:` section: each a list of strings.
M.KEYS = { "names", "patterns", "exempt" }

local VAR = "^[%a_][%w_]*$"

local function fail(where, msg)
  core.error("InvalidArgument", 0, where .. ": " .. msg)
end

---Checks the config's optional `secrets:` section: {names = [VAR], patterns = [text], exempt =
---[VAR]}. An exempted name may not be a credential (M.NAMES, a provider's credential_env) nor one
---of `names`: those are always masked.
---@param where string the config file, for messages
---@param s any the section (nil: none)
---@param providers table the config's providers (their credential_env)
---Raises: InvalidArgument naming the key and the fix
function M.check(where, s, providers)
  if s == nil then return end
  if type(s) ~= "table" or #s > 0 then
    fail(where, "secrets must be a mapping with the keys " .. table.concat(M.KEYS, ", "))
  end
  for k, v in pairs(s) do
    local known = false
    for _, n in ipairs(M.KEYS) do known = known or n == k end
    if not known then
      fail(where, string.format("unknown key secrets.%s (known: %s)", tostring(k),
        table.concat(M.KEYS, ", ")))
    end
    if type(v) ~= "table" or (next(v) ~= nil and #v == 0) then
      fail(where, string.format("secrets.%s must be a list of %s", k,
        k == "patterns" and "name fragments" or "variable names"))
    end
    for i, item in pairs(v) do
      local ok = type(item) == "string" and (k == "patterns" and item:match("^[%w_]+$")
        or item:match(VAR))
      if not ok then
        fail(where, string.format("secrets.%s[%s] must be %s, got %s", k, tostring(i),
          k == "patterns" and "letters, digits and _ (a fragment of a variable name)"
          or "a variable name ([A-Za-z_][A-Za-z0-9_]*)", tostring(item)))
      end
    end
  end
  local always = {}
  for _, n in ipairs(M.NAMES) do always[n] = "a credential abxlua knows" end
  for name, p in pairs(providers or {}) do
    for _, n in ipairs(type(p) == "table" and p.credential_env or {}) do
      always[n] = "providers." .. tostring(name) .. ".credential_env"
    end
  end
  for _, n in ipairs(s.names or {}) do always[n] = "secrets.names" end
  for _, n in ipairs(s.exempt or {}) do
    if always[n] then
      fail(where, string.format("secrets.exempt: %s cannot be exempted (%s: always masked); "
        .. "remove it from secrets.exempt", n, always[n]))
    end
  end
end

---The rules of a loaded config: names always registered, name patterns, exempted names.
---@param cfg table|nil a config (abx.run.config.load); nil: the built-in rules only
---@return table rules { names = {[NAME] = true}, patterns = {UPPER...}, exempt = {[NAME] = true} }
function M.rules(cfg)
  local r = { names = {}, patterns = {}, exempt = {} }
  for _, n in ipairs(M.NAMES) do r.names[n] = true end
  for _, p in pairs((cfg or {}).providers or {}) do
    for _, n in ipairs(type(p) == "table" and p.credential_env or {}) do r.names[n] = true end
  end
  local s = (cfg or {}).secrets or {}
  for _, n in ipairs(s.names or {}) do r.names[n] = true end
  for _, p in ipairs(M.PATTERNS) do r.patterns[#r.patterns + 1] = p end
  for _, p in ipairs(s.patterns or {}) do r.patterns[#r.patterns + 1] = p:upper() end
  for _, n in ipairs(s.exempt or {}) do r.exempt[n] = true end
  return r
end

---Whether variable `name` is a secret under `rules` (M.rules).
---@param rules table
---@param name string
---@return boolean
function M.is_secret(rules, name)
  if rules.names[name] then return true end
  if rules.exempt[name] then return false end
  local up = name:upper()
  for _, p in ipairs(rules.patterns) do
    if up:find(p, 1, true) then return true end
  end
  return false
end

---Registers every secret of the environment and the .env files under the rules of `cfg` (see
---the top of this file). Values shorter than M.MIN_LEN are left out. Idempotent.
---@param cfg table|nil a loaded config
---@return integer registered how many values were registered (with repeats across sources)
function M.register(cfg)
  local rules = M.rules(cfg)
  local n = 0
  local function scan(values)
    for name, v in pairs(values) do
      if type(v) == "string" and #v >= M.MIN_LEN and M.is_secret(rules, name) then
        core.add_secret(v)
        n = n + 1
      end
    end
  end
  scan(core.environ())
  for _, f in ipairs(require("abx.run.provider").dotenv()) do scan(f.values) end
  return n
end

return M
