-- abx.client.commands: `sbx.commands`, processes through envd's process.Process service.
--
--   local r = sbx.commands:run("echo hi")                  -- {stdout, stderr, exit_code, error}
--   local h = sbx.commands:run("cat", { background = true, stdin = true })
--   h:send_stdin("x\n"); h:close_stdin(); local r2 = h:wait()
--
-- Idiom: run() does NOT raise on a non-zero exit code; it returns exit_code and envd's error text.
-- A process killed by a signal has exit_code -1 (as envd reports it) and `error` like
-- "signal: killed" (docs/protocol/envd-protocol.md §4.3). It raises only when the call itself failed:
-- Timeout when its `timeout` elapsed (envd kills the process and ends the stream with
-- deadline_exceeded, §4.4), and the mapped kind of any other Connect or HTTP error.
-- Units: seconds; `timeout` 0 means none.
-- Fail closed: options are checked against the specs below (abx.client.options); results and handles
-- answer an unknown field with InvalidArgument; an output chunk that is not base64 or an event of
-- the wrong shape ends the call with Protocol naming it (abx.client.decode): nothing is dropped.
-- Source: docs/protocol/envd-protocol.md §2 (Connect), §3 (ProtoJSON shapes), §4 (process.Process).

local core = require("abx.core")
local errmap = require("abx.client.errmap")
local envd = require("abx.client.envd")
local options = require("abx.client.options")
local decode = require("abx.client.decode")
local pty = require("abx.client.pty")

local commands = {}

local RUN = options.define("commands:run", "Runs `/bin/bash -l -c <cmd>`; foreground: a "
  .. "CommandResult, background: a CommandHandle.", {
    { "background", "boolean", "return a CommandHandle once envd reported the pid" },
    { "cwd", "string", "working directory (default the user's home)" },
    { "envs", "table<string,string>", "environment variables added for the process" },
    { "user", "string", "user to run as (default \"user\")" },
    { "timeout", "number", "seconds the process may live, envd kills it then (default 60, 0 none)" },
    { "on_stdout", "function", "on_stdout(chunk) for each stdout chunk as it arrives" },
    { "on_stderr", "function", "on_stderr(chunk) for each stderr chunk as it arrives" },
    { "stdin", "boolean", "keep stdin open for send_stdin (default false: /dev/null)" },
    { "keepalive", "integer", "Keepalive-Ping-Interval asked for, whole seconds (default 50)" },
    { "keep_output", "boolean", "false: output goes only to the callbacks, the result's stdout "
      .. "and stderr are nil, memory stays flat whatever the size (default true)" },
  })
local CONNECT = options.define("commands:connect", "Attaches to a running process by pid; a "
  .. "CommandHandle receiving the output produced from now on.", {
    { "timeout", "number", "seconds this stream may last (default 60, 0 none)" },
    { "on_stdout", "function", "on_stdout(chunk) for each stdout chunk" },
    { "on_stderr", "function", "on_stderr(chunk) for each stderr chunk" },
    { "keep_output", "boolean", "false: output goes only to the callbacks (default true)" },
  })

local RESULT = options.shape("CommandResult", "What commands:run (foreground) and "
  .. "CommandHandle:wait return; a non-zero exit is not an error.", {
    { "stdout", "string?", "everything the process wrote to stdout; nil with keep_output = false" },
    { "stderr", "string?", "everything the process wrote to stderr; nil with keep_output = false" },
    { "exit_code", "integer", "exit code; -1 when killed by a signal" },
    { "error", "string?", "envd's error text (e.g. \"signal: killed\"), nil when none" },
  })
local PROCESS = options.shape("ProcessInfo", "One entry of commands:list.", {
    { "pid", "integer", "process id" },
    { "tag", "string?", "the tag it was started with" },
    { "cmd", "string", "the command" },
    { "args", "string[]", "its arguments" },
    { "envs", "table<string,string>", "its environment as started" },
    { "cwd", "string?", "its working directory" },
  })

---@class abx.Commands
---@field _sbx abx.Sandbox
local Commands = {}
options.class(Commands, "Commands", "sbx.commands: processes through envd's process service.", {}, {
  { "run(cmd, opts)", "runs a command (options: commands:run)" },
  { "connect(pid, opts)", "attaches to a running process (options: commands:connect)" },
  { "list()", "live processes: ProcessInfo[]" },
  { "kill(pid)", "SIGKILL; true, or false when there is no such process" },
  { "signal(pid, signal)", "sends \"SIGTERM\" or \"SIGKILL\"; false when there is no such process" },
  { "send_stdin(pid, data)", "writes bytes to a process' stdin" },
  { "close_stdin(pid)", "closes a process' stdin (EOF)" },
})

