-- abx.run.process: runs a local program to its end from a task without blocking the loop
-- (core.process_start, bindings/core_pipe.c: its stdout and stderr are pipes on the loop, read by
-- this task and a helper task, so other tasks run meanwhile). What a scenario or a runner uses to
-- drive the abxlua CLI itself (19_named_string_array, accept conditional).
--
--   local r = process.run({ process.abxlua(), "sandbox", "list", "--json" },
--     { env = { ABX_LOCAL_URL = url }, timeout = 60 })
--   -- r = { exit_code = 0, stdout = "...", stderr = "..." }   exit_code -N: killed by signal N
--
-- stdin is closed at once (the child reads end of file). Units: seconds. Limits: max_output bytes
-- per stream (default 16 MiB; more is an error, the child killed). Raises: Timeout (the child's
-- process group is killed at the deadline), PayloadTooLarge (output over the ceiling),
-- InvalidArgument / NotFound (core.process_start). The child dies with the engine
-- (PR_SET_PDEATHSIG) and is killed, its group, when the run ends early (an error or an
-- interrupted task), so an interrupted test leaves no process behind.
local core = require("abx.core")

local M = {}

M.MAX_OUTPUT = 16 * 1024 * 1024

---This engine's own executable (what `abxlua ...` children should run).
---@return string
function M.abxlua()
  return core.self_exe()
end

-- Reads `pipe` to its end into parts; kills the child (its group) and notes the stream when
-- more than `limit` bytes came. Returns the byte count.
local function drain(pipe, parts, limit, state, name)
  local n = 0
  while true do
    local chunk = pipe:read()
    if not chunk then break end
    n = n + #chunk
    if n > limit then
      state.over = state.over or name
      state.proc:signal(9, true)
      break
    end
    parts[#parts + 1] = chunk
  end
  pipe:close()
  return n
end

---Runs argv to its end. Must be called from a task.
---@param argv string[] argv[1] a path or a name looked up in PATH
---@param opts? {env?: table<string, string|false>, timeout?: number, max_output?: integer}
---@return {exit_code: integer, stdout: string, stderr: string}
function M.run(argv, opts)
  opts = opts or {}
  if type(argv) ~= "table" or #argv == 0 then
    core.error("InvalidArgument", 0, "process.run: argv must be a non-empty array of strings")
  end
  local limit = opts.max_output or M.MAX_OUTPUT
  local timeout = opts.timeout or 120
  local p = core.process_start({ argv = argv, env = opts.env, stderr = "pipe" })
  p.stdin:close()
  local state = { proc = p.handle }
  local out, err = {}, {}
  local me = core.current()
  local err_done, timed_out, finished = false, false, false
  core.spawn(function()
    pcall(drain, p.stderr, err, limit, state, "stderr")
    err_done = true
    core.unpark(me)
  end)
  local watchdog = core.spawn(function()
    if pcall(core.sleep, timeout) and not finished then
      timed_out = true
      p.handle:signal(9, true)
    end
  end)
  local ok, e = pcall(function()
    drain(p.stdout, out, limit, state, "stdout")
    while not err_done do core.park() end
  end)
  local code = p.handle:poll()
  local delay = 0.002
  while ok and not code do -- both pipes at end of file: the child exits about now
    core.sleep(delay)
    delay = math.min(delay * 2, 0.05)
    code = p.handle:poll()
  end
  finished = true
  pcall(core.abort, watchdog, "Interrupted", "process ended")
  if not ok then
    p.handle:signal(9, true)
    error(e, 0)
  end
  if state.over then
    core.error("PayloadTooLarge", 0, string.format("%s wrote more than %d bytes on %s", argv[1],
      limit, state.over))
  end
  if timed_out then
    core.error("Timeout", 0, string.format("%s did not end within %g s", argv[1], timeout))
  end
  return { exit_code = code.code or -code.signal, stdout = table.concat(out),
    stderr = table.concat(err) }
end

return M
