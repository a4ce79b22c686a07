-- abx.run.sandbox_cli.list: `abxlua sandbox list`: the provider's sandboxes (every page), with
-- metadata and state filters. JSON: {sandboxes: [SandboxInfo subset]}.
local a = require("abx.run.sandbox_cli.args")
local common = require("abx.run.sandbox_cli.common")

local M = {}

M.DESCRIPTION = "List sandboxes (running and paused), optionally filtered."

M.STATES = { "running", "paused" }

function M.configure(cmd)
  cmd:option("--metadata", "Only sandboxes with this metadata KEY=VALUE (repeatable)."):count("*")
  cmd:option("--run-id", "Only sandboxes tagged e2e=ID.")
  cmd:option("--state", "Only this state (repeatable)."):count("*"):choices(M.STATES)
end

local FIELDS = { "sandbox_id", "template_id", "alias", "state", "metadata", "started_at",
  "end_at", "cpu_count", "memory_mb" }

function M.execute(args, env)
  local metadata, err = a.pairs(args.metadata, "--metadata")
  if not metadata then return nil, err end
  if args.run_id then
    if metadata.e2e and metadata.e2e ~= args.run_id then
      return nil, "--run-id and --metadata e2e= disagree"
    end
    metadata.e2e = args.run_id
  end
  local opts = {}
  if next(metadata) then opts.metadata = metadata end
  if args.state and #args.state > 0 then opts.state = args.state end
  local items = env:open():list(opts)
  local out = common.array()
  for _, s in ipairs(items) do
    local row = {}
    for _, f in ipairs(FIELDS) do
      local v = s[f]
      row[f] = type(v) == "table" and common.plain(v) or v
    end
    out[#out + 1] = row
  end
  table.sort(out, function(x, y) return tostring(x.sandbox_id) < tostring(y.sandbox_id) end)
  env:emit({ sandboxes = out }, function()
    local lines = { string.format("%-28s %-8s %-16s %-25s %s", "SANDBOX", "STATE", "TEMPLATE",
      "ENDS", "METADATA") }
    for _, s in ipairs(out) do
      local md = {}
      for k, v in pairs(s.metadata or {}) do md[#md + 1] = k .. "=" .. tostring(v) end
      table.sort(md)
      lines[#lines + 1] = string.format("%-28s %-8s %-16s %-25s %s", s.sandbox_id,
        tostring(s.state), tostring(s.alias or s.template_id), tostring(s.end_at),
        table.concat(md, ","))
    end
    return table.concat(lines, "\n")
  end)
  return 0
end

return M
