-- Runner case: the ready queue is first in, first out (issue 9, item 2).
-- Expected: three tasks that each yield four times interleave ABCABCABCABC (the newest does not
-- run first, none runs twice in a row); a stream's cooperative pause lets an older task run;
-- 2 passed, exit code 0.
-- expect-line: ^PASSED +tests/runner/scheduler\.lua::ready tasks run oldest first and interleave
-- expect-line: ^PASSED +tests/runner/scheduler\.lua::a cooperative pause lets an older task run
local t = require("abx.test")
local core = require("abx.core")

local function run_tasks(names, rounds)
  local order, done = {}, 0
  local me = core.current()
  for _, name in ipairs(names) do
    core.spawn(function()
      for _ = 1, rounds do
        order[#order + 1] = name
        coroutine.yield()
      end
      done = done + 1
      if done == #names then core.unpark(me) end
    end)
  end
  core.park()
  return table.concat(order)
end

t.test("ready tasks run oldest first and interleave", function()
  t.eq(run_tasks({ "A", "B", "C" }, 4), "ABCABCABCABC")
end)

t.test("a cooperative pause lets an older task run", function()
  local me = core.current()
  local log = {}
  -- the older task: pauses in a loop, recording each time it runs
  core.spawn(function()
    for i = 1, 3 do log[#log + 1] = "old" .. i; coroutine.yield() end
  end)
  -- the newer task pauses too; every pause of the newer one must let the older one run
  core.spawn(function()
    for i = 1, 3 do log[#log + 1] = "new" .. i; coroutine.yield() end
    core.unpark(me)
  end)
  core.park()
  t.eq(table.concat(log, " "), "old1 new1 old2 new2 old3 new3")
end)
