-- Runner case: abx.run.console's view of the tests in flight (issue 22, item 3), on a console of
-- its own whose lines are collected, with the tests' start times set back instead of waited for:
-- the default period is 60 s; a test is named once per period passed ("abxlua: still running:
-- FILE::NAME (125 s; limit 300 s)"); the status line's "running:" part lists the tests in flight
-- longest first and is cut to the width; test_clock restarts a test's seconds (a template
-- folder's test after its template's deploy); test_finished drops it.
-- Expected: 4 passed, exit 0.
local t = require("abx.test")
local core = require("abx.core")
local console = require("abx.run.console")

-- A console off a terminal whose lines land in `lines`.
local function quiet_console()
  local out = console.new({ live = false })
  local lines = {}
  out.line = function(_, text) lines[#lines + 1] = text end
  return out, lines
end

local big = { file = "scenarios/03_commands.lua", name = "big stream", index = 1 }
local small = { file = "scenarios/01_platform.lua", name = "list", index = 2 }

t.test("the period is 60 s unless ABX_PROGRESS_EVERY is set", function()
  t.eq(console.PROGRESS_EVERY, 60)
  if not core.getenv("ABX_PROGRESS_EVERY") then t.eq(quiet_console().every, 60) end
end)

t.test("a test is named once per period passed", function()
  local out, lines = quiet_console()
  out.every = 60
  out:test_started(big, 300)
  out:progress_lines()
  t.eq(#lines, 0, "not before 60 s")
  out.running[big].started = core.now() - 125
  out:progress_lines()
  t.eq(lines, { "abxlua: still running: scenarios/03_commands.lua::big stream (125 s; limit 300 s)" })
  out:progress_lines()
  t.eq(#lines, 1, "once per period")
  out.running[big].started = core.now() - 185
  out:progress_lines()
  t.eq(lines[2], "abxlua: still running: scenarios/03_commands.lua::big stream (185 s; limit 300 s)")
  out:test_finished(big)
  out:progress_lines()
  t.eq(#lines, 2, "a finished test is not named")
  t.eq(out.in_flight, 0)
end)

t.test("the status line lists the tests in flight longest first, cut to the width", function()
  local out = quiet_console()
  out.ntests, out.jobs = 5, 2
  out:test_started(small, 300)
  out:test_started(big, 300)
  out.running[big].started = core.now() - 212
  out.running[small].started = core.now() - 3
  t.eq(out:running_text(), "running: 03_commands.lua::big stream 212s, 01_platform.lua::list 3s")
  local real_getenv = core.getenv
  local function status_at(columns) -- the status line on a terminal COLUMNS wide
    core.getenv = function(k) if k == "COLUMNS" then return columns end return real_getenv(k) end
    local ok, s = pcall(out.status_text, out)
    core.getenv = real_getenv
    if not ok then error(s, 0) end
    return s
  end
  local wide = status_at("300")
  t.ok(wide:find(" | running: 03_commands.lua::big stream 212s, 01_platform.lua::list 3s$"), wide)
  local narrow = status_at("60")
  t.eq(#narrow, 59, "cut to the width")
  t.eq(narrow, wide:sub(1, 59))
  out:test_finished(big)
  out:test_finished(small)
  t.eq(out:running_text(), nil)
end)

t.test("test_clock restarts a test's seconds", function()
  local out, lines = quiet_console()
  out.every = 60
  out:test_started(big, 300)
  out.running[big].started = core.now() - 90
  out:progress_lines()
  t.eq(#lines, 1)
  out:test_clock(big)
  t.eq(out:running_text(), "running: 03_commands.lua::big stream 0s")
  t.eq(out.running[big].shown, 0)
end)
