-- 03_commands: commands through envd's process service: output, exit codes, cwd, envs, users,
-- timeouts, background processes, stdin, signals, reconnecting, large output, streaming callbacks.
-- Fixtures: ctx.base_sandbox (one per test). Markers: none.
-- Protocol: docs/protocol/envd-protocol.md §4 (process.Process: Start/Connect streams, List,
--           SendInput, CloseStdin, SendSignal; EndEvent exit codes; Connect-Timeout-Ms kills the
--           process), §2.3-2.4 (streams, errors), §6.2 (users, home /home/user).
-- Background commands that get signalled use `exec sleep N` so the signalled pid is the sleep itself
-- (bash -l -c does not always exec its last command, and a surviving child keeps the pipe open).
local t = require("abx.test")
local files = require("abx.files")

local function listed(sbx, pid)
  for _, p in ipairs(sbx.commands:list()) do
    if p.pid == pid then return p end
  end
  return nil
end

t.test("a command returns its stdout and exit code 0", function(ctx)
  local r = ctx.base_sandbox.commands:run("echo hello")
  t.eq(r.stdout, "hello\n")
  t.eq(r.stderr, "")
  t.eq(r.exit_code, 0)
  t.eq(r.error, nil)
end)

-- A fixed tail on every command (OpenSandbox#1661: about 1 s, unnoticed for months) passes every
-- test that checks only output. The fastest of 10 short commands bounds it: 0.9 s is far above a
-- loaded machine's round trip (milliseconds to tens of them) and below such a tail, and one fast
-- command of ten is enough, so load cannot fail it (docs/mutants.md, command-tail-1s).
t.test("a short command returns without a fixed tail: the fastest of 10 takes under 0.9 s",
  { thresholds = { "min<900", "rate==0" } }, function(ctx)
  local sbx = ctx.base_sandbox
  t.measure("true", function() t.eq(sbx.commands:run("true").exit_code, 0) end, { iterations = 10 })
end)

t.test("a command's stderr is returned apart from stdout", function(ctx)
  local r = ctx.base_sandbox.commands:run("echo out; echo oops >&2")
  t.eq(r.stdout, "out\n")
  t.eq(r.stderr, "oops\n")
  t.eq(r.exit_code, 0)
end)

t.test("a failing command returns exit code 1 without raising", function(ctx)
  local r = ctx.base_sandbox.commands:run("false")
  t.eq(r.exit_code, 1)
  t.match(r.error, "exit status 1")
end)

t.test("a command's non-zero exit code N is returned as is", function(ctx)
  local r = ctx.base_sandbox.commands:run("echo before; exit 42")
  t.eq(r.exit_code, 42)
  t.eq(r.stdout, "before\n")
end)

t.test("a killed background process ends with exit code -1 and an error",
  { requires = { "process_list" } }, function(ctx)
  local cmds = ctx.base_sandbox.commands
  local h = cmds:run("exec sleep 30", { background = true })
  t.ok(h.pid > 0, "the handle carries the pid")
  t.eq(h:kill(), true)
  local r = h:wait()
  t.eq(r.exit_code, -1)
  t.match(r.error, "killed")
  t.eventually(function() t.eq(listed(ctx.base_sandbox, h.pid), nil) end, { timeout = 30 })
end)

t.test("cwd sets the working directory", function(ctx)
  t.eq(ctx.base_sandbox.commands:run("pwd", { cwd = "/tmp" }).stdout, "/tmp\n")
end)

t.test("a cwd that does not exist gives InvalidArgument", function(ctx)
  t.raises("InvalidArgument", function()
    ctx.base_sandbox.commands:run("pwd", { cwd = "/no/such/dir" })
  end)
end)

t.test("envs are set for the command", function(ctx)
  local r = ctx.base_sandbox.commands:run("printf '%s|%s\\n' \"$ABX_A\" \"$ABX_B\"",
    { envs = { ABX_A = "one", ABX_B = "two words" } })
  t.eq(r.stdout, "one|two words\n")
end)

t.test("commands run as user by default",
  { requires = { "default_user" } }, function(ctx)
  t.eq(ctx.base_sandbox.commands:run("id -un").stdout, "user\n")
end)

t.test("commands run as root or as user on request", function(ctx)
  local cmds = ctx.base_sandbox.commands
  t.eq(cmds:run("id -un", { user = "root" }).stdout, "root\n")
  t.eq(cmds:run("id -u", { user = "root" }).stdout, "0\n")
  t.eq(cmds:run("id -un", { user = "user" }).stdout, "user\n")
  t.eq(cmds:run("echo \"$HOME\"", { user = "user" }).stdout, "/home/user\n")
end)

t.test("the default home and working directory are /home/user",
  { requires = { "default_user" } }, function(ctx)
  t.eq(ctx.base_sandbox.commands:run("echo \"$HOME\"; pwd").stdout, "/home/user\n/home/user\n")
end)

local function timed_out(cmds, cmd)
  local started = os.time()
  local err = t.raises("Timeout", function() cmds:run(cmd, { timeout = 1 }) end)
  t.ok(os.time() - started < 20, "the timeout fired long before the command would have ended")
  t.ok(err.message ~= nil, "the Timeout carries a message")
end

t.test("a command timeout raises Timeout", function(ctx)
  local cmds = ctx.base_sandbox.commands
  timed_out(cmds, "sleep 35")
  t.eq(cmds:run("echo after").stdout, "after\n", "the sandbox still runs commands")
end)

t.test("a command timeout raises Timeout and the process is gone", { requires = { "process_list" } },
  function(ctx)
  local cmds = ctx.base_sandbox.commands
  timed_out(cmds, "sleep 31")
  t.eventually(function()
    for _, p in ipairs(cmds:list()) do
      if p.args[3] == "sleep 31" then t.fail("process " .. p.pid .. " still listed") end
    end
  end, { timeout = 30, interval = 0.5 })
end)

t.test("stdin sent to a background process reaches it and close_stdin gives EOF", function(ctx)
  local h = ctx.base_sandbox.commands:run("cat", { background = true, stdin = true })
  h:send_stdin("hello ")
  h:send_stdin("stdin\n")
  h:close_stdin()
  local r = h:wait()
  t.eq(r.stdout, "hello stdin\n")
  t.eq(r.exit_code, 0)
end)

t.test("send_stdin without stdin opt-in raises InvalidArgument", function(ctx)
  local h = ctx.base_sandbox.commands:run("exec sleep 20", { background = true })
  t.raises("InvalidArgument", function() h:send_stdin("x") end)
  t.eq(h:kill(), true)
end)

t.test("the process list shows a running background process", { requires = { "process_list" } },
  function(ctx)
  local cmds = ctx.base_sandbox.commands
  local h = cmds:run("exec sleep 32", { background = true, cwd = "/tmp" })
  local p = listed(ctx.base_sandbox, h.pid)
  t.ok(p, "pid " .. h.pid .. " is listed")
  t.eq(p.cmd, "/bin/bash")
  t.eq(p.args[#p.args], "exec sleep 32")
  t.eq(p.cwd, "/tmp")
  t.eq(h:kill(), true)
  h:wait()
  t.eventually(function() t.eq(listed(ctx.base_sandbox, h.pid), nil) end, { timeout = 30 })
end)

t.test("SIGTERM ends a process", function(ctx)
  local cmds = ctx.base_sandbox.commands
  local h = cmds:run("exec sleep 33", { background = true })
  t.eq(cmds:signal(h.pid, "SIGTERM"), true)
  local r = h:wait()
  t.eq(r.exit_code, -1)
  t.match(r.error, "terminated")
end)

t.test("SIGKILL ends a process", function(ctx)
  local cmds = ctx.base_sandbox.commands
  local h = cmds:run("exec sleep 34", { background = true })
  t.eq(cmds:signal(h.pid, "SIGKILL"), true)
  local r = h:wait()
  t.eq(r.exit_code, -1)
  t.match(r.error, "killed")
end)

t.test("signalling an unknown pid returns false", function(ctx)
  t.eq(ctx.base_sandbox.commands:kill(999999), false)
end)

-- The process writes only when told (EOF on its stdin), after connect is in place: a fixed sleep
-- raced with the connect on a busy machine, and output nobody is subscribed to is lost (issue 22).
t.test("connecting to a running process by pid receives its later output", function(ctx)
  local cmds = ctx.base_sandbox.commands
  local h = cmds:run("read -r _ || true; echo later; exit 3", { background = true, stdin = true })
  h:disconnect()
  local again = cmds:connect(h.pid)
  t.eq(again.pid, h.pid)
  cmds:close_stdin(h.pid)
  local r = again:wait()
  t.eq(r.stdout, "later\n")
  t.eq(r.exit_code, 3)
end)

-- One 5 MiB line without a newline: byte-exact only where output is a byte stream (execd sends
-- lines without their terminator and splits a long one).
t.test("5 MiB of output arrive intact",
  { requires = { "exact_output" } }, function(ctx)
  local n = 5 * 1024 * 1024
  local cmds = ctx.base_sandbox.commands
  local r = cmds:run("head -c " .. n .. " /dev/zero | tr '\\0' 'x'")
  t.eq(r.exit_code, 0)
  t.eq(#r.stdout, n)
  local remote = cmds:run("head -c " .. n .. " /dev/zero | tr '\\0' 'x' | sha256sum").stdout
  t.eq(remote:match("^(%x+)"), files.sha256(r.stdout))
  t.ok(r.stdout == string.rep("x", n), "every byte is 'x'")
end)

t.test("5 MiB of output in lines arrive intact", function(ctx)
  local n = 5 * 1024 * 1024
  local cmds = ctx.base_sandbox.commands
  local gen = "yes 0123456789abcde | head -c " .. n -- 16-byte lines, n a multiple of 16
  local r = cmds:run(gen)
  t.eq(r.exit_code, 0)
  t.eq(#r.stdout, n)
  local remote = cmds:run(gen .. " | sha256sum").stdout
  t.eq(remote:match("^(%x+)"), files.sha256(r.stdout))
  t.ok(r.stdout == string.rep("0123456789abcde\n", n // 16), "every line is intact")
end)

-- The second line waits for a file the test makes, not for a fixed sleep, so "still running" holds
-- however long the first line takes to arrive on a busy machine (issue 22). A file, not stdin:
-- flavours without stdin (opensandbox) run this test too.
t.test("output reaches on_stdout callbacks while the process runs", function(ctx)
  local seen = {}
  local go = "/tmp/abx-go-" .. ctx.run_id .. "-" .. math.random(1 << 30)
  local cmds = ctx.base_sandbox.commands
  local h = cmds:run("echo first; while [ ! -e " .. go .. " ]; do sleep 0.05; done; rm -f " .. go
    .. "; echo second", {
    background = true, timeout = 120,
    on_stdout = function(chunk) seen[#seen + 1] = chunk end,
  })
  t.eventually(function()
    t.ok(table.concat(seen):find("first", 1, true), "first line seen")
  end, { timeout = 30, interval = 0.1 })
  t.eq(h:done(), false)
  t.eq(h:stdout(), "first\n")
  cmds:run("touch " .. go)
  local r = h:wait()
  t.eq(table.concat(seen), "first\nsecond\n")
  t.eq(r.stdout, "first\nsecond\n")
end)

-- keep_output = false: the callbacks get every byte, nothing is kept (result stdout nil,
-- handle:stdout() raises), and what the engine holds for the output stays bounded however much
-- the command writes: 128 MiB through the callback, at most 16 MiB held at once (the stream's
-- 8 MiB queue and one message; all of it was held when every chunk was kept, issue 14). Bounded
-- by the engine's own accounting, handle:held_peak(), not by the process's RSS: the suite runs
-- tests side by side in one process, so its RSS measures the neighbours too (issue 22). The RSS
-- claim is made where the process is the case's alone: ctest kinds:command_rss.
local MIB = 1024 * 1024

t.test("keep_output = false streams 128 MiB to on_stdout without keeping it",
  { requires = { "exact_output" } }, function(ctx)
  local n, got = 128 * MIB, 0
  local h = ctx.base_sandbox.commands:run("head -c " .. n .. " /dev/zero; echo e >&2", {
    background = true, keep_output = false, timeout = 120,
    on_stdout = function(chunk) got = got + #chunk end,
  })
  local r = h:wait()
  t.eq(got, n, "every byte reached the callback")
  t.eq(r.exit_code, 0)
  t.eq(r.stdout, nil, "stdout is not kept")
  t.eq(r.stderr, nil, "stderr is not kept")
  local held = h:held_peak()
  t.ok(held > 0 and held < 16 * MIB, string.format("the engine held at most %.1f MiB at once of "
    .. "a 128 MiB output", held / MIB))
  local err = t.raises("InvalidArgument", function() h:stdout() end)
  t.match(err.message, "keep_output = false")
end)

-- The accounting counts what is kept: the same kind of output, kept, is held whole, so the bound
-- above would fail if keep_output = false kept the chunks.
t.test("held_peak counts the output a handle keeps", { requires = { "exact_output" } },
  function(ctx)
  local n = 16 * MIB
  local h = ctx.base_sandbox.commands:run("head -c " .. n .. " /dev/zero",
    { background = true, timeout = 120 })
  local r = h:wait()
  t.eq(#r.stdout, n)
  t.ok(h:held_peak() >= n, string.format("held_peak %d >= the %d bytes kept", h:held_peak(), n))
end)

t.test("stderr reaches on_stderr callbacks in the foreground", function(ctx)
  local seen = {}
  local r = ctx.base_sandbox.commands:run("echo e1 >&2; echo e2 >&2", {
    on_stderr = function(chunk) seen[#seen + 1] = chunk end,
  })
  t.eq(table.concat(seen), "e1\ne2\n")
  t.eq(r.stderr, "e1\ne2\n")
end)
