-- Selection fixture for tests/runner/selection.py: tests named by sentences, as scenarios are.
-- A test fails when its name is one of the '|'-separated names in ABX_SEL_FAIL (unset: all pass).
local t = require("abx.test")

local function body(name)
  return function()
    for n in ((os.getenv("ABX_SEL_FAIL") or "") .. "|"):gmatch("([^|]*)|") do
      if n == name then t.fail("asked to fail by ABX_SEL_FAIL") end
    end
  end
end

for _, name in ipairs({ "SIGKILL ends a process", "SIGTERM ends a process in a pty",
  "a file that does not exist" }) do
  t.test(name, body(name))
end
