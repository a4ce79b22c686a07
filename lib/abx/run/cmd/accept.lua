-- abx.run.cmd.accept: `abxlua accept <kind>`, the acceptance runners of the seed suite (manual
-- real-cloud runners there; here they run against any provider, the local platform by default).
-- Each kind is the module abx.accept.<kind> (dashes become underscores) with
--   configure(cmd)   adds the kind's options to its own argparse subcommand
--   execute(args)    -> exit code | nil, usage error
-- and the description given below. Exit codes as every command: 0 the runner passed and wrote
-- its report, 1 a check failed (the report says which), 2 interrupted, 4 usage error (an existing
-- output, an unknown template or provider, missing credentials).
local M = {}

-- { kind, one-line description }: the order is the order of `abxlua accept --help`.
M.KINDS = {
  { "skill-tools", "Fetch a pinned repository, check its app's HMAC preview links, drive two "
    .. "filesystem MCP server releases over stdio; --output NEW.json." },
  { "conditional", "The provider's conditional operations (pause/resume both ways between CLI and "
    .. "Lua, snapshot create/list/restore/delete, continuity, clone isolation, owned cleanup)." },
  { "desktop", "A desktop template's VNC through the ingress: RFB with a password, a screenshot "
    .. "checked and saved as PNG." },
}

local function module_for(kind)
  return require("abx.accept." .. kind:gsub("%-", "_"))
end

function M.configure(parser)
  local cmd = parser:command("accept", "Acceptance runners (provider conditional, skill tools, desktop) "
    .. "that write a JSON report.")
  cmd:command_target("accept_kind")
  for _, k in ipairs(M.KINDS) do
    module_for(k[1]).configure(cmd:command(k[1], k[2]))
  end
end

function M.execute(args)
  local kind = args.accept_kind
  if not kind then
    local names = {}
    for _, k in ipairs(M.KINDS) do names[#names + 1] = k[1] end
    return nil, "accept needs a kind: one of " .. table.concat(names, ", ")
  end
  return module_for(kind).execute(args)
end

return M
