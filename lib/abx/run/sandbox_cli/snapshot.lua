-- abx.run.sandbox_cli.snapshot: `abxlua sandbox snapshot create ID | list [ID] | restore SNAPSHOT
-- | delete SNAPSHOT`, a sandbox's snapshots by hand (abx.client.snapshot;
-- docs/protocol/e2b-control-plane.md §3.1, §3.3 SnapshotInfo, §6.1). A snapshot is a template: restoring it is
-- creating a sandbox from it.
--   create ID [--name N]:  POST /sandboxes/{id}/snapshots. JSON {sandbox_id, snapshot_id, names}.
--   list [ID] [--name N]:  GET /snapshots (every page; ID: only that sandbox's). JSON {snapshots:
--                          [{snapshot_id, names}]}, sorted by snapshot_id.
--   restore SNAPSHOT:      POST /sandboxes with templateID = the snapshot, tagged e2e=<run id>
--                          (E2E_RUN_ID, --run-id, or a new cli-<hex>) as `sandbox create` tags.
--                          JSON {sandbox_id, snapshot_id, template_id, run_id, metadata, timeout,
--                          envd_version, domain, end_at}. An interrupt before it is reported
--                          kills the new sandbox.
--   delete SNAPSHOT:       DELETE /templates/{id}. JSON {snapshot_id, deleted: true}; a snapshot
--                          that does not exist fails with NotFound (exit 1): a mistyped id is not
--                          success. A snapshot still used by a sandbox is refused by the platform
--                          (InvalidArgument 400, exit 1).
local a = require("abx.run.sandbox_cli.args")
local common = require("abx.run.sandbox_cli.common")
local core = require("abx.core")
local snapshot = require("abx.client.snapshot")

local M = {}

M.DESCRIPTION = "Snapshots of a sandbox: create ID, list [ID], restore SNAPSHOT, delete SNAPSHOT."

-- The subcommands of the group, in the order of its help.
M.COMMANDS = {
  { "create", "Snapshot a running sandbox; prints the snapshot id." },
  { "list", "List snapshots (every page), of one sandbox when ID is given." },
  { "restore", "Create a sandbox from a snapshot (tagged e2e=<run id>); prints its id." },
  { "delete", "Delete a snapshot (no sandbox may still use it)." },
}

-- A snapshot reference: its id, or a name with a tag (`name:tag`), as the platforms make them.
local function snapshot_ref(s)
  if type(s) ~= "string" or not s:match("^[%w][%w%-_.:/]*$") or #s > 256 then
    return nil, "not a snapshot id (letters, digits, '-', '_', '.', ':', '/'): " .. tostring(s)
  end
  return s
end

-- A snapshot name as create takes it.
local function snapshot_name(s)
  if type(s) ~= "string" or not s:match("^[%w][%w%-_.]*$") or #s > 128 then
    return nil, "--name must be letters, digits, '-', '_' and '.', got " .. tostring(s)
  end
  return s
end

function M.configure(cmd)
  cmd:command_target("snapshot_command")
  cmd:require_command(false) -- execute names the subcommands (argparse only says "a command")
  for _, c in ipairs(M.COMMANDS) do
    local sub = cmd:command(c[1], c[2])
    common.add_options(sub)
    if c[1] == "create" then
      sub:argument("id", "Sandbox id."):convert(a.sandbox_id)
      sub:option("--name", "Snapshot name (default: the platform names it)."):convert(snapshot_name)
    elseif c[1] == "list" then
      sub:argument("id", "Only this sandbox's snapshots."):args("?"):convert(a.sandbox_id)
      sub:option("--name", "Only snapshots with this name."):convert(snapshot_name)
    elseif c[1] == "restore" then
      sub:argument("snapshot", "Snapshot id."):convert(snapshot_ref)
      sub:option("--timeout", "TTL in seconds.", "300"):convert(a.seconds("--timeout"))
      sub:option("--metadata", "Metadata KEY=VALUE (repeatable); e2e is the run tag."):count("*")
      sub:option("--run-id", "The e2e tag value (default: E2E_RUN_ID, else a new cli-<hex>).")
    else
      sub:argument("snapshot", "Snapshot id."):convert(snapshot_ref)
    end
  end
end

local function names_of(s)
  local out = common.array()
  for i, n in ipairs(s.names or {}) do out[i] = n end
  return out
end

local RUN = {}

function RUN.create(args, env)
  -- the sandbox by id alone (what POST /sandboxes/{id}/snapshots needs): no connect, which would
  -- resume a paused one; a missing sandbox fails with SandboxNotFound (404)
  local snap = snapshot.create({ id = args.id, conn = env:open() }, { name = args.name })
  env:emit({ sandbox_id = args.id, snapshot_id = snap.snapshot_id, names = names_of(snap) },
    snap.snapshot_id)
  return 0
end

function RUN.list(args, env)
  local filter = {}
  if args.id then filter.sandbox_id = args.id end
  if args.name then filter.name = args.name end
  local items = env:open():list_snapshots(filter)
  local out = common.array()
  for _, s in ipairs(items) do out[#out + 1] = { snapshot_id = s.snapshot_id, names = names_of(s) } end
  table.sort(out, function(x, y) return x.snapshot_id < y.snapshot_id end)
  env:emit({ snapshots = out }, function()
    local lines = { string.format("%-40s %s", "SNAPSHOT", "NAMES") }
    for _, s in ipairs(out) do
      lines[#lines + 1] = string.format("%-40s %s", s.snapshot_id, table.concat(s.names, ","))
    end
    return table.concat(lines, "\n")
  end)
  return 0
end

function RUN.restore(args, env)
  local metadata, err = a.pairs(args.metadata, "--metadata",
    { e2e = "is the run tag: use --run-id" })
  if not metadata then return nil, err end
  if args.run_id then
    if not args.run_id:match("^[%w%-_]+$") then
      return nil, "--run-id may only contain letters, digits, '-' and '_'"
    end
    env.run_id = args.run_id
  end
  local conn = env:open() -- tags with env.run_id (default_metadata e2e)
  local sbx = conn:create({ template = args.snapshot, timeout = args.timeout, metadata = metadata })
  -- owned until reported: an interrupt or an error before the answer is out kills it
  env:finally(function() if not env.emitted then conn:kill(sbx.id) end end)
  local info = sbx:get_info()
  env:emit({ sandbox_id = sbx.id, snapshot_id = args.snapshot, template_id = info.template_id,
    run_id = env.run_id, metadata = common.plain(info.metadata), timeout = args.timeout,
    envd_version = info.envd_version, domain = info.domain, end_at = info.end_at },
    string.format("%s\n", sbx.id))
  env:say(string.format("restored %s from %s (e2e=%s, ends %s)", sbx.id, args.snapshot,
    env.run_id, tostring(info.end_at)))
  return 0
end

function RUN.delete(args, env)
  if not env:open():delete_snapshot(args.snapshot) then
    core.error("NotFound", 404, "snapshot " .. args.snapshot .. " does not exist")
  end
  env:emit({ snapshot_id = args.snapshot, deleted = true }, args.snapshot .. " deleted")
  return 0
end

function M.execute(args, env)
  local sub = args.snapshot_command
  if not sub then
    local names = {}
    for _, c in ipairs(M.COMMANDS) do names[#names + 1] = c[1] end
    return nil, "sandbox snapshot needs a subcommand: one of " .. table.concat(names, ", ")
  end
  env.name = "snapshot " .. sub
  return RUN[sub](args, env)
end

return M
