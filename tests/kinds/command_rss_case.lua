-- A command's output streamed through on_stdout with keep_output = false, in a process of its own
-- (run by tests/kinds/test_command_rss.py, from the source root, with -j 1): 128 MiB through the
-- callback may not grow this process's RSS by 64 MiB. This is the RSS half of
-- scenarios/03_commands.lua's keep_output test, moved here because the suite runs tests side by
-- side in one process, whose RSS then measures the neighbours (issue 22: 65-70 MiB under -j 8).
-- Prints `rss_base_kb=N`, `rss_peak_kb=N` (VmRSS before, and the most seen every 8 MiB) and
-- `held_peak=N` (the handle's own accounting). Source: docs/protocol/envd-protocol.md §4.3.
local t = require("abx.test")

local function rss_kb()
  local f = assert(io.open("/proc/self/status"))
  local s = f:read("a")
  f:close()
  return tonumber(s:match("VmRSS:%s+(%d+)"))
end

t.test("keep_output = false: 128 MiB through on_stdout, the engine's RSS stays flat",
  { requires = { "envd" }, timeout = 300 }, function(ctx)
  local n, got = 128 * 1024 * 1024, 0
  local sbx = ctx.sandbox_factory({ timeout = 300 })
  collectgarbage()
  local base, peak = rss_kb(), 0
  local h = sbx.commands:run("head -c " .. n .. " /dev/zero", {
    background = true, keep_output = false, timeout = 240,
    on_stdout = function(chunk)
      got = got + #chunk
      if got % (8 * 1024 * 1024) < #chunk then peak = math.max(peak, rss_kb()) end
    end,
  })
  t.eq(h:wait().exit_code, 0)
  t.eq(got, n, "every byte reached the callback")
  print(string.format("rss_base_kb=%d\nrss_peak_kb=%d\nheld_peak=%d", base, peak, h:held_peak()))
end)
