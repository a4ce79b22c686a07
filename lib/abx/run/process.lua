-- abx.run.process: runs a local program to its end from a task without blocking the loop
-- (core.process_start's non-blocking pipes, polled between short core.sleep calls). What a
-- scenario uses to drive the abxlua CLI itself (19_named_string_array).
--
--   local r = process.run({ process.abxlua(), "sandbox", "list", "--json" },
--     { env = { ABX_LOCAL_URL = url }, timeout = 60 })
--   -- r = { exit_code = 0, stdout = "...", stderr = "..." }   exit_code -N: killed by signal N
--
-- Units: seconds. Limits: max_output bytes per stream (default 16 MiB; more is an error, the
-- child killed). Raises: Timeout (the child is killed, its process group, at the deadline),
-- PayloadTooLarge (output over the ceiling), InvalidArgument / NotFound (core.process_start).
-- The child dies with the engine (PR_SET_PDEATHSIG) and with its handle (__close: killed and
-- reaped), so an interrupted test leaves no process behind.
local core = require("abx.core")

local M = {}

M.MAX_OUTPUT = 16 * 1024 * 1024

---This engine's own executable (what `abxlua ...` children should run).
---@return string
function M.abxlua()
  return core.realpath("/proc/self/exe") or "abxlua"
end

---Runs argv to its end. Must be called from a task.
---@param argv string[]
---@param opts? {env?: table<string, string|false>, timeout?: number, max_output?: integer}
---@return {exit_code: integer, stdout: string, stderr: string}
function M.run(argv, opts)
  opts = opts or {}
  local limit = opts.max_output or M.MAX_OUTPUT
  local deadline = core.now() + (opts.timeout or 120)
  local h <close> = core.process_start(argv, opts.env)
  local out, err, n_out, n_err = {}, {}, 0, 0
  local code
  local delay = 0.005
  while true do
    local o, e = h:read()
    local got = false
    if o and o ~= "" then out[#out + 1] = o; n_out = n_out + #o; got = true end
    if e and e ~= "" then err[#err + 1] = e; n_err = n_err + #e; got = true end
    if n_out > limit or n_err > limit then
      h:kill(9)
      core.error("PayloadTooLarge", 0, string.format("%s wrote more than %d bytes on %s",
        argv[1], limit, n_out > limit and "stdout" or "stderr"))
    end
    if code == nil then code = h:poll() end
    if code ~= nil and o == nil and e == nil then break end
    if core.now() > deadline then
      h:kill(9)
      core.error("Timeout", 0, string.format("%s did not end within %g s", argv[1],
        opts.timeout or 120))
    end
    if not got then
      core.sleep(delay)
      delay = math.min(delay * 2, 0.05)
    else
      delay = 0.005
    end
  end
  return { exit_code = code, stdout = table.concat(out), stderr = table.concat(err) }
end

return M
