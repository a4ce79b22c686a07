-- abx.run.capture: per-test captured output, as pytest captures (abxlua run; `-s` turns it off).
-- What a test writes through the scenario's print, io.write, io.stdout:write and io.stderr:write
-- (abx.run.output) is kept with the test instead of going to the console: the runner shows it
-- under the test's failure and writes it to the JUnit <system-out>/<system-err>. Attribution
-- follows tasks, so it holds under -j: the test's own task writes to its sink, and a task spawned
-- while a test runs (the reader task of a background command, whose on_stdout callback prints the
-- command's output) writes to the sink of the test that spawned it. A sink is closed when its test
-- ends; a task that outlives its test (or any write outside a test) goes straight to the console.
-- Masking: the captured text is raw here; every sink it reaches masks it whole (core.write for
-- the console, abx.run.report.* for reports), so a secret written in pieces is masked too.
-- Bounded: at most LIMIT bytes per stream and test are kept, cut at a line end (a first write of
-- one longer line is cut inside it); the bytes beyond are counted and the count is reported with
-- the output.
local core = require("abx.core")

local M = {}

M.LIMIT = 1024 * 1024 -- bytes kept per stream and test

M.enabled = false -- set by abxlua run (off with -s)

-- task -> the sink its writes go to (weak: a finished task is forgotten)
local sinks = setmetatable({}, { __mode = "k" })
local installed = false

---Makes every task spawned from now on inherit the sink of the task spawning it. The one
---place that wraps core.spawn; idempotent.
function M.install()
  if installed then return end
  installed = true
  local spawn = core.spawn
  core.spawn = function(...)
    local task = spawn(...)
    local me = core.current()
    local s = me and sinks[me]
    if s and s.open then sinks[task] = s end
    return task
  end
end

---Opens a sink for the test that `task` runs (the runner, before the test starts).
---@param task userdata the test's task (core.current())
function M.begin(task)
  if not M.enabled then return end
  sinks[task] = { open = true, out = {}, err = {}, bytes = { out = 0, err = 0 },
    dropped = { out = 0, err = 0 } }
end

---Closes the sink of `task` and returns what the test wrote: { stdout, stderr, dropped_stdout,
---dropped_stderr } (strings may be ""), or nil when capture is off or nothing was written.
---@param task userdata
---@return table|nil
function M.finish(task)
  local s = sinks[task]
  if not s then return nil end
  sinks[task] = nil
  s.open = false
  if s.bytes.out + s.bytes.err + s.dropped.out + s.dropped.err == 0 then return nil end
  return { stdout = table.concat(s.out), stderr = table.concat(s.err),
    dropped_stdout = s.dropped.out, dropped_stderr = s.dropped.err }
end

-- Keeps text in stream `which` of s up to LIMIT (the last kept piece ends at a newline when it
-- has one, so a cut does not run through a line).
local function keep(s, which, text)
  local room = M.LIMIT - s.bytes[which]
  if #text <= room then
    local list = s[which]
    list[#list + 1] = text
    s.bytes[which] = s.bytes[which] + #text
    return
  end
  local piece = text:sub(1, math.max(room, 0))
  local nl = piece:match("^.*()\n")
  if nl then
    piece = piece:sub(1, nl)
  elseif s.bytes[which] > 0 then
    piece = "" -- the kept text ends at a line end; only a first write of one long line is cut
  end
  if #piece > 0 then
    local list = s[which]
    list[#list + 1] = piece
  end
  s.bytes[which] = M.LIMIT -- full: nothing more is kept
  s.dropped[which] = s.dropped[which] + #text - #piece
end

---Writes text for the running task: into its test's sink while capturing, else to the console
---(masked, core.write / core.ewrite).
---@param which string "out" or "err"
---@param text string
function M.write(which, text)
  local me = core.current()
  local s = me and sinks[me]
  if s and s.open then
    keep(s, which, text)
  elseif which == "err" then
    core.ewrite(text)
  else
    core.write(text)
  end
end

---The captured text of one stream with its note when bytes were not kept, or nil when empty.
---@param cap table|nil what finish returned
---@param which string "stdout" or "stderr"
---@return string|nil
function M.text(cap, which)
  if not cap then return nil end
  local text, dropped = cap[which], cap["dropped_" .. which]
  if text == "" and dropped == 0 then return nil end
  if dropped > 0 then
    text = text .. (text:sub(-1) == "\n" and "" or "\n") .. string.format(
      "[abxlua: %d more bytes of %s not kept: the capture keeps %d bytes per test; -s writes "
      .. "everything to the console]\n", dropped, which, M.LIMIT)
  end
  return text
end

return M
