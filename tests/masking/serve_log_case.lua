-- Local-provider masking case (run by test_serve_log.py): fails with the project's .env in its
-- message when E2E_FAIL is set, passes otherwise. The .env secret must be masked under `local`
-- too, and the platform's log must never hold its API key.
local t = require("abx.test")

t.test("a .env secret in a failure is masked under the local provider", function()
  local f = assert(io.open(".env"))
  local text = f:read("a")
  f:close()
  if os.getenv("E2E_FAIL") then t.fail("planted: " .. text) end
end)
