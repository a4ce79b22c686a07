-- Selection fixture for tests/runner/selection.py (--reruns with known issues; run with
-- --config tests/runner/ki/abxlua.yaml): a flaky test tied to a known issue is never rerun, so a
-- rerun can neither turn its strict xfail into a pass nor hide its XPASS(strict).
local t = require("abx.test")

local function attempt(name)
  local dir = os.getenv("ABX_SEL_STATE")
  if not dir then t.fail("ABX_SEL_STATE is not set") end
  local path = dir .. "/ki_" .. name
  local f = io.open(path, "r")
  local n = (f and tonumber(f:read("a")) or 0) + 1
  if f then f:close() end
  f = assert(io.open(path, "w"))
  f:write(tostring(n))
  f:close()
  return n
end

t.test("flaky known issue fails first", { markers = { "flaky" }, known_issue = "KI-900" },
  function()
    if attempt("xfail") < 2 then t.fail("the known issue") end
  end)
t.test("flaky known issue passes", { markers = { "flaky" }, known_issue = "KI-900" },
  function() attempt("xpass") end)
