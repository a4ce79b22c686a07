-- abx.run.sandbox_cli.info: `abxlua sandbox info ID`: GET /sandboxes/{id}. JSON: {sandbox:
-- SandboxInfo}. A sandbox that does not exist fails with SandboxNotFound (exit 1).
local a = require("abx.run.sandbox_cli.args")
local common = require("abx.run.sandbox_cli.common")

local M = {}

M.DESCRIPTION = "Show one sandbox's details."

function M.configure(cmd)
  cmd:argument("id", "Sandbox id."):convert(a.sandbox_id)
end

function M.execute(args, env)
  local info = common.plain(env:open():get_info(args.id))
  env:emit({ sandbox = info }, function()
    local keys, lines = {}, {}
    for k in pairs(info) do keys[#keys + 1] = k end
    table.sort(keys)
    for _, k in ipairs(keys) do
      local v = info[k]
      lines[#lines + 1] = string.format("%-22s %s", k,
        type(v) == "table" and common.encode(v) or tostring(v))
    end
    return table.concat(lines, "\n")
  end)
  return 0
end

return M
