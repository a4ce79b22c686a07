-- A helper module (under scenarios/lib/): required by the scenarios, never collected itself.
local M = {}

function M.shout(s) return s:upper() .. "!" end

-- Shared between the files of one run (a module is loaded once): 02 records, 03 checks.
M.log = {}

return M
