-- abx.run.keep: `abxlua run --keep-failed` (config defaults.keep_failed_sandboxes): the sandboxes
-- of a failed test are left alive for a look instead of being killed at its end.
--
-- Tagging. The E2B API has no call that changes a live sandbox's metadata (only POST /sandboxes
-- sets it; abx.client.sandbox), so under --keep-failed
-- every sandbox the run creates carries `abx-kept=1` and `abx-test=<node id>` from its create on
-- (abx.run.tracker's before_create hook returns them, abx.client.sandbox merges them). A passing
-- test's sandboxes are killed as always; a failed test's are kept: their TTL is set to
-- defaults.keep_failed_ttl seconds (60..86400, default 1800: they die by themselves then), they
-- leave the tracker (no slot held, not a leak, not swept at the end) and are listed at the end
-- with how to reach them. `abxlua cleanup --kept [--yes]` removes every sandbox tagged abx-kept=1.
--
-- The local provider. `abxlua run` stops its own `abxlua serve` at the end, and with it every
-- sandbox. With --keep-failed on a local provider the run uses a platform that outlives it: a
-- running `abxlua sandbox serve` (or ABX_LOCAL_URL) when there is one, else one it starts detached
-- (`setsid -f abxlua sandbox serve --provider P`, its state file in <state dir>); at the end that
-- platform is stopped when nothing was kept, else left running with its pid printed (`kill PID`
-- stops it and kills its sandboxes). `abxlua sandbox exec ID -- CMD` finds it by its state file.
local core = require("abx.core")
local common = require("abx.run.sandbox_cli.common")

local M = {}

M.KEPT_KEY, M.TEST_KEY = "abx-kept", "abx-test"
-- Bounds of defaults.keep_failed_ttl, seconds (abx.run.config checks them)
M.TTL_MIN, M.TTL_MAX = 60, 86400
-- Seconds a detached platform may take to write its state file
local START_TIMEOUT = 60

---The metadata a sandbox of a --keep-failed run carries from its create on.
---@param owner table|nil the tracker owner creating it (a test's has `name` = its node id)
---@return table<string,string>
function M.metadata(owner)
  local m = { [M.KEPT_KEY] = "1" }
  if owner and owner.test and type(owner.name) == "string" then
    -- metadata values are short strings on some platforms: the node id, bounded
    m[M.TEST_KEY] = owner.name:sub(1, 256)
  end
  return m
end

-- Starts `abxlua sandbox serve` detached from this process (its own session, reparented to init:
-- it outlives the run) and waits for its state file. Returns the state document.
-- Raises: Transport when it does not come up (its log named).
local function start_detached(pname, cfg_path)
  local exe = (core.lstat("/proc/self/exe") or {}).target
  if not exe then core.error("Internal", 0, "cannot find this abxlua's executable (/proc/self/exe)") end
  local dir = core.state_dir()
  local log = (dir or "/tmp") .. "/sandbox-serve-" .. pname .. ".log"
  local argv = { "/bin/sh", "-c", 'setsid -f "$@" </dev/null >/dev/null 2>>"$ABX_KEEP_LOG"', "sh",
    exe, "sandbox", "serve", "--provider", pname }
  if cfg_path then argv[#argv + 1] = "--config"; argv[#argv + 1] = cfg_path end
  local p = core.process_start({ argv = argv, env = { ABX_KEEP_LOG = log }, stderr = "null" })
  local deadline = core.now() + START_TIMEOUT
  while core.now() < deadline do
    local doc = common.read_state(pname)
    if doc then return doc end
    core.sleep(0.2)
  end
  local _ = p
  core.error("Transport", 0, string.format("--keep-failed: the local platform started with "
    .. "`abxlua sandbox serve --provider %s` did not come up in %d s (log: %s)", pname,
    START_TIMEOUT, log))
end

---Opens a local provider for a --keep-failed run: a platform that outlives the run (see the
---file header). Returns conn and an info table like abx.run.provider.open's ({endpoint,
---base_url, ready, stop = function(kept_count)}, plus `serve_pid` and `started` when this run
---started it).
---Raises: InvalidArgument (ABX_LOCAL_URL misconfigured, or a flavoured provider: `sandbox serve`
---has the default flavour only), Transport (no platform came up).
---@param pname string
---@param p table provider settings (kind local)
---@param run table { run_id =, defaults = }
---@param cfg_path string|nil the config file the run read (handed to `sandbox serve`)
---@return table conn, table info
function M.open_local(pname, p, run, cfg_path)
  if p.flavor then
    -- `abxlua sandbox serve` (the platform that outlives the run) has the default flavour: a
    -- client of another flavour's wire would be refused by it (an OpenSandbox client: 401)
    core.error("InvalidArgument", 0, string.format("--keep-failed cannot keep the sandboxes of a "
      .. "--flavor %s run: the platform that outlives the run (`abxlua sandbox serve`) runs the "
      .. "default flavour; run without --keep-failed, or without --flavor", p.flavor))
  end
  local info = { name = pname, kind = "local", capabilities = p.capabilities or {} }
  local conn, url = common.attach_running(pname, p, run)
  local doc = common.read_state(pname)
  if not conn then
    doc = start_detached(pname, cfg_path)
    info.started = true
    conn, url = common.attach_running(pname, p, run)
  end
  info.endpoint, info.base_url = url, url
  info.ready = doc and doc.ready
  info.ca_cert = doc and doc.ready.ca_cert
  info.serve_pid = doc and math.tointeger(doc.pid)
  info.stop = function(kept)
    if not info.started or (math.type(kept) and kept > 0) or not info.serve_pid then return end
    -- nothing kept: the platform this run started goes (SIGTERM: it kills its sandboxes)
    pcall(core.process_start, { argv = { "kill", "-TERM", tostring(info.serve_pid) },
      stderr = "null" })
    local deadline = core.now() + 30
    while common.alive(info.serve_pid) and core.now() < deadline do core.sleep(0.2) end
  end
  return conn, info
end

---The shell words for `--provider`/`--config` in a printed command: empty for the defaults.
local function cli_args(run)
  local s = ""
  if run.keep.provider_arg then s = s .. " --provider " .. run.keep.provider_arg end
  if run.keep.config_arg then s = s .. " --config " .. run.keep.config_arg end
  return s
end

---Keeps the live sandboxes of a failed test: TTL set to the keep TTL (at most the provider's
---ttl.max), out of the tracker.
---Returns the errors ({phase, message}) of sandboxes that could not be kept (those are killed).
---@param run table the run (run.keep = {ttl, kept = {}}, run.tracker)
---@param sandboxes table[] the test's live sandboxes
---@param node string the test's node id
---@return table errors
function M.keep(run, sandboxes, node)
  local errors = {}
  for _, sbx in ipairs(sandboxes) do
    -- within the provider's own bound (config providers.<name>.ttl.max), else set_timeout refuses
    local bounds = type(sbx.conn) == "table" and rawget(sbx.conn, "ttl")
    local max = type(bounds) == "table" and bounds.max
    local ttl = (max and max < run.keep.ttl) and math.tointeger(max) or run.keep.ttl
    local ok, err = pcall(sbx.set_timeout, sbx, ttl)
    if ok then
      run.tracker:keep(sbx.id)
      run.keep.kept[#run.keep.kept + 1] = { id = sbx.id, test = node,
        capped = ttl ~= run.keep.ttl and ttl or nil }
    else
      errors[#errors + 1] = { phase = "keep " .. sbx.id, message = tostring(err) }
      local kok, kerr = pcall(run.tracker.kill, run.tracker, sbx)
      if not kok then errors[#errors + 1] = { phase = "kill " .. sbx.id, message = tostring(kerr) } end
    end
  end
  return errors
end

---The console lines after the cleanup: each kept sandbox with its test and how to reach it, how
---to remove them, and the local platform left running.
---@param run table
---@param pinfo table the provider info (serve_pid when a local platform was left running)
---@return string[] lines
function M.summary(run, pinfo)
  local kept = run.keep and run.keep.kept or {}
  if #kept == 0 then return {} end
  local args = cli_args(run)
  local lines = { string.format("kept %d sandbox(es) of failed tests for %d s (metadata %s=1):",
    #kept, run.keep.ttl, M.KEPT_KEY) }
  for _, k in ipairs(kept) do
    lines[#lines + 1] = string.format("  %s  %s%s", k.id, k.test, k.capped
      and string.format("  (TTL %d s: the provider's ttl.max)", k.capped) or "")
    lines[#lines + 1] = string.format("    reach it: abxlua sandbox exec%s %s -- 'ls -la ~'", args, k.id)
  end
  lines[#lines + 1] = "  remove them: abxlua cleanup --kept --yes" .. args
  if pinfo and pinfo.serve_pid then
    lines[#lines + 1] = string.format("  the local platform keeps running for them (abxlua sandbox "
      .. "serve, pid %d): `kill %d` stops it and kills its sandboxes", pinfo.serve_pid, pinfo.serve_pid)
  end
  return lines
end

return M
