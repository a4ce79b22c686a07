-- Helper module for tests/runner/failure_where.lua and failure_where_v.lua: scenario-side checks
-- that fail inside the helper, so the failure must still point at the test's own line.
-- Required as require("tests.runner.helpers.check") from the source root; not a scenario file.
local t = require("abx.test")

local M = {}

---Fails unless a command result exited 0.
function M.exit_ok(r)
  t.eq(r.exit_code, 0, "exit code")
end

---A plain Lua error inside the helper.
function M.broken()
  local cfg = nil
  return cfg.port
end

---Loops in Lua until the test's deadline stops it.
function M.spin()
  local n = 0
  while true do n = n + 1 end
end

return M
