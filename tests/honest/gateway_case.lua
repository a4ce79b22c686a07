-- A gateway's bare 502 in front of envd (issue 27 part 4; e2b-dev/E2B#1262), run by
-- tests/honest/test_gateway.py against `abxlua serve --faults` whose rules answer chosen envd
-- requests with a bare HTML 502 (selected with -k).
local t = require("abx.test")

t.test("gateway some: calls that start no work pass through a gateway's 502s", function(ctx)
  local sbx = ctx.sandbox_factory()
  for i = 1, 4 do sbx.files:write("/tmp/gw-" .. i .. ".txt", "bytes " .. i) end
  for i = 1, 4 do t.eq(sbx.files:read("/tmp/gw-" .. i .. ".txt"), "bytes " .. i) end
  for _ = 1, 3 do t.eq(sbx.files:get_info("/tmp/gw-1.txt").size, 7) end
  for _ = 1, 3 do t.ok(#sbx.files:list("/tmp") >= 4) end
  for _ = 1, 3 do t.eq(type(sbx.commands:list()), "table") end
  for _ = 1, 3 do t.eq(sbx:is_running(), true) end
end)

t.test("gateway always read: a file read fails Unavailable after its retries", function(ctx)
  local sbx = ctx.sandbox_factory()
  sbx.files:read("/etc/hostname")
end)

t.test("gateway always start: a command fails Unavailable after its retries", function(ctx)
  local sbx = ctx.sandbox_factory()
  sbx.commands:run("true")
end)

t.test("gateway every other start: each command runs exactly once through a gateway's 502s", function(ctx)
  local sbx = ctx.sandbox_factory()
  for i = 1, 6 do
    t.eq(sbx.commands:run("echo run-" .. i .. " >> /tmp/gw-starts; echo ok").stdout, "ok\n")
  end
  -- a Start retried after the gateway's page was not started twice: one line per command
  t.eq(sbx.files:read("/tmp/gw-starts"), "run-1\nrun-2\nrun-3\nrun-4\nrun-5\nrun-6\n")
end)

t.test("gateway state calls: moves, removes, kills, watchers and file uploads pass through 502s",
  function(ctx)
  local sbx = ctx.sandbox_factory()
  for i = 1, 4 do
    sbx.files:write("/tmp/mv-" .. i, "m" .. i)
    t.eq(sbx.files:rename("/tmp/mv-" .. i, "/tmp/moved-" .. i).path, "/tmp/moved-" .. i)
    t.eq(sbx.files:read("/tmp/moved-" .. i), "m" .. i)
    t.eq(sbx.files:exists("/tmp/mv-" .. i), false, "the source of move " .. i .. " is gone")
  end
  -- a missing source stays NotFound: a check never turns a refusal into a move
  for i = 1, 2 do
    t.raises("NotFound", function() sbx.files:rename("/tmp/none-" .. i, "/tmp/none-moved") end)
  end
  for i = 1, 4 do
    sbx.files:remove("/tmp/moved-" .. i)
    t.eq(sbx.files:exists("/tmp/moved-" .. i), false, "remove " .. i)
  end
  for i = 1, 4 do
    local h = sbx.commands:run("exec sleep 300", { background = true })
    t.eq(h:kill(), true, "kill " .. i .. " of a running process")
    local r = h:wait()
    t.eq(r.exit_code, -1, "kill " .. i .. " ended it")
  end
  for i = 1, 2 do
    local w = sbx.files:create_watcher("/tmp")
    sbx.files:write("/tmp/watched-" .. i, "w")
    t.eventually(function()
      local seen = false
      for _, ev in ipairs(w:get_events()) do
        if ev.name == "watched-" .. i then seen = true end
      end
      t.ok(seen, "watcher " .. i .. " saw its file")
    end, { timeout = 10, interval = 0.2 })
  end
  local src = os.tmpname()
  for i = 1, 4 do
    local f = assert(io.open(src, "w"))
    f:write(string.rep("file " .. i .. "\n", 1000))
    f:close()
    f = assert(io.open(src, "rb"))
    sbx.files:write("/tmp/from-file-" .. i, f)
    f:close()
    t.eq(sbx.files:read("/tmp/from-file-" .. i), string.rep("file " .. i .. "\n", 1000))
  end
  os.remove(src)
end)