---@class abx.CommandHandle
---@field pid integer
local Handle = {}
options.class(Handle, "CommandHandle", "A background process (commands:run{background = true}, "
  .. "commands:connect).", {
    { "pid", "integer", "process id" },
  }, {
    { "wait()", "yields until the process ends: CommandResult" },
    { "kill()", "SIGKILL; false when it had already gone" },
    { "send_stdin(data)", "writes to its stdin (started with stdin = true)" },
    { "close_stdin()", "closes its stdin" },
    { "stdout()", "stdout received so far (raises with keep_output = false)" },
    { "stderr()", "stderr received so far (raises with keep_output = false)" },
    { "keepalives()", "keepalive events received so far" },
    { "held_peak()", "bytes: the most the engine held at once for this output (stream queue, "
      .. "partial message, kept output); callbacks' chunks not counted" },
    { "done()", "whether the stream has ended" },
    { "disconnect()", "stops receiving output; the process keeps running" },
  })

--- The commands object of a sandbox (internal: abx.client.sandbox builds it). It also sets `sbx.pty`
--- (abx.client.pty), which needs the same process service, so that sandbox.lua need not know about it.
---@param sbx abx.Sandbox
---@return abx.Commands
function commands.new(sbx)
  local cmds = setmetatable({ _sbx = sbx }, Commands)
  if rawget(sbx, "pty") == nil then sbx.pty = pty.new(sbx, cmds) end
  return cmds
end

local function client(self)
  return self._sbx._envd
end

--- Applies the bytes of one output event (data.stdout, data.stderr or data.pty, reference §4.3):
--- kept unless keep_output = false, then given to the callback.
---@param h table handle
---@param field "stdout"|"stderr"|"pty"
---@param chunk string
local function apply_data(h, field, chunk)
  if field == "stderr" then
    if h._err then h._err:add(chunk) end
    if h._on_stderr then h._on_stderr(chunk) end
  else
    if h._out then h._out:add(chunk) end
    local cb
    if field == "stdout" then cb = h._on_stdout else cb = h._on_pty end
    if cb then cb(chunk) end
  end
end

--- Applies one ProcessEvent (reference §3 "Oneof shapes", §4.3) to a handle's state: exactly one
--- of data {stdout|stderr|pty: base64}, end, keepalive or a repeated start.
--- Raises: Protocol naming h._call for an event of another shape or a chunk that is not base64.
---@param h table handle
---@param ev any the `event` object
---@param n integer the message's number in the stream (start{pid} is 1)
---@param request string
local function apply_event(h, ev, n, request)
  local where = "message " .. n
  if type(ev) ~= "table" then
    decode.fail(h._call, where .. " has no event object", request)
  end
  local data = ev.data
  if data ~= nil then
    if type(data) ~= "table" then
      decode.fail(h._call, where .. ": event data must be an object {stdout|stderr|pty}", request)
    end
    if data.stdout ~= nil then
      apply_data(h, "stdout", decode.b64(data.stdout, h._call, "stdout of " .. where, request))
    elseif data.stderr ~= nil then
      apply_data(h, "stderr", decode.b64(data.stderr, h._call, "stderr of " .. where, request))
    elseif data.pty ~= nil then
      apply_data(h, "pty", decode.b64(data.pty, h._call, "pty output of " .. where, request))
    else
      decode.fail(h._call, where .. ": event data has none of stdout, stderr, pty", request)
    end
  elseif ev["end"] ~= nil then
    local e = ev["end"]
    if type(e) ~= "table" then decode.fail(h._call, where .. ": event end must be an object", request) end
    local code = e.exitCode or 0 -- 0 is left out of JSON (§3)
    if type(code) ~= "number" or math.tointeger(code) == nil then
      decode.fail(h._call, where .. ": end.exitCode must be an integer", request)
    end
    h._end = {
      exit_code = math.tointeger(code),
      error = e.error ~= nil and decode.text(e.error, h._call, "end.error of " .. where, request) or nil,
      status = type(e.status) == "string" and e.status or nil,
    }
  elseif ev.keepalive ~= nil then
    h._keepalives = h._keepalives + 1 -- counted only, for tests of the interval (§9)
  elseif ev.start == nil then
    decode.fail(h._call, where .. ": an event with none of start, data, end, keepalive", request)
  end -- a repeated start carries nothing for us
end

