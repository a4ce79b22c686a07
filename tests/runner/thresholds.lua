-- Runner case: tests' thresholds (k6's, abx.run.measure): one that holds passes; a crossed one,
-- and one over a measurement the test never made, fail with kind Threshold naming the value, the
-- threshold and its source; the run exits 99 (thresholds alone failed). Counts and rates only:
-- deterministic on a shared machine.
-- Expected: 2 passed, 2 failed, exit 99.
-- expect-line: ^FAILED .*a crossed threshold fails the test - Threshold: threshold count<3 crossed by measurement work: count = 5 \(from tests/runner/thresholds\.lua:20\)
-- expect-line: ^FAILED .*a threshold over a measurement never made - Threshold: threshold rate<0\.5: the test made no measurement named other
-- expect-no-line: ^ERROR
local t = require("abx.test")

t.test("thresholds that hold pass", { thresholds = { "count==4", "rate<=0.25", "p(50)>=0" } }, function()
  t.measure("work", function(i) if i == 4 then error("the fourth fails") end end, { iterations = 4 })
end)

t.test("a named threshold applies to its measurement only", { thresholds = { a = { "count==2" } } }, function()
  t.measure("a", function() end, { iterations = 2 })
  t.measure("b", function() end, { iterations = 7 })
end)

t.test("a crossed threshold fails the test", { thresholds = { "count<3" } }, function()
  t.measure("work", function() end, { iterations = 5 })
end)

t.test("a threshold over a measurement never made", { thresholds = { other = { "rate<0.5" } } }, function()
  t.measure("work", function() end, { iterations = 1 })
end)
