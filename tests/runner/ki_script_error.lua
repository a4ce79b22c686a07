-- Runner case: a known issue pins a product defect, not a broken script. Without `raises`, a plain
-- Lua error or an Assertion the script raised is a real failure (the message says what `raises`
-- to write when the assertion is the defect); `raises = "Assertion"` / `"LuaError"` name them;
-- a platform error (NotFound here) without `raises` is the expected failure.
-- Expected: 3 xfailed, 2 failed; exit 1.
-- args: --config tests/runner/ki/abxlua.yaml -j 1
-- expect-line: ^FAILED +tests/runner/ki_script_error\.lua::a typo in the script .* - LuaError$
-- expect-line: ^FAILED +tests/runner/ki_script_error\.lua::an assertion without raises .* - Assertion$
-- expect-line: known issue KI-900 does not cover an Assertion the script raised: give raises = "Assertion" \(in a YAML scenario raises: Assertion\) when the assertion is the defect
-- expect-line: known issue KI-900 does not cover a LuaError the script raised
-- expect-line: ^XFAILED +tests/runner/ki_script_error\.lua::an assertion named by raises .* - KI-900
-- expect-line: ^XFAILED +tests/runner/ki_script_error\.lua::a Lua error named by raises .* - KI-900
-- expect-line: ^XFAILED +tests/runner/ki_script_error\.lua::a platform error without raises .* - KI-900
local t = require("abx.test")
local core = require("abx.core")

t.test("a typo in the script", { known_issue = "KI-900" }, function()
  local r = nil
  return r.exit_code
end)
t.test("an assertion without raises", { known_issue = "KI-900" }, function() t.eq(1, 2) end)
t.test("an assertion named by raises", { known_issue = "KI-900", raises = "Assertion" }, function()
  t.eq(1, 2)
end)
t.test("a Lua error named by raises", { known_issue = "KI-900", raises = "LuaError" }, function()
  error("the client library mishandles this")
end)
t.test("a platform error without raises", { known_issue = "KI-900" }, function()
  core.error("NotFound", 404, "gone")
end)
