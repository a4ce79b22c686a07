-- abx.provider: turns a configured provider into a live sandbox connection. For `kind: local` it
-- starts the embedded platform (`abxlua serve`) as a child and stops it at the end of the run.
local core = require("abx.core")
local cjson = require("cjson")
local sandbox = require("abx.sandbox")

local M = {}

local function first_env(...)
  for _, name in ipairs({ ... }) do
    local v = core.getenv(name)
    if v and v ~= "" then return v, name end
  end
  return nil
end

---Opens the provider.
---@param name string provider name
---@param p table provider settings from the config
---@param run table { run_id =, defaults = }
---@return table|nil conn a sandbox.connection, or nil when credentials are missing
---@return table info { endpoint =, stop = function, missing = {names} }
---Raises: Transport when the local platform does not start
function M.open(name, p, run)
  local info = { name = name, kind = p.kind }
  local opts = { request_timeout = run.defaults.request_timeout,
    default_metadata = { e2e = run.run_id }, envd_routing = p.envd_routing or "host" }
  if p.kind == "local" then
    local tmp = core.getenv("TMPDIR") or "/tmp"
    info.log = tmp .. "/abxlua-serve-" .. run.run_id .. ".log"
    local child = core.platform_start({ "--domain", p.domain or "localhost" }, 20, info.log)
    local ok, ready = pcall(cjson.decode, child.ready)
    if not ok or type(ready) ~= "table" or type(ready.api_key) ~= "string" then
      core.platform_stop(child.pid, 5)
      core.error("Protocol", 0, "the local platform's ready line is not the expected JSON")
    end
    core.add_secret(ready.api_key)
    -- the ready line comes after the listen socket exists; one health check proves it answers
    local hok, health = pcall(core.request, { url = ready.url .. "/health", timeout = 10 })
    if not hok or health.status ~= 200 then
      core.platform_stop(child.pid, 5)
      core.error("Transport", 0, "the local platform started but GET /health failed: "
        .. (hok and ("status " .. health.status) or tostring(health)) .. " (log: " .. info.log .. ")")
    end
    opts.api_url, opts.api_key, opts.domain = ready.url, ready.api_key, ready.domain
    opts.envd_url = ready.url
    info.endpoint = ready.url
    info.stop = function(keep_log)
      core.platform_stop(child.pid, 15)
      if not keep_log then os.remove(info.log) end -- the log only matters when something failed
    end
    info.pid = child.pid
  else
    local key, key_src = first_env("ABX_SANDBOX_API_KEY", "E2B_API_KEY")
    local url = first_env("ABX_SANDBOX_BASE_URL", "E2B_API_URL") or p.api_url
    local domain = first_env("ABX_SANDBOX_DOMAIN", "E2B_DOMAIN") or p.domain
    info.endpoint = url
    if not key then
      info.missing = { "ABX_SANDBOX_API_KEY" }
      return nil, info
    end
    core.add_secret(key)
    info.credential_source = key_src
    opts.api_url, opts.api_key, opts.domain = url, key, domain
    opts.envd_url = first_env("E2B_SANDBOX_URL")
    info.endpoint = url
    info.stop = function() end
  end
  return sandbox.connection(opts), info
end

return M
