-- abx.run.sandbox_cli.serve: `abxlua sandbox serve`: a local platform for `abxlua sandbox`
-- calls made from other shells. It starts `abxlua serve` as `abxlua run` does (the provider's
-- flavour, TLS, build cache: abx.run.provider.open), writes the state file
-- <core.state_dir()>/sandbox-serve-<provider>.json (format abxlua-sandbox-serve/1: {format,
-- provider, pid, serve_pid, started_at, log, ready = serve's ready line}; the API key is in it,
-- and the state dir is 0700), and waits. SIGINT or SIGTERM stops it: serve kills every sandbox
-- and removes its state, the state file goes, exit 0. A second serve for the same provider while
-- one runs is a usage error; a stale file (its process gone) is replaced.
-- JSON: one document once the platform is up: {provider, url, state_file, pid, serve_pid}.
local common = require("abx.run.sandbox_cli.common")
local core = require("abx.core")
local provider = require("abx.run.provider")

local M = {}

M.DESCRIPTION = "Keep a local platform running for other `abxlua sandbox` calls (Ctrl-C stops it)."

function M.configure(_) end

function M.execute(_, env)
  if env.p.kind ~= "local" then
    return nil, "sandbox serve runs a local platform; provider " .. env.pname .. " is "
      .. tostring(env.p.kind)
  end
  local path, perr = common.state_path(env.pname)
  if not path then return nil, "sandbox serve needs the state dir: " .. tostring(perr) end
  local doc = common.read_state(env.pname)
  if doc then
    return nil, string.format("a local platform for provider %s already runs (pid %s, %s; "
      .. "state file %s)", env.pname, tostring(math.tointeger(doc.pid) or doc.pid), doc.ready.url, path)
  end
  local run = { run_id = env.run_id, defaults = env.cfg.defaults }
  local conn, info = provider.open(env.pname, env.p, run)
  local stopped = false
  env:finally(function()
    os.remove(path)
    if not stopped then info.stop(false) end
  end)
  local pid = math.tointeger(tonumber((core.read_file("/proc/self/stat") or ""):match("^(%d+)")))
  local state = { format = common.FORMAT, provider = env.pname, pid = pid, serve_pid = info.pid,
    started_at = os.date("!%Y-%m-%dT%H:%M:%SZ"), log = info.log, ready = info.ready }
  local tmp = path .. ".tmp"
  -- 0600: the state file holds the platform's API key (the 0700 state dir is not enough when a
  -- user hands the file around)
  local written, werr = core.write_private(tmp, common.encode(state))
  if not written then return nil, "cannot write the state file: " .. tostring(werr) end
  assert(os.rename(tmp, path))
  env:emit({ provider = env.pname, url = info.base_url, state_file = path, pid = pid,
    serve_pid = info.pid }, string.format("local platform %s up on %s (state file %s); "
      .. "Ctrl-C stops it and kills its sandboxes", env.pname, info.base_url, path))
  local _ = conn
  env.interrupt_is_stop = true
  while common.alive(info.pid) do
    local ok, err = pcall(core.sleep, 0.5)
    if not ok then
      if core.is_error(err) and err.kind == "Interrupted" then break end
      error(err, 0)
    end
  end
  if not common.alive(info.pid) and core.interrupted() == 0 then
    stopped = true
    core.error("Transport", 0, "the local platform exited (log: " .. tostring(info.log) .. ")")
  end
  env:say("stopping: killing its sandboxes")
  info.stop(false)
  stopped = true
  return 0
end

return M
