-- abx.accept.conditional_cli: the CLI side of `abxlua accept conditional`: runs `abxlua ...` as a
-- child process with its own HOME, XDG state dir and TMPDIR, the runner's provider, config and
-- run tag, and without the environment variables that would point it elsewhere (M.UNSET,
-- M.UNSET_REMOTE), and returns its exit code, stdout and stderr.
--
-- The engine has no process primitive of its own besides the local platform (core.platform_start)
-- and must not block its thread (docs/ENGINE.md, "No blocking call on the engine thread"): the
-- child is started in the background by /bin/sh, which writes the child's pid and, once it ended,
-- its exit status to files of the run's private directory; the calling task polls for the status
-- with core.sleep, so other tasks and the interrupt handler keep running. A child still running
-- when the wait ends (deadline, interrupt) is sent SIGTERM, then SIGKILL; every child started is
-- remembered until it has ended, and M.reap (the runner's cleanup) ends what is left.
local core = require("abx.core")
local cjson = require("cjson")

local M = {}

-- The variables the child never inherits: what would point it at another provider, another
-- project or another run (it gets its own values from the runner instead).
M.UNSET = { "ABX_SANDBOX_API_KEY", "E2B_API_KEY", "ABX_SANDBOX_BASE_URL", "E2B_API_URL",
  "ABX_SANDBOX_DOMAIN", "E2B_DOMAIN", "E2B_SANDBOX_URL", "ABX_REGION", "ABX_PROVIDER",
  "ABX_FLAVOR", "ABX_CONFIG", "ABX_LOCAL_URL", "ABX_LOCAL_API_KEY", "ABX_LOCAL_DOMAIN",
  "E2E_RUN_ID", "E2E_SANDBOX_TTL", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "CI" }

-- What a child of a remote provider does not inherit: the same, but for the credentials, which it
-- resolves as the runner did (the environment, then .env): they are never written to a file.
M.UNSET_REMOTE = { "ABX_LOCAL_URL", "ABX_LOCAL_API_KEY", "ABX_LOCAL_DOMAIN", "ABX_PROVIDER",
  "ABX_FLAVOR", "ABX_CONFIG", "E2E_RUN_ID", "E2E_SANDBOX_TTL", "XDG_STATE_HOME", "XDG_CONFIG_HOME",
  "XDG_CACHE_HOME", "CI" }

-- Poll interval while a child runs, seconds.
M.POLL = 0.05

local function q(s)
  s = tostring(s)
  if s:match("^[%w@%%+=:,./_-]+$") then return s end
  return "'" .. s:gsub("'", "'\\''") .. "'"
end
M.quote = q

local CLI = {}
CLI.__index = CLI

---A CLI runner.
---@param o {exe: string, cwd: string, dir: string, env: table<string,string>, unset?: string[]}
---  exe: the abxlua executable under test; cwd: the child's working directory (the isolated
---  project); dir: a private directory for the children's output files; env: variables set for
---  the child (no secret: they are on its command line; secrets go in the project's .env)
---@return table runner
function M.new(o)
  for _, k in ipairs({ "exe", "cwd", "dir" }) do
    if type(o[k]) ~= "string" then
      core.error("InvalidArgument", 0, "conditional_cli.new: " .. k .. " must be a string")
    end
  end
  return setmetatable({ exe = o.exe, cwd = o.cwd, dir = o.dir, env = o.env or {},
    unset = o.unset or M.UNSET, seq = 0, live = {}, calls = 0 }, CLI)
end

local function alive(pid)
  return os.execute("kill -0 " .. math.tointeger(pid) .. " 2>/dev/null") == true
end

local function signal(pid, sig)
  os.execute("kill -" .. sig .. " " .. math.tointeger(pid) .. " 2>/dev/null")
end

-- The child's exit code from its status file: nil while it runs.
local function status_of(child)
  local text = core.read_file(child.base .. ".rc")
  if not text then return nil end
  return math.tointeger(tonumber(text:match("%d+")))
end

-- Reads pid once the wrapper wrote it (it does so before it waits).
local function pid_of(child)
  if child.pid then return child.pid end
  local text = core.read_file(child.base .. ".pid")
  child.pid = text and math.tointeger(tonumber(text:match("%d+"))) or nil
  return child.pid
end

local function finish(self, child)
  self.live[child] = nil
  local out = core.read_file(child.base .. ".out") or ""
  local err = core.read_file(child.base .. ".err") or ""
  for _, ext in ipairs({ ".out", ".err", ".pid", ".rc" }) do os.remove(child.base .. ext) end
  return out, err
end

---Runs `abxlua args...` and waits for it (yields; interruptible).
---@param args string[] the arguments after the executable
---@param opts? {timeout?: number} seconds (default 120); then SIGTERM, 5 s later SIGKILL
---@return {code: integer, stdout: string, stderr: string, duration: number, command: string}
---Raises: Timeout when the child outlives `timeout` (it is then stopped); Interrupted (from the
---  wait) after the child was sent SIGTERM; Internal when it cannot be started.
function CLI:run(args, opts)
  opts = opts or {}
  local timeout = opts.timeout or 120
  self.seq = self.seq + 1
  self.calls = self.calls + 1
  local child = { base = string.format("%s/cli-%d", self.dir, self.seq), started = core.now() }
  local env = { "env" }
  for _, k in ipairs(self.unset) do env[#env + 1] = "-u " .. k end
  local names = {}
  for k in pairs(self.env) do names[#names + 1] = k end
  table.sort(names)
  for _, k in ipairs(names) do env[#env + 1] = q(k .. "=" .. self.env[k]) end
  local argv = { q(self.exe) }
  for _, a in ipairs(args) do argv[#argv + 1] = q(a) end
  local shown = "abxlua " .. table.concat(argv, " ", 2)
  local b = q(child.base)
  -- the wrapper: the child in the background (its pid is $!), then its status once it ended,
  -- written under a temporary name and renamed so that a half-written status is never read
  local line = string.format("cd %s && ( %s %s </dev/null >%s.out 2>%s.err & echo $! >%s.pid; "
    .. "wait $!; echo $? >%s.rc.tmp; mv %s.rc.tmp %s.rc ) >/dev/null 2>&1 &", q(self.cwd),
    table.concat(env, " "), table.concat(argv, " "), b, b, b, b, b, b)
  if os.execute(line) ~= true then
    core.error("Internal", 0, "cannot start the CLI child: " .. shown)
  end
  self.live[child] = true
  local deadline = core.now() + timeout
  local ok, err = pcall(function()
    while status_of(child) == nil do
      if core.now() > deadline then
        core.error("Timeout", 0, string.format("the CLI did not end within %g s: %s", timeout,
          shown))
      end
      core.sleep(M.POLL)
    end
  end)
  if not ok then
    local pid = pid_of(child)
    if pid then signal(pid, "TERM") end
    child.term_at = core.now()
    error(err, 0)
  end
  local code = status_of(child)
  local stdout, stderr = finish(self, child)
  return { code = code, stdout = stdout, stderr = stderr, duration = core.now() - child.started,
    command = shown }
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

---The children still running (their number).
function CLI:running()
  local n = 0
  for _ in pairs(self.live) do n = n + 1 end
  return n
end

---Ends every child still running: SIGTERM, and SIGKILL after `grace` seconds (default 5); waits
---until each has ended (yields; call it from a non-interruptible guard). Returns the number ended.
---@param grace? number
---@return integer
function CLI:reap(grace)
  grace = grace or 5
  local n = 0
  for child in pairs(self.live) do
    local pid = pid_of(child)
    if not pid then -- the wrapper has not written it yet: give it a moment
      local until_ = core.now() + 2
      while not pid_of(child) and core.now() < until_ do core.sleep(M.POLL) end
      pid = pid_of(child)
    end
    if pid and status_of(child) == nil and alive(pid) then
      if not child.term_at then signal(pid, "TERM"); child.term_at = core.now() end
      while alive(pid) and status_of(child) == nil and core.now() < child.term_at + grace do
        core.sleep(M.POLL)
      end
      if alive(pid) and status_of(child) == nil then signal(pid, "KILL") end
      local until_ = core.now() + 2
      while status_of(child) == nil and core.now() < until_ do core.sleep(M.POLL) end
      n = n + 1
    end
    finish(self, child)
  end
  return n
end

return M
