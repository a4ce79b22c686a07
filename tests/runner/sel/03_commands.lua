-- Selection fixture for tests/runner/selection.py: a second file (-k matches file names), and a
-- name holding "::" (a node id splits at the first "::" only).
-- A test fails when its name is one of the '|'-separated names in ABX_SEL_FAIL (unset: all pass).
local t = require("abx.test")

local function body(name)
  return function()
    for n in ((os.getenv("ABX_SEL_FAIL") or "") .. "|"):gmatch("([^|]*)|") do
      if n == name then t.fail("asked to fail by ABX_SEL_FAIL") end
    end
  end
end

for _, name in ipairs({ "runs a command", "kill twice returns false",
  "splits at the first :: only" }) do
  t.test(name, body(name))
end
