-- abx.run.cmd.cleanup: `abxlua cleanup`, the janitor for runs that were killed hard. It lists the
-- sandboxes that carry the `e2e` tag (metadata e2e=<run id>), their snapshots, and (with
-- --run-id) the volumes whose name carries the run id; deletes nothing unless --yes, and never
-- touches a sandbox without the tag. On a local provider it sweeps the local platform that
-- already runs (`abxlua sandbox serve`'s state file, or ABX_LOCAL_URL), else starts one.
-- Exit 0 when no matching sandbox remains, 1 when some remain (dry run, or a kill failed), 4 for
-- usage errors.
-- --kept: the sandboxes `abxlua run --keep-failed` kept for a look (metadata abx-kept=1, any run;
-- abx.run.keep); with --run-id, only that run's.
local core = require("abx.core")
local config = require("abx.run.config")
local provider = require("abx.run.provider")
local sandbox = require("abx.client.sandbox")

local M = {}

local KEPT_KEY = require("abx.run.keep").KEPT_KEY

function M.configure(parser)
  local cmd = parser:command("cleanup", "List (and with --yes kill) sandboxes tagged e2e=<run id> "
    .. "that earlier runs left behind.")
  cmd:option("--run-id", "Only sandboxes of this run (metadata e2e=<ID>).")
  cmd:flag("--all-tagged", "Every sandbox that carries an e2e tag, whatever the run.")
  cmd:flag("--kept", "The sandboxes `abxlua run --keep-failed` kept (metadata abx-kept=1), "
    .. "whatever the run (with --run-id: that run's).")
  cmd:option("--older-than", "Only sandboxes started more than this many minutes ago.")
    :convert(tonumber)
  cmd:flag("--yes", "Kill what was found (without it, nothing is deleted).")
  cmd:option("--provider", "Provider from config/abxlua.yaml (default: ABX_PROVIDER or config).")
  cmd:option("--config", "Config file (default: ABX_CONFIG or config/abxlua.yaml).")
end

---Filters listed sandboxes: tagged, of the run (when given), older than the limit (when given).
---@return table[] the matching infos
function M.select(items, opts, now)
  local out = {}
  for _, info in ipairs(items) do
    local tag = type(info.metadata) == "table" and info.metadata.e2e or nil
    local keep = type(tag) == "string" and tag ~= ""
    if keep and opts.kept then keep = info.metadata[KEPT_KEY] == "1" end
    if keep and opts.run_id then keep = tag == opts.run_id end
    if keep and opts.older_than then
      local started = info.started_at and sandbox.parse_time(info.started_at)
      keep = started ~= nil and (now - started) >= opts.older_than * 60
    end
    if keep then out[#out + 1] = info end
  end
  return out
end

-- Deletes (with --yes) or lists what runs leave besides sandboxes: the snapshots of the tagged
-- sandboxes found (GET /snapshots?sandboxID=; a snapshot outlives its sandbox) and, with
-- --run-id, the volumes whose name carries the run id (volumes have no metadata: the run id in
-- the name is their tag). Only where the provider has the capability. Returns how many remain.
function M.sweep_resources(conn, caps, found, run_id, yes)
  local remaining = 0
  local function handle(what, id, del)
    local line = "  " .. what .. " " .. id
    if yes then
      local ok, r = pcall(del, id)
      if ok then line = line .. (r and "  deleted" or "  already gone")
      else line = line .. "  delete failed: " .. tostring(r); remaining = remaining + 1 end
    else
      remaining = remaining + 1
    end
    core.write(line .. "\n")
  end
  if caps.snapshot then
    for _, s in ipairs(found) do
      local ok, snaps = pcall(conn.list_snapshots, conn, { sandbox_id = s.sandbox_id })
      for _, snap in ipairs(ok and snaps or {}) do
        handle("snapshot", snap.snapshot_id, function(id) return conn:delete_snapshot(id) end)
      end
    end
  end
  if caps.volume and run_id then
    local ok, vols = pcall(conn.list_volumes, conn)
    for _, v in ipairs(ok and vols or {}) do
      if v.name:find(run_id, 1, true) then
        handle("volume " .. v.name, v.volume_id, function(id) return conn:delete_volume(id) end)
      end
    end
  end
  return remaining
end

-- Kills the sandboxes `found` (with --yes; a dry run only lists them), one line each. Returns how
-- many are left (not killed).
local function kill_found(conn, found, args)
  local remaining = 0
  for _, s in ipairs(found) do
    local line = string.format("  %s  e2e=%s  state=%s  started=%s", s.sandbox_id,
      tostring(s.metadata.e2e), tostring(s.state), tostring(s.started_at))
    if args.kept and s.metadata["abx-test"] then line = line .. "  test=" .. s.metadata["abx-test"] end
    if args.yes then
      local kok, r = pcall(conn.kill, conn, s.sandbox_id)
      if kok then
        line = line .. (r and "  killed" or "  already gone")
      else
        line = line .. "  kill failed: " .. tostring(r)
        remaining = remaining + 1
      end
    else
      remaining = remaining + 1
    end
    core.write(line .. "\n")
  end
  return remaining
end

-- After the kills (--yes): lists with the same filter again; a sandbox of `found` still listed (a
-- kill answered but not done) is named on a line of its own. Returns how many.
local function still_alive(conn, filter, found)
  local ok, items = pcall(conn.list, conn, next(filter) and { metadata = filter } or {})
  if not ok then
    core.write("cleanup: the check after the kills could not list: " .. tostring(items) .. "\n")
    return #found
  end
  local wanted, alive = {}, {}
  for _, s in ipairs(found) do wanted[s.sandbox_id] = true end
  for _, s in ipairs(items) do
    if wanted[s.sandbox_id] then alive[#alive + 1] = s.sandbox_id end
  end
  if #alive > 0 then
    table.sort(alive)
    core.write(string.format("cleanup: %d sandbox(es) still alive after the kills: %s\n", #alive,
      table.concat(alive, ", ")))
  end
  return #alive
end

function M.execute(args)
  if not args.run_id and not args.all_tagged and not args.kept then
    return nil, "say which sandboxes: --run-id ID or --all-tagged (or --kept: what `run "
      .. "--keep-failed` kept)"
  end
  if args.run_id and not args.run_id:match("^[%w%-_]+$") then
    return nil, "--run-id may only contain letters, digits, '-' and '_'"
  end
  if args.older_than and args.older_than < 0 then
    return nil, "--older-than must be a number of minutes >= 0"
  end
  local cfg = config.load(config.find(args.config))
  local pname, psettings = config.provider(cfg, args.provider)
  local code = 3
  local ok, errs = core.run(function()
    local run = { run_id = "cleanup-" .. core.random_hex(4), defaults = cfg.defaults }
    -- a local platform that already runs (`abxlua sandbox serve`, ABX_LOCAL_URL) holds the
    -- sandboxes to sweep; only without one does cleanup start its own (abx.run.sandbox_cli.common)
    local conn, info
    local attached, endpoint = require("abx.run.sandbox_cli.common").attach_running(pname,
      psettings, run)
    if attached then conn, info = attached, { endpoint = endpoint }
    else conn, info = provider.open(pname, psettings, run) end
    if not conn then
      core.write("cleanup: missing credentials [" .. table.concat(info.missing, ", ") .. "]\n")
      code = 4
      return
    end
    local filter = {}
    if args.run_id then filter.e2e = args.run_id end
    if args.kept then filter[KEPT_KEY] = "1" end
    local lok, items = pcall(conn.list, conn, next(filter) and { metadata = filter } or {})
    if not lok then
      core.write("cleanup: listing sandboxes on " .. tostring(info.endpoint) .. " failed: "
        .. tostring(items) .. "\n")
      if info.stop then info.stop() end
      code = 1
      return
    end
    local found = M.select(items, { run_id = args.run_id, older_than = args.older_than,
      kept = args.kept }, core.time())
    local what = {}
    if args.run_id then what[#what + 1] = "e2e=" .. args.run_id end
    if args.kept then what[#what + 1] = KEPT_KEY .. "=1" end
    core.write(string.format("cleanup: %d tagged sandbox(es) found on %s (%s)\n", #found,
      tostring(info.endpoint), #what > 0 and table.concat(what, ", ") or "any e2e tag"))
    local remaining = kill_found(conn, found, args)
    -- a kill answered 204 is not taken for done: the list must no longer show it
    if args.yes and #found > 0 and remaining == 0 then remaining = still_alive(conn, filter, found) end
    -- snapshots first: the list by sandbox id needs the sandboxes found (they are killed above,
    -- their snapshots remain listable by id)
    remaining = remaining + M.sweep_resources(conn, psettings.capability_set or {}, found,
      args.run_id, args.yes)
    if not args.yes and #found > 0 then
      core.write("cleanup: dry run, nothing deleted (add --yes to kill them)\n")
    end
    if info.stop then info.stop() end
    local serve = attached and args.kept and require("abx.run.sandbox_cli.common").read_state(pname)
    if serve then -- abx.run.keep may have left it running for the kept sandboxes
      core.write(string.format("cleanup: the local platform (abxlua sandbox serve, pid %d) still "
        .. "runs: `kill %d` stops it\n", math.tointeger(serve.pid) or 0, math.tointeger(serve.pid) or 0))
    end
    code = remaining == 0 and 0 or 1
  end)
  if not ok then
    core.ewrite("abxlua: " .. errs .. " internal task error(s)\n")
    return 3
  end
  return code
end

return M
