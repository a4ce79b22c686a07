-- abx.client.pty: `sbx.pty`, interactive terminals through envd's process service (a process started
-- on a pseudo-terminal).
--
--   local h = sbx.pty:create({ cols = 80, rows = 24, on_data = function(bytes) ... end })
--   h:send_input("stty size\n"); h:resize(132, 43); h:send_input("exit\n"); local r = h:wait()
--
-- The terminal runs `/bin/bash -i -l` with TERM=xterm-256color, LANG=C.UTF-8, LC_ALL=C.UTF-8 unless
-- `envs` overrides them, as the SDKs' pty.create (docs/protocol/envd-protocol.md §4.4 "SDK call
-- patterns"). Output arrives only as `data.pty` bytes (§4.4): the terminal's echo, prompts and the
-- programs' output, in one byte stream with CR LF line ends. Input goes through SendInput `pty`;
-- EOF is the byte "\4" (there is no CloseStdin for a PTY, §4.1).
-- `sbx.pty` is set by abx.client.commands.new (sandbox.lua builds commands; PTYs share its service).
-- Idiom: as abx.client.commands: wait() returns {exit_code, error} and does not raise on a non-zero exit;
-- a killed terminal ends with exit_code -1 and error "signal: killed" (§4.3).
-- Units: seconds; `timeout` 0 means none (default 60, as the SDKs; envd kills the terminal when it
-- elapses, §4.4).
-- Source: docs/protocol/envd-protocol.md §4.1-§4.4 (Start with pty, SendInput pty, Update, SendSignal),
--         §3 (bytes are base64 in JSON), §9 (keepalive, deadlines).

local core = require("abx.core")
local errmap = require("abx.client.errmap")
local options = require("abx.client.options")

local pty = {}

local CREATE = options.define("pty:create", "Starts an interactive login shell on a new PTY; a "
  .. "PtyHandle once envd reported the pid.", {
    { "cols", "integer", "columns, 1..65535 (default 80)" },
    { "rows", "integer", "rows, 1..65535 (default 24)" },
    { "user", "string", "user to run as (default \"user\")" },
    { "cwd", "string", "working directory" },
    { "envs", "table<string,string>", "environment on top of TERM, LANG, LC_ALL" },
    { "on_data", "function", "on_data(bytes) for each output chunk as it arrives" },
    { "timeout", "number", "seconds the terminal may live, envd kills it then (default 60, 0 none)" },
    { "keepalive", "integer", "Keepalive-Ping-Interval asked for, whole seconds (default 50)" },
  })

---@class abx.Pty
---@field _sbx abx.Sandbox
---@field _commands abx.Commands
local Pty = {}
options.class(Pty, "Pty", "sbx.pty: interactive terminals through envd's process service.", {}, {
  { "create(opts)", "starts a terminal (options: pty:create): PtyHandle" },
  { "send_input(pid, data)", "writes bytes to a PTY" },
  { "resize(pid, cols, rows)", "resizes a PTY" },
  { "kill(pid)", "SIGKILL; false when it had already gone" },
})

---@class abx.PtyHandle : abx.CommandHandle
---@field pid integer
local PtyHandle = {}
options.class(PtyHandle, "PtyHandle", "A terminal started by pty:create (also has the "
  .. "CommandHandle methods wait, kill, done, keepalives, disconnect).", {
    { "pid", "integer", "process id of the shell" },
  }, {
    { "send_input(data)", "writes bytes to this terminal (\"\\4\" is EOF)" },
    { "resize(cols, rows)", "resizes this terminal" },
    { "output()", "every byte the terminal produced so far" },
    { "send_stdin()", "raises InvalidArgument: a PTY takes input through send_input" },
    { "close_stdin()", "raises InvalidArgument: EOF is send_input(\"\\4\")" },
    { "wait()", "yields until the shell ends: CommandResult (stdout is the output)" },
    { "kill()", "SIGKILL; false when it had already gone" },
    { "stdout()", "the output so far" },
    { "stderr()", "always \"\" (a PTY has one stream)" },
    { "keepalives()", "keepalive events received so far" },
    { "done()", "whether the stream has ended" },
    { "disconnect()", "stops receiving output; the shell keeps running" },
  })

local inherited = false

--- Makes PtyHandle inherit the CommandHandle methods (abx.client.commands calls it once it has defined
--- them: the two modules require each other). Raises: nothing.
---@param handle table abx.client.commands.Handle
function pty.inherit(handle)
  if not inherited then
    setmetatable(PtyHandle, { __index = handle })
    inherited = true
  end
end

--- The pty object of a sandbox (internal: abx.client.commands.new builds it).
---@param sbx abx.Sandbox
---@param cmds abx.Commands the sandbox's commands object (kill, wait and the reader are shared)
---@return abx.Pty
function pty.new(sbx, cmds)
  pty.inherit(require("abx.client.commands").Handle) -- normally done already by abx.client.commands
  return setmetatable({ _sbx = sbx, _commands = cmds }, Pty)
