-- Scenario of tests/runner/credentials.sh: run with provider e2b and no credentials anywhere,
-- every test is skipped with "E2E skipped: missing credentials [ABX_SANDBOX_API_KEY]" and the run
-- exits 0. No test body runs.
local t = require("abx.test")

t.test("creates a sandbox", function(ctx)
  local _ = ctx.base_sandbox
  error("must not run without credentials")
end)

t.test("needs pause", { requires = { "pause" } }, function()
  error("must not run without credentials")
end)

t.test("plain", function()
  error("must not run without credentials")
end)
