-- abx.run.sandbox_cli.lifecycle: `abxlua sandbox pause|resume|kill ID`, one module for the three
-- (abx.run.cmd.sandbox maps each name here; `name` tells them apart).
--   pause:  POST /sandboxes/{id}/pause. JSON {sandbox_id, paused} (false: it was paused already).
--   resume: POST /sandboxes/{id}/connect (the SDKs' resume; v2 route with the v2_routes
--           capability), TTL --timeout from now. JSON {sandbox_id, resumed} (false: it was running;
--           its TTL is then only extended).
--   kill:   DELETE /sandboxes/{id}. JSON {sandbox_id, killed: true}; a sandbox that does not
--           exist fails with SandboxNotFound (exit 1): a mistyped id is not success.
local a = require("abx.run.sandbox_cli.args")
local core = require("abx.core")

local M = {}

local DESCRIPTIONS = {
  pause = "Pause a sandbox (its memory and filesystem are kept).",
  resume = "Resume a paused sandbox (connect).",
  kill = "Kill a sandbox.",
}

function M.description(name) return DESCRIPTIONS[name] end

function M.configure(cmd, name)
  cmd:argument("id", "Sandbox id."):convert(a.sandbox_id)
  if name == "resume" then
    cmd:option("--timeout", "TTL in seconds from now.", "300"):convert(a.seconds("--timeout"))
  end
end

function M.execute(args, env, name)
  local conn = env:open()
  if name == "pause" then
    local paused = conn:pause(args.id)
    env:emit({ sandbox_id = args.id, paused = paused },
      args.id .. (paused and " paused" or " was already paused"))
  elseif name == "resume" then
    local sbx = conn:connect(args.id, { timeout = args.timeout })
    env:emit({ sandbox_id = args.id, resumed = sbx.resumed == true },
      args.id .. (sbx.resumed and " resumed" or " was running (TTL extended)"))
  else
    if not conn:kill(args.id) then
      core.error("SandboxNotFound", 404, "sandbox " .. args.id .. " does not exist")
    end
    env:emit({ sandbox_id = args.id, killed = true }, args.id .. " killed")
  end
  return 0
end

return M
