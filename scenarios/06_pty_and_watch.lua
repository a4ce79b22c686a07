-- 06_pty_and_watch: interactive terminals (sbx.pty), directory watching (files:watch_dir and the
-- polling watcher), and stream keepalives.
-- Fixtures: ctx.base_sandbox, ctx.workdir (a fresh directory per test). Markers: none.
-- Protocol: docs/protocol/envd-protocol.md §4.2-§4.4 (Start with pty, data.pty, SendInput pty, Update
--           resize, SendSignal; "SDK call patterns" for pty.create), §5.1-§5.2 (WatchDir,
--           CreateWatcher, GetWatcherEvents, RemoveWatcher, FilesystemEvent), §9 (keepalive events
--           every Keepalive-Ping-Interval seconds of silence, Connect-Timeout-Ms deadlines).
-- PTY output is a terminal's byte stream: the shell's prompts, the echo of what was typed, and the
-- programs' output with CR LF line ends (bash's bracketed-paste toggles may end in a bare CR), so
-- checks look for a whole output line: after CR or LF, before CR LF.
local t = require("abx.test")

--- Whether the terminal output has `line` as a whole line.
local function has_line(out, line)
  return (out:find("\r" .. line .. "\r\n", 1, true) or out:find("\n" .. line .. "\r\n", 1, true))
    ~= nil
end

--- Waits until the terminal's output has `line` as a whole line.
local function await_line(h, line)
  t.eventually(function()
    t.ok(has_line(h:output(), line), "terminal output has the line " .. string.format("%q", line)
      .. " in " .. string.format("%q", h:output()))
  end, { timeout = 30, interval = 0.1 })
end

--- Waits until the interactive shell printed its first prompt (readline is reading the terminal).
local function await_prompt(h)
  t.eventually(function()
    t.ok(h:output():find("[$#] $") or h:output():find("[$#] \27%[%?2004h?$"),
      "a prompt ends the output: " .. string.format("%q", h:output()))
  end, { timeout = 30, interval = 0.1 })
end

--- Whether the events contain one with this name and type.
local function has(events, name, typ)
  for _, ev in ipairs(events) do
    if ev.name == name and ev.type == typ then return true end
  end
  return false
end

