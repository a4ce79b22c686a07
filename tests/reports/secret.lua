-- Reports case: a secret in test names, failure messages, skip reasons and output never reaches a
-- report or the console. Run with ABX_LOCAL_API_KEY=e2b_<hex> (the local platform's API key, which
-- the engine registers as a secret) by tests/reports/check_reports.py.
-- Expected: 1 passed, 2 failed, 1 skipped; every occurrence of the key shows as ***.
local t = require("abx.test")
local core = require("abx.core")

local key = core.getenv("ABX_LOCAL_API_KEY") or "e2b_missing"

t.test("prints the key " .. key, function()
  core.write("the key is " .. key .. "\n")
end)

t.test("fails naming the key", function()
  t.eq(key, "not the key")
end)

t.test("raises with the key and its base64 form", function()
  error("key=" .. key .. " b64=" .. core.b64encode(key))
end)

t.test("skips naming the key", function()
  t.skip("skipped because of " .. key)
end)