--- Reads the first message, which must be `start{pid}` (reference §4.3). Returns the pid.
--- Raises: Protocol, and whatever envd.next_message raises.
local function read_start(st, request)
  local msg = envd.next_message(st, request)
  local ev = msg and msg.event
  local pid = type(ev) == "table" and type(ev.start) == "table" and math.tointeger(ev.start.pid)
  if not pid then errmap.raise_protocol(200, request, "a first event start{pid}") end
  return pid
end

--- Reads events until the end of the stream, filling the handle. Output events in envd's compact
--- form arrive decoded by C (envd.next_event); every other message goes through apply_event.
--- Raises: the end envelope's error kind (Timeout for deadline_exceeded), Protocol when the stream
--- ends without an end event or carries a malformed one, Transport.
local function consume(h, st, request)
  local n = 1 -- start{pid} was message 1
  local next_event = envd.next_event
  -- output nobody has a callback for is decoded by C straight into its sink (b is then nil)
  local out = not h._on_stdout and not h._on_pty and h._out or nil
  local err = not h._on_stderr and h._err or nil
  while true do
    local what, a, b = next_event(st, request, out, err)
    if what == nil then break end
    n = n + 1
    if what ~= "data" then apply_event(h, a.event, n, request)
    elseif b ~= nil then apply_data(h, a, b) end
  end
  if not h._end then errmap.raise_protocol(200, request, "an end event before the end of stream") end
end

