-- scenarios/lib/envd_health.lua: what 02_lifecycle and 05_network_and_code share: envd's health
-- asked with sbx:http (which retries nothing, so a test sees the platform's own first answers).
-- Protocol: docs/protocol/envd-protocol.md §7 (GET /health answers 204).
local M = {}

--- Asks GET /health on envd's port up to `tries` times back to back (no wait) and stops at the
--- first 2xx answer. An edge that drops 1 request in 7 with a bare 502 (the transient-502:7
--- mutant, docs/mutants.md) fails all of 4 tries once in 2401, while a sandbox whose envd is not
--- serving yet, or a port that needs a token, refuses every one (the tries take milliseconds).
--- Returns the last answer and "status body; ..." of every answer, for the assertion's message.
--- Raises: Transport, Timeout, Protocol (from sbx:http).
---@param sbx table Sandbox
---@param opts? table more sbx:http options (e.g. traffic_token = false)
---@param tries? integer default 4
---@return table last, string answers
function M.probe(sbx, opts, tries)
  local answers, last = {}, nil
  for _ = 1, tries or 4 do
    local o = { path = "/health" }
    for k, v in pairs(opts or {}) do o[k] = v end
    last = sbx:http(49983, o)
    answers[#answers + 1] = last.status .. " " .. tostring(last.body):sub(1, 80)
    if last.status >= 200 and last.status < 300 then break end
  end
  return last, table.concat(answers, "; ")
end

return M
