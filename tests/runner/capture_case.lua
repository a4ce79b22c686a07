-- Capture case (run by tests/runner/capture.py, -j 4): each test writes through print, io.write,
-- io.stdout:write and io.stderr:write, interleaved with the others; one echoes a command's output
-- (foreground and background) through on_stdout / on_stderr; two print a registered secret (once
-- in two pieces). capture.py checks that every line is attributed to its test on the console (a
-- failure's "captured" sections) and in JUnit (<system-out>, <system-err>), masked, and that -s
-- writes everything straight through instead.
local t = require("abx.test")
local core = require("abx.core")
core.add_secret("capture-secret-123")

local function chatter(tag)
  for i = 1, 5 do
    print(tag .. " out " .. i)
    io.stderr:write(tag .. " err " .. i .. "\n")
    core.sleep(0.05)
  end
end

t.test("A prints and fails", function()
  chatter("A")
  t.fail("A failed")
end)

t.test("B prints and fails", function()
  chatter("B")
  t.fail("B failed")
end)

t.test("C prints and passes", function()
  print("C print")
  io.write("C io.write\n")
  io.stdout:write("C stdout:write\n")
  core.sleep(0.1)
end)

t.test("D echoes a command and fails", function(ctx)
  local sbx = ctx.base_sandbox
  sbx.commands:run("echo from-command; echo to-stderr >&2", {
    on_stdout = function(chunk) io.write(chunk) end,
    on_stderr = function(chunk) io.stderr:write(chunk) end,
  })
  local h = sbx.commands:run("sleep 0.2; echo background-line", { background = true, on_stdout = print })
  h:wait()
  print("token capture-secret-123")
  t.fail("D failed")
end)

t.test("E prints a secret in two pieces and passes", function()
  io.write("piece capture-sec")
  core.sleep(0.05)
  io.write("ret-123 end\n")
end)
