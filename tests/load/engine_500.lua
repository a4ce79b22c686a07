-- Load case for the engine: 500 tests run with -j 64; every outcome must be accounted for.
-- Tests i % 10 == 0 fail on purpose, i % 25 == 1 skip, the rest pass after a short wait (so many
-- are in flight at once). Expected: 430 passed, 50 failed, 20 skipped.
local t = require("abx.test")
local core = require("abx.core")

for i = 1, 500 do
  t.test(string.format("test %03d", i), function()
    core.sleep(0.05 + (i % 7) * 0.01)
    if i % 25 == 1 then t.skip("skipped on purpose") end
    if i % 10 == 0 then t.fail("failed on purpose") end
    t.eq(i, i)
  end)
end