end

local function client(self)
  return self._sbx._envd
end

local function check_size(cols, rows)
  for name, v in pairs({ cols = cols, rows = rows }) do
    if math.type(v) ~= "integer" or v < 1 or v > 65535 then
      errmap.raise("InvalidArgument", 0, name .. " must be an integer from 1 to 65535, got "
        .. tostring(v))
    end
  end
end

--- Starts an interactive login shell on a new PTY of `cols` x `rows` (default 80 x 24):
--- process.Process/Start with `pty.size` (reference §4.2, §4.4). Returns once envd reported the
--- pid; a task reads the output, which goes to `on_data` (each chunk, as it arrives) and is kept
--- for handle:output().
--- Raises: InvalidArgument (bad size, checked here; a cwd that does not exist), Authentication
--- (unknown user, bad token), SandboxGone, Sandbox, Protocol, Transport, Timeout.
---@param opts? {cols?: integer, rows?: integer, user?: string, cwd?: string,
---  envs?: table<string,string>, on_data?: fun(bytes: string), timeout?: number, keepalive?: integer}
---@return abx.PtyHandle
function Pty:create(opts)
  opts = options.check(CREATE, opts)
  local cols, rows = opts.cols or 80, opts.rows or 24
  check_size(cols, rows)
  local envs = { TERM = "xterm-256color", LANG = "C.UTF-8", LC_ALL = "C.UTF-8" }
  for k, v in pairs(opts.envs or {}) do envs[k] = v end
  local msg = {
    process = { cmd = "/bin/bash", args = { "-i", "-l" }, envs = envs, cwd = opts.cwd },
    pty = { size = { cols = cols, rows = rows } },
  }
  local h = require("abx.client.commands")._start_background(self._commands, msg, {
    user = opts.user or "user", timeout = opts.timeout or 60, keepalive = opts.keepalive,
  }, { on_data = opts.on_data }, PtyHandle, "pty:create")
  h._pty = self
  return h
end

--- Writes bytes to a PTY: process.Process/SendInput with `input.pty` (reference §4.2, §4.4). The
--- terminal echoes them; "\r" or "\n" ends a line, "\3" is ^C, "\4" is ^D (EOF).
--- Raises: Sandbox (`internal`: the process is not on a PTY, §4.4), NotFound (no such process),
--- Authentication, SandboxGone, Transport, Timeout.
---@param pid integer
---@param data string
function Pty:send_input(pid, data)
  client(self):unary("process.Process/SendInput",
    { process = { pid = pid }, input = { pty = core.b64encode(data) } })
end

--- Resizes a PTY: process.Process/Update with `pty.size` (reference §4.2, §4.4); the programs on
--- it get SIGWINCH.
--- Raises: InvalidArgument (bad size, checked here), Sandbox (`internal` "error resizing tty": the
--- process has no tty), NotFound, Authentication, SandboxGone, Transport, Timeout.
---@param pid integer
---@param cols integer
---@param rows integer
function Pty:resize(pid, cols, rows)
  check_size(cols, rows)
  client(self):unary("process.Process/Update",
    { process = { pid = pid }, pty = { size = { cols = cols, rows = rows } } })
end

--- Kills a PTY's process with SIGKILL (reference §4.4 "SDK call patterns"). false when it had
--- already gone. Raises: as Commands:signal.
---@param pid integer
---@return boolean
function Pty:kill(pid)
  return self._commands:kill(pid)
end

--- Writes bytes to this terminal. Raises: as Pty:send_input.
---@param data string
function PtyHandle:send_input(data)
  self._pty:send_input(self.pid, data)
end

--- Resizes this terminal. Raises: as Pty:resize.
---@param cols integer
---@param rows integer
function PtyHandle:resize(cols, rows)
  self._pty:resize(self.pid, cols, rows)
end

--- Every byte the terminal produced so far (what on_data received, concatenated).
--- Raises: nothing.
---@return string
function PtyHandle:output()
  return self:stdout() -- the bytes are kept as stdout's (abx.client.commands: a core.sink)
end

--- Stdin is not how a PTY takes input. Raises: InvalidArgument always (use send_input).
function PtyHandle:send_stdin()
  errmap.raise("InvalidArgument", 0, "a PTY takes input through send_input, not send_stdin")
end

--- A PTY has no stdin to close; EOF is the byte "\4". Raises: InvalidArgument always.
function PtyHandle:close_stdin()
  errmap.raise("InvalidArgument", 0, "a PTY has no stdin to close: send_input(\"\\4\") sends EOF")
end

-- Inherited from abx.CommandHandle (abx.client.commands): wait() -> {stdout (= output), stderr (""),
-- exit_code, error}; kill() -> boolean; disconnect(); done(); keepalives().

return pty
