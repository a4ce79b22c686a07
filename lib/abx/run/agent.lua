-- abx.run.agent (public name abx.agent): checks shared by the agent templates' scripts
-- (scenarios/templates/<agent>/<agent>.lua), which verify what they can without an AI provider's
-- key and skip, with the exact reason, what needs one.
local t = require("abx.test")

local M = {}

---The AI provider key `name` for a test that needs it and outbound HTTPS to `host` from the
---template's sandbox, or the test is skipped naming what is missing: first the key (t.secret:
---the environment, then .env; so no sandbox is started for a run without keys), then the way
---out (one `curl` to https://<host>/ from the sandbox, 10 s; the local platform's sandboxes have
---no outbound network).
---@param ctx table the test's ctx (ctx.template_sandbox is used only once the key is there)
---@param name string environment variable of the key, e.g. "OPENAI_API_KEY"
---@param host string the provider's API host, e.g. "api.openai.com"
---@return string key (masked in every output by t.secret)
---Raises: the skip of t.skip
function M.ai_key(ctx, name, host)
  local key = t.secret(name)
  if not key then t.skip("needs " .. name .. " (an AI provider key); not given") end
  local sbx = ctx.template_sandbox
  local r = sbx.commands:run("curl -sS -m 10 -o /dev/null https://" .. host .. "/", { timeout = 30 })
  if r.exit_code ~= 0 then
    t.skip("needs outbound HTTPS from the sandbox to " .. host .. "; this sandbox has none (curl exit "
      .. r.exit_code .. ")")
  end
  return key
end

return M