--- The CommandResult of an ended handle. The first call moves the output out of the sinks into
--- Lua strings (core.sink take: the sink's memory is freed at once) and keeps them on the handle,
--- so a second wait() or stdout() gives the same strings without holding the output twice.
local function result_of(h)
  if h._out and not h._stdout_s then
    h._stdout_s, h._stderr_s = h._out:take(), h._err:take()
  end
  return options.strict(RESULT, {
    stdout = h._stdout_s,
    stderr = h._stderr_s,
    exit_code = h._end.exit_code,
    error = h._end.error,
  })
end

local function new_handle(cmds, pid, opts, stdin, mt, call)
  local keep = opts.keep_output ~= false
  return setmetatable({
    pid = pid, _commands = cmds, _stdin = stdin, _waiters = {},
    _out = keep and core.sink() or false, _err = keep and core.sink() or false,
    _on_stdout = opts.on_stdout, _on_stderr = opts.on_stderr, _on_pty = opts.on_data,
    _done = false, _keepalives = 0, _call = call or "commands:run",
  }, mt or Handle)
end

--- Starts the reader task of a background handle: it appends output, calls the callbacks, and
--- wakes every waiter when the stream ends. Nothing escapes the task (an escaped error would end
--- the run); the error is kept and wait() raises it.
local function start_reader(h, st, request)
  h._stream = st
  h._task = core.spawn(function()
    local ok, err = pcall(consume, h, st, request)
    st:close()
    if not ok then h._error = err end
    h._done = true
    local waiters = h._waiters
    h._waiters = {}
    for _, task in ipairs(waiters) do core.unpark(task) end
  end)
end

--- Runs `/bin/bash -l -c <cmd>` (reference §4.4 "SDK call patterns") as `user`.
--- Foreground: yields until the process ends and returns {stdout, stderr, exit_code, error}; a
--- non-zero exit is NOT an error (see the file header). Background: returns a CommandHandle once
--- envd reported the pid; output is read by a task, `handle:wait()` gives the result.
--- Callbacks get each chunk as it arrives (on the reader task when in background). With
--- `keep_output = false` the output goes only to them: the result's stdout and stderr are nil and
--- the engine's memory stays flat however much the command writes (handle:stdout() raises).
--- `keepalive` (whole seconds, default 50 as the SDKs) is the Keepalive-Ping-Interval asked for
--- (reference §4.4, §9); keepalive events are ignored, only counted (handle:keepalives()).
--- `timeout` (default 60 s, 0 = none) bounds the process' lifetime in background too: envd kills it
--- when it elapses (reference §4.4), as the SDKs' default timeoutMs does.
--- Raises: Timeout (the process outlived `timeout`, envd killed it), InvalidArgument (e.g. a cwd
--- that does not exist), Authentication (bad access token or user), NotFound, SandboxGone,
--- RateLimit, Sandbox, Protocol, Transport.
---@param cmd string
---@param opts? {cwd?: string, envs?: table<string,string>, user?: string, timeout?: number,
---  on_stdout?: fun(chunk: string), on_stderr?: fun(chunk: string), background?: boolean,
---  stdin?: boolean, keepalive?: integer, keep_output?: boolean}
---@return abx.CommandResult|abx.CommandHandle
function Commands:run(cmd, opts)
  opts = options.check(RUN, opts)
  local msg = {
    process = { cmd = "/bin/bash", args = { "-l", "-c", cmd }, envs = opts.envs or {}, cwd = opts.cwd },
    stdin = opts.stdin and true or false, -- false gives /dev/null (§4.4)
  }
  local st, request = client(self):stream("process.Process/Start", msg, {
    user = opts.user or "user", timeout = opts.timeout or 60, keepalive = opts.keepalive,
  })
  local ok, pid = pcall(read_start, st, request)
  if not ok then st:close(); error(pid, 0) end
  local h = new_handle(self, pid, opts, opts.stdin and true or false)
  if opts.background then
    start_reader(h, st, request)
    return h
  end
  local ok2, err = pcall(consume, h, st, request)
  st:close()
  if not ok2 then error(err, 0) end
  return result_of(h)
end

--- Internal, for abx.client.pty: starts `msg` on process.Process/Start, reads start{pid} and returns a
--- handle (metatable `mt`, which should fall back to CommandHandle) whose reader task is running.
--- Raises: as Commands:run.
---@param cmds abx.Commands
---@param msg table StartRequest
---@param stream_opts {user?: string, timeout?: number, keepalive?: integer}
---@param handle_opts table callbacks (on_stdout, on_stderr, on_data)
---@param mt table
---@param call string how Protocol errors name the call, e.g. "pty:create"
---@return table handle
function commands._start_background(cmds, msg, stream_opts, handle_opts, mt, call)
  local st, request = client(cmds):stream("process.Process/Start", msg, stream_opts)
  local ok, pid = pcall(read_start, st, request)
  if not ok then st:close(); error(pid, 0) end
  local h = new_handle(cmds, pid, handle_opts, false, mt, call)
  start_reader(h, st, request)
  return h
end

--- CommandHandle methods, for abx.client.pty to inherit from.
commands.Handle = Handle
pty.inherit(Handle)

--- Attaches to a running process by pid: process.Process/Connect (reference §4.4). The handle
--- receives the output produced from now on (envd discards output nobody is subscribed to).
--- `timeout` (default 60 s, 0 = none) bounds only this stream, not the process.
--- Raises: NotFound (no such process), Authentication, SandboxGone, Sandbox, Protocol, Transport.
---@param pid integer
---@param opts? {timeout?: number, on_stdout?: fun(chunk: string), on_stderr?: fun(chunk: string),
---  keep_output?: boolean}
---@return abx.CommandHandle
function Commands:connect(pid, opts)
  opts = options.check(CONNECT, opts)
  local st, request = client(self):stream("process.Process/Connect",
    { process = { pid = pid } }, { timeout = opts.timeout or 60 })
  local ok, got = pcall(read_start, st, request)
  if not ok then st:close(); error(got, 0) end
  local h = new_handle(self, got, opts, nil, nil, "commands:connect")
  start_reader(h, st, request)
  return h
end

--- Live processes: process.Process/List with body `{}` (reference §2.1, §4.4).
--- Raises: Authentication, SandboxGone, Sandbox, Protocol, Transport, Timeout.
---@return {pid: integer, tag: string|nil, cmd: string, args: string[], envs: table, cwd: string|nil}[]
function Commands:list()
  local resp = client(self):unary("process.Process/List", {})
  local out = {}
  for _, p in ipairs(resp.processes or {}) do
    local cfg = type(p.config) == "table" and p.config or {}
    out[#out + 1] = options.strict(PROCESS, {
      pid = math.tointeger(p.pid), tag = p.tag, cmd = cfg.cmd, args = cfg.args or {},
      envs = cfg.envs or {}, cwd = cfg.cwd,
    })
  end
  return out
end

