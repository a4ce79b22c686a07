-- abx.accept.conditional_engine: the isolated engine of `abxlua accept conditional`: a private
-- work directory (mode 0700 under TMPDIR, removed at the end), the provider opened for this run
-- alone (for `kind: local` its own `abxlua serve` child, with its own state dir and run id: the
-- platform of no other run), and the CLI's isolation inside the work directory: its own HOME,
-- XDG state dir and TMPDIR.
--
-- The CLI reads the user's config (the same provider entry as the Lua side). A CLI call never
-- starts a local platform (its sandboxes would die with it): for a local provider the child's
-- environment names the runner's serve (ABX_LOCAL_URL, ABX_LOCAL_API_KEY:
-- abx.run.sandbox_cli.common) and holds no other credential; for a remote one it resolves the
-- credentials from the environment and .env as the runner did. No credential is written to a
-- file or put on a command line.
local core = require("abx.core")
local provider = require("abx.run.provider")
local cli = require("abx.accept.conditional_cli")

local M = {}

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local function mkdir_private(path)
  if os.execute("mkdir -m 0700 -p " .. q(path) .. " 2>/dev/null") ~= true or not core.isdir(path) then
    core.error("Internal", 0, "cannot create the directory " .. path)
  end
end

---The refusals a provider gets before anything starts (exit 4): a local provider over TLS, a
---remote one without its credentials.
---@param name string
---@param p table provider settings (abx.run.config)
---@return string|nil message
function M.refusal(name, p)
  if p.kind == "local" and (p.tls or p.flavor) then
    return string.format("provider %s: the conditional runner drives a local provider without "
      .. "tls or flavor (use --provider local)", name)
  end
  if p.kind == "remote" then
    provider.preflight(name, p)
    local r = provider.resolve(name, p)
    if #r.missing > 0 then
      return string.format("provider %s: missing credentials [%s]: set them in the environment "
        .. "or in .env at the project root (`abxlua doctor --provider %s` shows what is found)",
        name, table.concat(r.missing, ", "), name)
    end
  end
  return nil
end

---Starts the engine.
---@param o {name: string, settings: table, config_path?: string, run_id: string, defaults: table,
---  exe: string}
---@return table engine {conn, info, work, cli, stop = function(keep_log)}
---Raises: what abx.run.provider.open raises (Transport: the local platform did not start,
---  InvalidArgument: not privileged), Internal for the work directory.
function M.start(o)
  local tmp = core.getenv("TMPDIR")
  if not tmp or tmp:sub(1, 1) ~= "/" then tmp = "/tmp" end
  local work = string.format("%s/abxlua-accept-conditional-%s", tmp, o.run_id)
  mkdir_private(work)
  for _, d in ipairs({ "home", "state", "tmp" }) do mkdir_private(work .. "/" .. d) end
  local e = { work = work }
  local ok, err = pcall(function()
    local conn, info = provider.open(o.name, o.settings, { run_id = o.run_id, defaults = o.defaults })
    e.conn, e.info = conn, info
    if not conn then
      core.error("InvalidArgument", 0, "provider " .. o.name .. ": missing credentials ["
        .. table.concat(info.missing or {}, ", ") .. "]")
    end
    local env = { HOME = work .. "/home", XDG_STATE_HOME = work .. "/state",
      TMPDIR = work .. "/tmp", ABX_CONFIG = o.config_path, ABX_PROVIDER = o.name,
      E2E_RUN_ID = o.run_id, NO_COLOR = "1" }
    local unset = cli.UNSET
    if o.settings.kind == "local" then
      -- the CLI reaches a running local platform through ABX_LOCAL_URL and ABX_LOCAL_API_KEY
      -- (abx.run.sandbox_cli.common): the runner's serve, under the user's own local entry; in
      -- the child's environment only (not its command line, not a file)
      env.ABX_LOCAL_URL, env.ABX_LOCAL_API_KEY = info.base_url, conn.api_key
      env.ABX_LOCAL_DOMAIN = conn.domain
    else
      -- a cloud's credentials: the CLI resolves them as the runner did (the environment, then
      -- .env in the working directory)
      unset = cli.UNSET_REMOTE
    end
    e.config_path = o.config_path
    e.cli = cli.new({ exe = o.exe, env = env, unset = unset })
  end)
  e.stop = function(keep_log)
    if e.info and e.info.stop then pcall(e.info.stop, keep_log) end
    e.info = e.info and { log = e.info.log, base_url = e.info.base_url } or nil
    os.execute("rm -rf -- " .. q(work))
  end
  if not ok then
    e.stop(true)
    error(err, 0)
  end
  return e
end

return M
