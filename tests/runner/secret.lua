-- secret: t.secret(name) gives a value from the environment (ctest sets ABX_RUNNER_SECRET),
-- nil for a name set nowhere, and registers the value as a secret, so printing it shows ***
-- (-s: the print goes straight to the console; captured output is masked too: capture.py).
-- args: -s -j 1
-- expect-line: ^the secret is \*\*\*$
-- expect-no-line: s3cr3t-from-env
local t = require("abx.test")

t.test("t.secret returns the environment's value and masks it", function()
  local v = t.secret("ABX_RUNNER_SECRET")
  t.ok(v ~= nil, "ABX_RUNNER_SECRET is set by the ctest")
  t.eq(#v, 15)
  print("the secret is " .. v)
end)

t.test("t.secret is nil for a name set nowhere", function()
  t.eq(t.secret("ABX_RUNNER_SECRET_NEVER_SET"), nil)
end)

t.test("t.secret refuses a name that is not a non-empty string", function()
  t.ok(not pcall(t.secret, ""), "an empty name")
  t.ok(not pcall(t.secret, 42), "a number")
end)
