-- Runner case: -j 4 runs four tests at once. Each of the first four holds a slot for 0.5 s; the
-- fifth starts only when a slot frees and sees that four ran together.
-- Expected: 5 passed; exit code 0; the run takes about 1 s, not 2.5 s.
-- args: -j 4
-- expect-line: ^PASSED +tests/runner/parallel\.lua::four tests ran at once
-- expect-no-line: ^(FAILED|ERROR)
-- expect-max-seconds: 8
local t = require("abx.test")
local core = require("abx.core")
local running, most = 0, 0

local function hold()
  running = running + 1
  if running > most then most = running end
  core.sleep(0.5)
  running = running - 1
end

for i = 1, 4 do
  t.test("holds a slot " .. i, function() hold() end)
end

t.test("four tests ran at once", function()
  t.eq(most, 4, "tests running at the same time")
  t.ok(running <= 3, "at least one slot was free when this test started")
end)
