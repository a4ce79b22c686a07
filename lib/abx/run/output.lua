-- abx.run.output: the `print` and `io` a scenario sees. What they write to stdout and stderr goes
-- through core.write / core.ewrite, so registered secrets are masked in it, across calls too (a
-- secret a scenario writes in two chunks, e.g. from on_stdout, is masked; engine/secrets.h).
-- Everything else of `io` (open, lines, read, files a scenario opens) is Lua's own.
-- While a test runs, abxlua run captures what these write (abx.run.capture): it is kept with the
-- test, shown under its failure and written to the JUnit report; `-s` writes it straight through.
local capture = require("abx.run.capture")

local M = {}

-- A stand-in for io.stdout / io.stderr: `write` is masked, every other method goes to the file.
local function masked_file(real, write, name)
  local f = {}
  function f.write(self, ...)
    for i = 1, select("#", ...) do
      local v = select(i, ...)
      if type(v) ~= "string" and type(v) ~= "number" then
        error(string.format("bad argument #%d to 'write' (string expected, got %s)", i, type(v)), 2)
      end
      write(tostring(v))
    end
    return self
  end
  return setmetatable(f, {
    __index = function(_, k)
      local m = real[k]
      if type(m) ~= "function" then return m end
      return function(self, ...)
        if self == f then return m(real, ...) end
        return m(self, ...)
      end
    end,
    __tostring = function() return "file (" .. name .. ", masked)" end,
  })
end

---The scenario's io.stdout: `write(...)` masked on stdout (returns the file), the rest as io.stdout.
M.stdout = masked_file(io.stdout, function(text) capture.write("out", text) end, "stdout")
---The scenario's io.stderr: `write(...)` masked on stderr, the rest as io.stderr.
M.stderr = masked_file(io.stderr, function(text) capture.write("err", text) end, "stderr")

---print(...) as Lua's (tostring of each argument, tab-separated, then a newline), masked on stdout.
function M.print(...)
  local parts = {}
  for i = 1, select("#", ...) do parts[i] = tostring((select(i, ...))) end
  capture.write("out", table.concat(parts, "\t") .. "\n")
end

---The scenario's `io`: Lua's io library with stdout, stderr and write masked. io.write writes to
---the default output file: masked when that is stdout, else to the file set with io.output(file).
---io.output() without argument returns the masked stdout while the default output is stdout.
M.io = setmetatable({
  stdout = M.stdout,
  stderr = M.stderr,
  write = function(...)
    local out = io.output()
    if out == io.stdout then return M.stdout:write(...) end
    return out:write(...)
  end,
  output = function(...)
    if select("#", ...) > 0 then
      local file = ...
      if file == M.stdout then file = io.stdout elseif file == M.stderr then file = io.stderr end
      io.output(file)
    end
    local out = io.output()
    if out == io.stdout then return M.stdout end
    if out == io.stderr then return M.stderr end
    return out
  end,
}, { __index = io })

---The globals a scenario sees instead of _G's: print and io.
M.GLOBALS = { print = M.print, io = M.io }

return M
