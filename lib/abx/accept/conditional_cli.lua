-- abx.accept.conditional_cli: the CLI side of `abxlua accept conditional`: runs `abxlua ...` as a
-- child process (abx.run.process: non-blocking pipes polled from the calling task, so the loop
-- and the interrupt handler keep running) with its own HOME, XDG state dir and TMPDIR, the
-- runner's provider, config and run tag, and without the environment variables that would point
-- it elsewhere (M.UNSET, M.UNSET_REMOTE). Values reach the child through its environment only
-- (never its command line, never a file). A child still running when the wait ends (deadline,
-- interrupt) is killed with its process group when its handle closes (abx.run.process), and dies
-- with the engine (PR_SET_PDEATHSIG) if the runner is killed hard.
local core = require("abx.core")
local cjson = require("cjson")
local process = require("abx.run.process")

local M = {}

-- What a child of a local provider does not inherit: what would point it at another provider,
-- another project or another run, and every credential (it gets the runner's platform instead).
M.UNSET = { "ABX_SANDBOX_API_KEY", "E2B_API_KEY", "ABX_SANDBOX_BASE_URL", "E2B_API_URL",
  "ABX_SANDBOX_DOMAIN", "E2B_DOMAIN", "E2B_SANDBOX_URL", "ABX_REGION", "ABX_PROVIDER",
  "ABX_FLAVOR", "ABX_CONFIG", "ABX_LOCAL_URL", "ABX_LOCAL_API_KEY", "ABX_LOCAL_DOMAIN",
  "E2E_RUN_ID", "E2E_SANDBOX_TTL", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "CI" }

-- What a child of a remote provider does not inherit: the same but the credentials, which it
-- resolves as the runner did (the environment, then .env): they are never written to a file.
M.UNSET_REMOTE = { "ABX_LOCAL_URL", "ABX_LOCAL_API_KEY", "ABX_LOCAL_DOMAIN", "ABX_PROVIDER",
  "ABX_FLAVOR", "ABX_CONFIG", "E2E_RUN_ID", "E2E_SANDBOX_TTL", "XDG_STATE_HOME", "XDG_CONFIG_HOME",
  "XDG_CACHE_HOME", "CI" }

local function q(s)
  s = tostring(s)
  if s:match("^[%w@%%+=:,./_-]+$") then return s end
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

local CLI = {}
CLI.__index = CLI

---A CLI runner.
---@param o {exe: string, env: table<string,string>, unset?: string[]}
---  exe: the abxlua executable under test; env: variables set for the child (over the unset ones)
---@return table runner
function M.new(o)
  if type(o.exe) ~= "string" then
    core.error("InvalidArgument", 0, "conditional_cli.new: exe must be a string")
  end
  local env = {}
  for _, k in ipairs(o.unset or M.UNSET) do env[k] = false end
  for k, v in pairs(o.env or {}) do env[k] = v end
  return setmetatable({ exe = o.exe, env = env, calls = 0, stopped = 0 }, CLI)
end

---Runs `abxlua args...` and waits for it (yields; interruptible).
---@param args string[] the arguments after the executable
---@param opts? {timeout?: number} seconds (default 120); then the child is killed
---@return {code: integer, stdout: string, stderr: string, duration: number, command: string}
---Raises: Timeout when the child outlives `timeout`; Interrupted (from the wait); both after the
---  child was killed. NotFound when the executable is missing.
function CLI:run(args, opts)
  opts = opts or {}
  self.calls = self.calls + 1
  local argv = { self.exe }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  local shown = {}
  for i, a in ipairs(args) do shown[i] = q(a) end
  local command = "abxlua " .. table.concat(shown, " ")
  local t0 = core.now()
  local ok, r = pcall(process.run, argv, { env = self.env, timeout = opts.timeout or 120 })
  if not ok then
    self.stopped = self.stopped + 1 -- the handle's close killed it
    if core.is_error(r) and r.kind == "Timeout" then
      core.error("Timeout", 0, string.format("`%s` did not end within %g s", command,
        opts.timeout or 120))
    end
    error(r, 0)
  end
  return { code = r.exit_code, stdout = r.stdout, stderr = r.stderr, duration = core.now() - t0,
    command = command }
end

---Runs the CLI with `args` and decodes its stdout as JSON.
---@return any decoded, table result (as run)
---Raises: as run; Assertion (the check's expectation of the CLI) when the exit code is not 0
---  (the message has the end of the CLI's stderr) or stdout is not JSON.
function CLI:json(args, opts)
  local r = self:run(args, opts)
  if r.code ~= 0 then
    core.error("Assertion", 0, string.format("`%s` exited %s: %s", r.command, tostring(r.code),
      (r.stderr:gsub("%s+$", "")):sub(-600)))
  end
  local ok, v = pcall(cjson.decode, r.stdout)
  if not ok then
    core.error("Assertion", 0, string.format("`%s` printed no JSON on stdout: %s", r.command,
      r.stdout:sub(1, 300)))
  end
  return v, r
end

return M