local function show(events)
  local out = {}
  for _, ev in ipairs(events) do out[#out + 1] = ev.name .. ":" .. ev.type end
  return table.concat(out, " ")
end

--- Waits until the watch handle has received every {name, type} pair.
local function await_events(h, want)
  return t.eventually(function()
    local evs = h:events()
    for _, w in ipairs(want) do
      t.ok(has(evs, w[1], w[2]), "event " .. w[1] .. ":" .. w[2] .. " in [" .. show(evs) .. "]")
    end
    return evs
  end, { timeout = 30, interval = 0.1 })
end

-- ---- PTY -------------------------------------------------------------------------------------

t.test("a PTY's tty is a /dev/pts device and stty size reports the requested size", function(ctx)
  local h = ctx.base_sandbox.pty:create({ cols = 100, rows = 30 })
  t.ok(h.pid > 0, "the handle carries the pid")
  h:send_input("tty; stty size; exit\n")
  local r = h:wait()
  t.eq(r.exit_code, 0)
  t.match(h:output(), "[\r\n]/dev/pts/%d+\r\n")
  t.ok(has_line(h:output(), "30 100"), "stty size prints rows and cols: " .. h:output())
end)

t.test("resizing a PTY changes the size stty reports", function(ctx)
  local h = ctx.base_sandbox.pty:create({ cols = 80, rows = 24 })
  h:send_input("stty size\n")
  await_line(h, "24 80")
  h:resize(132, 43)
  h:send_input("stty size\n")
  await_line(h, "43 132")
  h:send_input("exit\n")
  t.eq(h:wait().exit_code, 0)
end)

t.test("input sent to a PTY is echoed and runs in its shell", function(ctx)
  local seen = {}
  local h = ctx.base_sandbox.pty:create({ on_data = function(b) seen[#seen + 1] = b end })
  h:send_input("echo abx-$((6*7))\n")
  await_line(h, "abx-42")
  t.ok(h:output():find("echo abx-$((6*7))", 1, true), "the typed line is echoed")
  h:send_input("exit\n")
  local r = h:wait()
  t.eq(r.exit_code, 0)
  t.eq(table.concat(seen), h:output())
  t.eq(r.stdout, h:output())
end)

t.test("a PTY runs as the requested user in the requested cwd with TERM and envs set", function(ctx)
  local h = ctx.base_sandbox.pty:create({ user = "root", cwd = "/tmp", envs = { ABX_PTY = "yes" } })
  h:send_input("echo \"[$(id -un)|$(pwd)|$TERM|$LANG|$ABX_PTY]\"; exit\n")
  t.eq(h:wait().exit_code, 0)
  t.ok(has_line(h:output(), "[root|/tmp|xterm-256color|C.UTF-8|yes]"),
    "the shell reports user, cwd and environment: " .. h:output())
end)

t.test("killing a PTY ends it with exit code -1 and its process is gone", function(ctx)
  local h = ctx.base_sandbox.pty:create({})
  t.eq(h:kill(), true)
  local r = h:wait()
  t.eq(r.exit_code, -1)
  t.match(r.error, "killed")
  t.eventually(function()
    for _, p in ipairs(ctx.base_sandbox.commands:list()) do
      t.ok(p.pid ~= h.pid, "pid " .. h.pid .. " still listed")
    end
  end, { timeout = 30 })
end)

t.test("^D sent to a PTY's shell ends it with exit code 0", function(ctx)
  local h = ctx.base_sandbox.pty:create({ timeout = 20 })
  await_prompt(h) -- a ^D typed before readline starts is lost when it leaves canonical mode
  h:send_input("\4")
  t.eq(h:wait().exit_code, 0)
end)

t.test("a PTY's timeout kills it and its wait raises Timeout", function(ctx)
  local h = ctx.base_sandbox.pty:create({ timeout = 1 })
  t.raises("Timeout", function() h:wait() end)
  t.eventually(function()
    for _, p in ipairs(ctx.base_sandbox.commands:list()) do
      t.ok(p.pid ~= h.pid, "pid " .. h.pid .. " still listed")
    end
  end, { timeout = 30 })
end)

t.test("PTY input and resize to a process without a PTY raise Sandbox",
  { requires = { "pty" } }, function(ctx)
  local sbx = ctx.base_sandbox
  local c = sbx.commands:run("exec sleep 30", { background = true })
  t.raises("Sandbox", function() sbx.pty:send_input(c.pid, "x") end)
  t.raises("Sandbox", function() sbx.pty:resize(c.pid, 10, 10) end)
  t.eq(c:kill(), true)
  c:wait()
end)

-- ---- watch -----------------------------------------------------------------------------------

t.test("watch_dir reports create, write, rename and remove while the watch is open", function(ctx)
  local sbx, dir = ctx.base_sandbox, ctx.workdir
  local seen = {}
  local w = sbx.files:watch_dir(dir, { on_event = function(ev) seen[#seen + 1] = ev end })
  ctx.finally(function() w:stop() end)
  sbx.files:write(dir .. "/a.txt", "x")
  sbx.files:rename(dir .. "/a.txt", dir .. "/b.txt")
  sbx.files:remove(dir .. "/b.txt")
  local evs = await_events(w, { { "a.txt", "create" }, { "a.txt", "write" }, { "a.txt", "rename" },
    { "b.txt", "create" }, { "b.txt", "remove" } })
  t.eq(#seen >= #evs, true)
  t.eq(seen[1].name, "a.txt")
  t.eq(seen[1].type, "create")
  for _, ev in ipairs(evs) do t.eq(ev.entry, nil) end
  w:stop()
  t.eventually(function() t.eq(w:done(), true) end, { timeout = 30, interval = 0.1 })
  t.eq(w:error(), nil)
end)

t.test("a recursive watch sees a subdirectory's file and a plain watch does not", function(ctx)
  local sbx, dir = ctx.base_sandbox, ctx.workdir
  sbx.files:make_dir(dir .. "/sub")
  local deep = sbx.files:watch_dir(dir, { recursive = true })
  local flat = sbx.files:watch_dir(dir)
  ctx.finally(function() deep:stop(); flat:stop() end)
  sbx.commands:run("echo x > '" .. dir .. "/sub/f.txt' && echo y > '" .. dir .. "/top.txt'")
  await_events(deep, { { "sub/f.txt", "create" }, { "sub/f.txt", "write" }, { "top.txt", "create" } })
  local evs = await_events(flat, { { "top.txt", "write" } })
  for _, ev in ipairs(evs) do
    t.ok(not ev.name:find("^sub/"), "a plain watch reports nothing inside sub: " .. show(evs))
  end
end)

t.test("a watch with include_entry carries the entry of a written file", function(ctx)
  local sbx, dir = ctx.base_sandbox, ctx.workdir
  local w = sbx.files:watch_dir(dir, { include_entry = true })
  ctx.finally(function() w:stop() end)
  sbx.files:write(dir .. "/e.txt", "12345")
  local evs = await_events(w, { { "e.txt", "create" } })
  local entry
  for _, ev in ipairs(evs) do
    if ev.name == "e.txt" and ev.type == "create" then entry = ev.entry end
  end
  t.ok(entry, "the create event has an entry")
  t.eq(entry.path, dir .. "/e.txt")
  t.eq(entry.name, "e.txt")
  t.eq(entry.type, "file")
  t.eq(entry.owner, "user")
end)

-- The event is awaited before the end, and the watch lasts 10 s: with 2 s, a write slowed by a busy
-- machine landed after the end and its event never came (issue 22).
t.test("a watch ends with Timeout at its timeout and keeps its events", function(ctx)
  local sbx, dir = ctx.base_sandbox, ctx.workdir
  local exited
  local w = sbx.files:watch_dir(dir, { timeout = 10, on_exit = function(err) exited = err end })
  sbx.files:write(dir .. "/before-end.txt", "x")
  t.eventually(function()
    t.ok(has(w:events(), "before-end.txt", "create") or w:done(), "the create event arrived")
  end, { timeout = 30, interval = 0.1 })
  w:wait()
  t.eq(w:done(), true)
  t.eq(w:error() and w:error().kind, "Timeout")
  t.eq(exited, w:error())
  t.ok(has(w:events(), "before-end.txt", "create"), "events received before the end are kept")
end)

t.test("watching a missing directory gives NotFound and a file gives InvalidArgument",
  { requires = { "watch" } }, function(ctx)
  local sbx, dir = ctx.base_sandbox, ctx.workdir
  t.raises("NotFound", function() sbx.files:watch_dir(dir .. "/missing") end)
  sbx.files:write(dir .. "/plain.txt", "x")
  t.raises("InvalidArgument", function() sbx.files:watch_dir(dir .. "/plain.txt") end)
  t.raises("NotFound", function() sbx.files:create_watcher(dir .. "/missing") end)
end)

t.test("a polling watcher returns queued events once, then only new ones", function(ctx)
  local sbx, dir = ctx.base_sandbox, ctx.workdir
  sbx.files:make_dir(dir .. "/sub")
  local watcher = sbx.files:create_watcher(dir, { recursive = true })
  t.match(watcher.id, "^w")
  sbx.files:write(dir .. "/f.txt", "1")
  sbx.files:write(dir .. "/sub/g.txt", "2")
  local evs = watcher:get_events()
  t.ok(has(evs, "f.txt", "create") and has(evs, "sub/g.txt", "write"),
    "queued events: " .. show(evs))
  t.eq(#watcher:get_events(), 0)
  sbx.files:remove(dir .. "/f.txt")
  evs = watcher:get_events()
  t.eq(show(evs), "f.txt:remove")
  watcher:remove()
  t.raises("NotFound", function() watcher:get_events() end)
  t.raises("NotFound", function() watcher:remove() end)
end)

-- ---- keepalive -------------------------------------------------------------------------------

-- Both wait for the keepalives themselves, then end the silence (EOF on stdin, stop): a fixed
-- silence of 3.5 s or a 4 s watch left room for 2 keepalives only on a quiet machine (issue 22).
-- That a watch ends with Timeout at its timeout is the test "a watch ends with Timeout ...".
t.test("a command silent for longer than the keepalive interval still completes", function(ctx)
  local h = ctx.base_sandbox.commands:run("read -r _ || true; echo done",
    { background = true, stdin = true, keepalive = 1 })
  t.eventually(function()
    t.ok(h:keepalives() >= 2, "keepalive events during the silence: " .. h:keepalives())
  end, { timeout = 30, interval = 0.2 })
  t.eq(h:done(), false, "still silent")
  h:close_stdin()
  local r = h:wait()
  t.eq(r.exit_code, 0)
  t.eq(r.stdout, "done\n")
end)

t.test("an idle watch receives keepalives at the requested interval", function(ctx)
  local w = ctx.base_sandbox.files:watch_dir(ctx.workdir, { keepalive = 1, timeout = 60 })
  t.eventually(function()
    t.ok(w:keepalives() >= 2, "keepalives on an idle watch: " .. w:keepalives())
  end, { timeout = 30, interval = 0.2 })
  w:stop()
  t.eq(w:error(), nil)
  t.eq(#w:events(), 0)
end)
