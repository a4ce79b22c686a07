-- Runner case for tests/runner/keep_failed.sh (issue 23 item 5): under --keep-failed a failing
-- test's sandbox outlives the run, a passing test's does not. Run with -s: each test prints the
-- id of its sandbox as "sandbox-id: ID".
local t = require("abx.test")

t.test("passes and its sandbox goes", function(ctx)
  print("sandbox-id: " .. ctx.base_sandbox.id)
end)

t.test("fails and its sandbox is kept", function(ctx)
  local sbx = ctx.base_sandbox
  print("sandbox-id: " .. sbx.id)
  sbx.files:write("/tmp/kept-evidence", "left for a look")
  t.eq(1, 2, "fails on purpose")
end)