--- Sends SIGTERM or SIGKILL: process.Process/SendSignal (reference §4.2 `enum Signal`).
--- true when sent, false when there is no such process (`not_found`, as the SDK's kill).
--- Raises: InvalidArgument (another signal name, checked here), Authentication, Sandbox, Transport.
---@param pid integer
---@param signal "SIGTERM"|"SIGKILL"
---@return boolean
function Commands:signal(pid, signal)
  if signal ~= "SIGTERM" and signal ~= "SIGKILL" then
    errmap.raise("InvalidArgument", 0, "signal must be \"SIGTERM\" or \"SIGKILL\", got " .. tostring(signal))
  end
  local ok, err = pcall(client(self).unary, client(self), "process.Process/SendSignal",
    { process = { pid = pid }, signal = "SIGNAL_" .. signal })
  if ok then return true end
  if errmap.has_code(err, "not_found") then return false end
  error(err, 0)
end

--- Kills a process with SIGKILL (reference §4.4 "SDK call patterns": kill). false when it did not
--- exist. Raises: as signal.
---@param pid integer
---@return boolean
function Commands:kill(pid)
  return self:signal(pid, "SIGKILL")
end

--- Writes to a process' stdin: process.Process/SendInput (reference §4.2; bytes are base64, §3).
--- Raises: Sandbox (`internal`: stdin disabled or closed, §4.4), NotFound, Authentication, Transport.
---@param pid integer
---@param data string
function Commands:send_stdin(pid, data)
  client(self):unary("process.Process/SendInput",
    { process = { pid = pid }, input = { stdin = core.b64encode(data) } })
end

--- Closes a process' stdin (EOF): process.Process/CloseStdin (envd >= 0.5.2, reference §4.1).
--- Raises: NotFound, Sandbox, Authentication, Transport.
---@param pid integer
function Commands:close_stdin(pid)
  client(self):unary("process.Process/CloseStdin", { process = { pid = pid } })
end

--- Yields until the process ends and returns {stdout, stderr, exit_code, error} (no raise on a
--- non-zero exit). Raises: the error that ended the stream (Timeout when the command's timeout
--- elapsed), an error raised by a callback, Sandbox when the handle was disconnected first.
---@return {stdout: string, stderr: string, exit_code: integer, error: string|nil}
function Handle:wait()
  while not self._done do
    self._waiters[#self._waiters + 1] = core.current()
    core.park()
  end
  if self._disconnected and not self._end then
    errmap.raise("Sandbox", 0, "command handle disconnected before the process ended",
      { request = "POST /process.Process/Start" })
  end
  if self._error then error(self._error, 0) end
  return result_of(self)
end

--- Kills the process (SIGKILL). false when it had already gone. Raises: as Commands:signal.
---@return boolean
function Handle:kill()
  return self._commands:kill(self.pid)
end

--- Writes to the process' stdin. The process must have been started with `stdin = true`.
--- Raises: InvalidArgument (started without stdin, checked locally), and as Commands:send_stdin.
---@param data string
function Handle:send_stdin(data)
  if self._stdin == false then
    errmap.raise("InvalidArgument", 0, "process " .. self.pid .. " was started without stdin = true")
  end
  self._commands:send_stdin(self.pid, data)
end

--- Closes the process' stdin. Raises: as Commands:close_stdin.
function Handle:close_stdin()
  self._commands:close_stdin(self.pid)
end

--- The output of a handle started with keep_output = false is not kept: asking for it is an error.
local function kept(h, what)
  if not h._out then
    errmap.raise("InvalidArgument", 0, "process " .. h.pid .. " was started with keep_output = "
      .. "false: its " .. what .. " went only to the callbacks")
  end
end

--- Output received so far. Raises: InvalidArgument when started with keep_output = false.
---@return string
function Handle:stdout()
  kept(self, "stdout")
  return self._stdout_s or self._out:tostring()
end

--- Error output received so far. Raises: InvalidArgument when started with keep_output = false.
---@return string
function Handle:stderr()
  kept(self, "stderr")
  return self._stderr_s or self._err:tostring()
end

--- How many keepalive events the stream has carried so far (reference §9). Raises: nothing.
---@return integer
function Handle:keepalives()
  return self._keepalives
end

--- The engine's own accounting of what this call kept, in bytes: the most its stream held at once
--- (queued messages, the envelope being assembled and the decode buffer: core stream:held_peak,
--- docs/ENGINE.md "HTTP") plus the output kept for stdout() and stderr() (0 with keep_output =
--- false). Kept output only grows, so the sum is an upper bound of what was held at any moment.
--- The chunks handed to on_stdout/on_stderr belong to the callback and are not counted. Answers
--- while the process runs and after it ended. This, not the process's RSS, is what a test bounds:
--- RSS measures every test sharing the process (issue 22). Raises: nothing.
---@return integer
function Handle:held_peak()
  local function kept_bytes(s, sink)
    if s then return #s end
    return sink and sink:len() or 0
  end
  local stream = self._stream and self._stream:held_peak() or 0
  return stream + kept_bytes(self._stdout_s, self._out) + kept_bytes(self._stderr_s, self._err)
end

--- Whether the stream has ended. Raises: nothing.
---@return boolean
function Handle:done()
  return self._done
end

--- Stops receiving output; the process keeps running (reference §4.4). Idempotent.
--- Raises: nothing.
function Handle:disconnect()
  if self._stream and not self._done then
    self._disconnected = true
    self._stream:close()
  end
end

return commands
