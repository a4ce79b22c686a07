-- abx.run.cli: the command line (lua-argparse). Each subcommand is a module abx.run.cmd.<name> with
-- configure(parser) and execute(args) -> exit code | nil, usage error.
-- Exit codes: 0 all good, 1 failures or errors, 2 interrupted, 3 internal error, 4 usage error,
-- 5 nothing collected.
local core = require("abx.core")
local argparse = require("argparse")

local M = {}

-- The public module names: what scenarios (and the tests under tests/) require. abx.test is
-- lib/abx/test.lua itself; each other public name is the module of lib/abx/client/ or
-- lib/abx/run/ it names here, so both names give the same table. Everything else is internal
-- and is required by its full name (abx.client.*, abx.run.*).
M.PUBLIC = {
  ["abx.sandbox"] = "abx.client.sandbox", ["abx.http"] = "abx.client.http",
  ["abx.files"] = "abx.client.files", ["abx.code"] = "abx.client.code",
  ["abx.errmap"] = "abx.client.errmap", ["abx.route"] = "abx.client.route",
  ["abx.options"] = "abx.client.options", ["abx.collect"] = "abx.run.collect",
  ["abx.fixtures"] = "abx.run.fixtures", ["abx.tracker"] = "abx.run.tracker",
  ["abx.agent"] = "abx.run.agent", ["abx.template"] = "abx.client.template",
  ["abx.mcp"] = "abx.mcp.client",
}
for public, internal in pairs(M.PUBLIC) do
  package.preload[public] = function() return require(internal) end
end

local COMMANDS = { "run", "list", "new", "known-issues", "api", "types", "cleanup", "doctor", "template",
  "providers", "accept", "sandbox", "mcp", "merge-reports", "bench", "mutate" }

local function module_for(name)
  return require("abx.run.cmd." .. name:gsub("%-", "_"))
end

local function build_parser()
  local p = argparse("abxlua", "End-to-end test engine for E2B-compatible sandbox platforms.")
    :epilog("Also: `abxlua serve` (the embedded local E2B platform) and `abxlua envd` (the\n"
      .. "in-sandbox daemon); `abxlua help serve` shows their options.\n"
      .. "Run `abxlua <command> --help` for a command's options.\n"
      .. "Exit codes: 0 ok, 1 failures/errors, 2 interrupted, 3 internal error, 4 usage error, 5 nothing collected,\n"
      .. "99 only thresholds failed.")
  p:flag("--version", "Print the version and exit.")
  p:command_target("command")
  p:require_command(false)
  for _, name in ipairs(COMMANDS) do module_for(name).configure(p) end
  local help = p:command("help", "Show help for abxlua or one of its commands.")
  help:argument("topic", "A command, or a command and its subcommand (help sandbox exec)."):args("*")
  return p
end

-- The child command of parser `p` named `word`, or nil.
local function child(p, word)
  for _, c in ipairs(p._commands or {}) do
    if c._name == word then return c end
    for _, alias in ipairs(c._aliases or {}) do
      if alias == word then return c end
    end
  end
  return nil
end

-- The deepest (sub)command parser the words of argv name (`sandbox logs ID --level x` -> the
-- `sandbox logs` parser), so that a usage error shows that command's usage line. Words that
-- name no child (option values, positionals) are passed over; `--` ends the search.
local function named_parser(p, argv)
  local cur = p
  for _, w in ipairs(argv) do
    if w == "--" then break end
    cur = child(cur, w) or cur
  end
  return cur
end

local function usage_error(p, msg, argv)
  core.ewrite(named_parser(p, argv or {}):get_usage() .. "\n\nabxlua: error: " .. msg .. "\n")
  return 4
end

local function help(p, topic)
  if #topic == 0 then
    core.write(p:get_help() .. "\n")
    return 0
  end
  local cur = p
  for _, word in ipairs(topic) do
    cur = child(cur, word)
    if not cur then return usage_error(p, "unknown command " .. table.concat(topic, " ")) end
  end
  core.write(cur:get_help() .. "\n")
  return 0
end

---Entry point called by the C core with the arguments (argv[1..]).
---@param argv string[]
---@return integer exit code
function M.main(argv)
  local p = build_parser()
  local ok, args = p:pparse(argv)
  if not ok then return usage_error(p, args, argv) end
  if args.version then
    local v, commit = core.version()
    core.write("abxlua " .. v .. " (" .. commit .. ")\n")
    return 0
  end
  if not args.command then return help(p, {}) end
  if args.command == "help" then return help(p, args.topic) end
  local rok, code, err = pcall(module_for(args.command).execute, args)
  if not rok then
    if core.is_error(code) and code.kind == "InvalidArgument" then
      core.ewrite("abxlua: error: " .. code.message .. "\n")
      return 4
    end
    error(code, 0)
  end
  if code == nil then return usage_error(p, err, argv) end
  return code
end

return M
