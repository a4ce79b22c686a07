-- abx.run.cmd.sandbox: `abxlua sandbox <subcommand>`, sandboxes by hand: create, list, info, exec,
-- cp, logs, pause, resume, kill, call (the agent-sandbox-server's command catalogue) and serve (a
-- local platform that outlives one invocation). This file is only the argparse front: each
-- subcommand is a module listed in M.SUBCOMMANDS (name → module) with
--   M.DESCRIPTION        one line for `abxlua sandbox --help`
--   M.configure(cmd)     adds the subcommand's own arguments and options to its argparse command
--   M.execute(args, env) -> exit code | nil, usage error   runs inside core.run; `env` is
--                        abx.run.sandbox_cli.common's environment (env:open() the provider's
--                        connection, env:emit(doc) the --json document, env:say(text) the human
--                        output, env.run_id the tag of what it creates)
--   M.OWN_PROVIDER       (optional) true: execute opens nothing itself through env (serve)
-- Every subcommand also gets --provider, --config and --json from this front. Adding a group is
-- one line in M.SUBCOMMANDS.
-- Exit codes: 0 ok, 1 the operation failed (the error on stderr; with --json the error document),
-- 2 interrupted, 4 usage error (unknown option or value, missing credentials, no local platform
-- running); `exec` exits with the command's exit code.
local common = require("abx.run.sandbox_cli.common")

local M = {}

-- name → module. `abxlua sandbox --help` lists them sorted by name.
M.SUBCOMMANDS = {
  create = "abx.run.sandbox_cli.create",
  list = "abx.run.sandbox_cli.list",
  info = "abx.run.sandbox_cli.info",
  exec = "abx.run.sandbox_cli.exec",
  cp = "abx.run.sandbox_cli.cp",
  logs = "abx.run.sandbox_cli.logs",
  pause = "abx.run.sandbox_cli.lifecycle",
  resume = "abx.run.sandbox_cli.lifecycle",
  kill = "abx.run.sandbox_cli.lifecycle",
  call = "abx.run.sandbox_cli.call",
  serve = "abx.run.sandbox_cli.serve",
  snapshot = "abx.run.sandbox_cli.snapshot",
}

---The subcommand names, sorted.
---@return string[]
function M.names()
  local names = {}
  for n in pairs(M.SUBCOMMANDS) do names[#names + 1] = n end
  table.sort(names)
  return names
end

local function module_for(name)
  return require(M.SUBCOMMANDS[name])
end

---Adds `sandbox` and its subcommands to the parser.
---@param parser table argparse parser
function M.configure(parser)
  local cmd = parser:command("sandbox", "Sandboxes by hand: create, list, info, exec, cp, logs, "
    .. "pause, resume, kill, call; `sandbox serve` keeps a local platform up between calls.")
    :epilog("The provider is --provider (default: ABX_PROVIDER or the config's), local by "
      .. "default: a local platform started by `abxlua sandbox serve`, or the one ABX_LOCAL_URL "
      .. "and ABX_LOCAL_API_KEY name (docs/cli.md, the `sandbox` entry). --json prints "
      .. "one JSON document on stdout.")
  cmd:command_target("sandbox_command")
  for _, name in ipairs(M.names()) do
    local mod = module_for(name)
    local sub = cmd:command(name, mod.description and mod.description(name) or mod.DESCRIPTION)
    common.add_options(sub)
    mod.configure(sub, name)
  end
end

---Runs the subcommand named in args.sandbox_command.
---@param args table parsed arguments
---@return integer|nil exit code, string? usage error
function M.execute(args)
  local name = args.sandbox_command
  if not name then
    return nil, "sandbox needs a subcommand: one of " .. table.concat(M.names(), ", ")
  end
  return common.execute(module_for(name), name, args)
end

return M
