-- abx.run.sandbox_cli.call: `abxlua sandbox call ID NAME --json-args '{...}'`: runs a named
-- command of the agent-sandbox-server's catalogue in the sandbox (POST /catalogue/<name>
-- {"args": ...}; scenarios/templates/python-hello/server/server.py, docs/templates.md "agent-sandbox-server"),
-- with `abxlua sandbox call ID --list` listing the catalogue (GET /catalogue). --json-args must be
-- one JSON object; its text is sent as it is (never decoded and re-encoded here), so an array of
-- strings reaches the server exactly as written and the server passes each element to the
-- command as its own argv entry, without a shell. Exits with the command's exit code, like exec.
-- JSON: the server's answer, {sandbox_id, name, argv, exit_code, stdout, stderr}, or with --list
-- {sandbox_id, commands: [descriptor]}. The server's bearer token is read from --token-file in the
-- sandbox (through envd, as root), never given on the command line. The server's refusals
-- (unknown name or argument, a value of the wrong type: 400 naming the valid ones) fail with
-- InvalidArgument (exit 1).
local a = require("abx.run.sandbox_cli.args")
local cjson = require("cjson")
local common = require("abx.run.sandbox_cli.common")
local core = require("abx.core")

local M = {}

M.DESCRIPTION = "Run a named command of the sandbox's agent-sandbox-server catalogue."

function M.configure(cmd)
  cmd:argument("id", "Sandbox id."):convert(a.sandbox_id)
  cmd:argument("name", "Catalogue command name (omit with --list)."):args("?")
  cmd:option("--json-args", "The arguments, one JSON object (default {}).")
  cmd:flag("--list", "List the catalogue instead (GET /catalogue).")
  cmd:option("--port", "The server's port.", "8080"):convert(a.integer("--port", 1, 65535))
  cmd:option("--token-file", "Where in the sandbox the server wrote its token (read through envd "
    .. "as root; default /var/lib/agent-server/token).")
  cmd:option("--ttl", "The sandbox lives at least this many seconds from now.", "300")
    :convert(a.seconds("--ttl"))
end

function M.execute(args, env)
  if args.list and (args.name or args.json_args) then
    return nil, "--list takes no NAME and no --json-args"
  end
  if not args.list and not args.name then return nil, "call needs a NAME (or --list)" end
  local raw = args.json_args or "{}"
  if not args.list then
    local ok, v = pcall(cjson.decode, raw)
    if not ok or type(v) ~= "table" or raw:match("^%s*%[") then
      return nil, "--json-args must be one JSON object, e.g. '{\"files\": [\"a b\", \"c\"]}'"
    end
  end
  local sbx = env:open():connect(args.id, { timeout = args.ttl })
  local srv = sbx:server({ port = args.port, token_file = args.token_file })
  if args.list then
    local cmds = srv:catalogue()
    env:emit({ sandbox_id = args.id, commands = common.plain(cmds) }, function()
      local lines = {}
      for _, c in ipairs(cmds) do
        local as = {}
        for _, x in ipairs(c.args) do
          as[#as + 1] = x.name .. ":" .. x.type .. (x.required and "" or "?")
        end
        lines[#lines + 1] = string.format("%-20s %s  (%s)", c.name, table.concat(as, " "),
          c.description or "")
      end
      return table.concat(lines, "\n")
    end)
    return 0
  end
  local r = srv:call(args.name, raw)
  local doc = common.plain(r)
  doc.sandbox_id = args.id
  if not env.json then
    core.write(r.stdout, true)
    core.ewrite(r.stderr, true)
  end
  env:emit(doc)
  return r.exit_code >= 0 and r.exit_code <= 255 and r.exit_code or 1
end

return M
