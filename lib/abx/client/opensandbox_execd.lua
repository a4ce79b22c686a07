-- abx.client.opensandbox_execd: reaching execd (port 44772) of an OpenSandbox sandbox, and
-- `sbx.commands` through it, with the E2B client's shapes (CommandResult, CommandHandle) so
-- scenarios do not change. Built by abx.client.opensandbox_object.
--
-- Reaching execd: GET /sandboxes/{id}/endpoints/44772 on the lifecycle API gives its base URL and
-- headers (X-EXECD-ACCESS-TOKEN with secureAccess); asked once per handle and kept in
-- sbx._execd. sbx:with{access_token = false | "x"} sends none or that token instead.
--
-- Commands (execd-api.yaml RunCommandRequest, ServerStreamEvent):
--   run(cmd)           POST /command {command, cwd, envs, timeout (ms), uid/gid, background} read
--                      as SSE (abx.client.opensandbox_wire) -> {stdout, stderr, exit_code, error}; a
--                      non-zero exit is not raised (as the E2B client); execd sends a line per
--                      event without its terminator, each gets "\n" back (opensandbox_wire
--                      line_text: a last line without one gains it); `timeout` (default 60 s,
--                      0 none) that killed it raises Timeout; a command that did not start raises
--                      InvalidArgument with execd's reason. user: nil (execd's own user, root in
--                      OpenSandbox's images, not E2B's "user"), "root" (uid 0), or a name looked up
--                      with `id` through execd (it takes numeric uid/gid).
--   run{background}    the init event's command id is the handle's `pid` (a string, not a
--                      process id); on_stdout gets the log as it grows (polled); wait() polls
--                      GET /command/status/{id} until not running, then GET /command/{id}/logs;
--                      execd keeps one combined log of a background command, so its stderr is in
--                      stdout and stderr() is "" (documented, not dropped).
--   kill(id)           DELETE /command?id= (true; false on 404): execd's interrupt, SIGTERM to the
--                      command's process group, SIGKILL when it outlives that
--                      (components/execd/pkg/runtime/interrupt.go @ 3bb6fad3).
--   signal(id, sig)    "SIGTERM" is that interrupt; "SIGKILL" has no equivalent (execd sends it only
--                      to a group that survived SIGTERM) and raises Skipped.
-- Files: abx.client.opensandbox_files (execd's files and directories API).
-- Metrics: M.metrics, sbx:get_metrics through GET /metrics (one sample, no disk figures).
-- Everything else (stdin, connect, list, SIGKILL)
-- raises Skipped "provider <name> (opensandbox) has no equivalent of <primitive>: missing
-- capability".
-- Errors: execd's ErrorResponse {code, message} through abx.client.opensandbox_wire.raise_error
-- (401 Authentication, 404 NotFound, 400 InvalidArgument, ...); a body of another shape is
-- Protocol.

local core = require("abx.core")
local cjson = require("cjson")
local errmap = require("abx.client.errmap")
local envd = require("abx.client.envd")
local api_call = require("abx.client.api_call")
local options = require("abx.client.options")
local wire = require("abx.client.opensandbox_wire")

local M = {}

local TOKEN_HEADER = "X-EXECD-ACCESS-TOKEN"
local POLL_S = 0.2 -- background status polling

local function skip(sbx, primitive)
  wire.skip(sbx.conn.provider_name, primitive)
end

--- execd's base URL and headers for this handle (see the file header). Raises: as
--- Connection:endpoint.
---@param sbx table
---@return string url, table<string,string> headers (a fresh copy)
function M.base(sbx)
  if not sbx._execd then
    local url, h = sbx:_endpoint(wire.EXECD_PORT)
    for k, v in pairs(h) do
      if k:lower() == TOKEN_HEADER:lower() then core.add_secret(v) end
    end
    sbx._execd = { url = url, headers = h }
  end
  local h = {}
  for k, v in pairs(sbx._execd.headers) do h[k] = v end
  local tok = sbx._token_override
  if tok ~= nil then
    for k in pairs(h) do if k:lower() == TOKEN_HEADER:lower() then h[k] = nil end end
    if type(tok) == "string" then h[TOKEN_HEADER] = tok end
  end
  return sbx._execd.url, h
end

--- One request to execd. `query` pairs are encoded. Returns the answer whatever its status and
--- "METHOD path". A GET answered by a gateway's bare 502/503/504 is sent again
--- (abx.client.api_call.gateway_retry) unless `o.once` (a poll that reads such an answer itself).
--- Raises: Transport, Timeout, Protocol.
local function call(sbx, method, path, query, o)
  o = o or {}
  local base, h = M.base(sbx)
  for k, v in pairs(o.headers or {}) do h[k] = v end
  local q = query and envd.query(query) or ""
  local request = method .. " " .. path
  local resp = api_call.gateway_retry(request, method == "GET" and not o.once, function()
    return core.request({ method = method, url = base .. path .. (q ~= "" and ("?" .. q) or ""),
      headers = h, body = o.body, timeout = o.timeout or sbx.conn.request_timeout,
      max_body = o.max_body })
  end)
  return resp, request
end
M._call = call

--- Whether execd answers GET /ping with 200. A 502/503/404 (the ingress has no sandbox or port)
--- is false. Raises: Authentication (401/403), Sandbox (another status), Transport, Timeout.
---@param sbx table
---@return boolean
function M.ping(sbx)
  local resp, request = call(sbx, "GET", "/ping", nil, { timeout = 5, once = true })
  if resp.status == 200 then return true end
  if resp.status == 502 or resp.status == 503 or resp.status == 404 then return false end
  wire.raise_error(resp, request)
end

--- Waits until execd answers /ping (the official SDKs' check_ready after Running), at most
--- `deadline` s, retrying every `interval` s through transport failures and not-yet-routed
--- answers. Raises: Timeout, Authentication.
---@param sbx table
---@param deadline number
---@param interval number
function M.wait_ready(sbx, deadline, interval)
  local stop = core.now() + deadline
  local last
  while true do
    local ok, r = pcall(M.ping, sbx)
    if ok and r then return end
    if not ok then
      if core.is_error(r) and r.kind ~= "Transport" and r.kind ~= "Timeout" then error(r, 0) end
      last = tostring(r)
    else
      last = "GET /ping not answered by execd yet"
    end
    if core.now() + interval > stop then
      errmap.raise("Timeout", 0, string.format("conn:create: sandbox %s is Running but execd did not "
        .. "answer GET /ping within %g s (create.deadline): %s", sbx.id, deadline, last),
        { request = "GET /ping" })
    end
    core.sleep(interval)
  end
end

-- Commands ---------------------------------------------------------------------------------------

local RESULT = options.shape("OpenSandboxCommandResult", "What an OpenSandbox sandbox's "
  .. "commands:run (foreground) and CommandHandle:wait return (the fields of CommandResult).", {
    { "stdout", "string", "everything the command wrote to stdout" },
    { "stderr", "string", "everything it wrote to stderr (background: in stdout, see the module)" },
    { "exit_code", "integer", "exit code; -1 when killed by a signal" },
    { "error", "string?", "execd's error text (e.g. \"exit status 2\"), nil when none" },
  })

---@class abx.OpenSandboxCommands
local Commands = {}
options.class(Commands, "OpenSandboxCommands", "sbx.commands of an OpenSandbox sandbox: execd's "
  .. "command API.", {}, {
    { "run(cmd, opts)", "runs a command (options: commands:run)" },
    { "kill(id)", "interrupts a command: true, false when there is none" },
    { "connect(pid, opts)", "Skipped: no equivalent" },
    { "list()", "Skipped: no equivalent" },
    { "signal(pid, signal)", "SIGTERM: execd's interrupt (as kill); SIGKILL: Skipped, no equivalent" },
    { "send_stdin(pid, data)", "Skipped: no equivalent" },
    { "close_stdin(pid)", "Skipped: no equivalent" },
  })

---@class abx.OpenSandboxCommandHandle
local Handle = {}
options.class(Handle, "OpenSandboxCommandHandle", "A background command of an OpenSandbox sandbox.", {
    { "pid", "string", "execd's command id" },
  }, {
    { "wait()", "polls until the command ends: CommandResult" },
    { "kill()", "interrupts it; false when it had already gone" },
    { "stdout()", "the combined log so far" },
    { "stderr()", "\"\" (execd keeps one combined log)" },
    { "done()", "whether it has ended" },
    { "disconnect()", "stops following it; the command keeps running" },
    { "send_stdin(data)", "InvalidArgument: started without stdin (execd has none)" },
    { "close_stdin()", "Skipped: no equivalent" },
    { "keepalives()", "Skipped: no equivalent" },
  })

--- The commands object of an OpenSandbox sandbox (internal).
---@param sbx table
---@return abx.OpenSandboxCommands
function M.commands(sbx)
  return setmetatable({ _sbx = sbx }, Commands)
end

local run_foreground -- defined below (ids_of runs `id` through it)

--- The uid/gid of commands:run's `user` (nil: execd's own user). execd takes numeric ids
--- (RunCommandRequest uid/gid), so a name is looked up once per sandbox handle by running
--- `id -u NAME; id -g NAME` through execd itself; root is 0/0 without asking.
--- Raises: InvalidArgument (a name that is not a user there, or not a plain user name).
local function ids_of(sbx, user)
  if user == nil then return nil end
  if user == "root" then return 0, 0 end
  if type(user) ~= "string" or not user:match("^[%a_][%w_.-]*$") then
    errmap.raise("InvalidArgument", 0, "commands:run: user must be a user name, got " .. tostring(user))
  end
  sbx._uids = sbx._uids or {}
  local ids = sbx._uids[user]
  if not ids then
    local r = run_foreground(sbx, "id -u -- " .. user .. " && id -g -- " .. user, { timeout = 30 })
    local uid, gid = r.stdout:match("^(%d+)\n(%d+)\n$")
    if r.exit_code ~= 0 or not uid then
      errmap.raise("InvalidArgument", 0, string.format("commands:run: user %s does not exist in "
        .. "sandbox %s (id: %s)", user, sbx.id, (r.stderr ~= "" and r.stderr or r.stdout):gsub("%s+$", "")))
    end
    ids = { math.tointeger(tonumber(uid)), math.tointeger(tonumber(gid)) }
    sbx._uids[user] = ids
  end
  return ids[1], ids[2]
end

--- The RunCommandRequest of commands:run's options. Raises: Skipped (stdin, keepalive),
--- InvalidArgument (an unknown user).
function M.run_body(sbx, cmd, opts)
  if opts.stdin then skip(sbx, "commands:run stdin") end
  if opts.keepalive ~= nil then skip(sbx, "commands:run keepalive") end
  local uid, gid = ids_of(sbx, opts.user)
  local timeout = opts.timeout or 60
  local body = { command = cmd, cwd = opts.cwd, background = opts.background == true, uid = uid,
    gid = gid }
  if timeout > 0 then body.timeout = math.ceil(timeout * 1000) end
  if opts.envs and next(opts.envs) then body.envs = opts.envs end
  return body, timeout
end

--- Reads the SSE body of POST /command into `st` until `stop_after_init` saw the init event (then
--- returns true), a final event (execution_complete or error: execd keeps the stream open for
--- its ApiGracefulShutdownTimeout after it, 1 s, which a caller need not wait through) or the end
--- of the body. Raises: the mapped kind of a non-200 answer, Protocol, and what a callback raises.
local function read_stream(stream, st, request, opts, stop_after_init)
  local parser = wire.sse_parser(request)
  local function apply_all(events)
    for _, ev in ipairs(events) do
      local chunk, which = wire.command_apply(st, ev, request)
      if chunk and which == "stdout" and opts.on_stdout then opts.on_stdout(chunk) end
      if chunk and which == "stderr" and opts.on_stderr then opts.on_stderr(chunk) end
      if stop_after_init and st.id then return true end
      if st.complete or st.error then return true end
    end
  end
  while true do
    local kind, data = stream:next()
    if kind == nil then
      apply_all(parser:finish())
      return false
    end
    if kind == "http" then wire.raise_error({ status = stream:status(), body = data }, request) end
    if apply_all(parser:feed(data)) then return true end
  end
end

--- Runs `cmd` through execd's POST /command (see the file header). Foreground: yields until it
--- ends and returns {stdout, stderr, exit_code, error}; background: a handle once execd sent the
--- command id. Options are the E2B client's commands:run.
--- Raises: Skipped (stdin, keepalive, user other than root), Timeout (its timeout killed it),
--- InvalidArgument (400; it did not start: e.g. a missing cwd), Authentication, NotFound,
--- SandboxGone, Sandbox, Protocol (a corrupt event, a stream with no end), Transport.
---@param cmd string
---@param opts? table
---@return table
function Commands:run(cmd, opts)
  opts = options.check("commands:run", opts)
  return run_foreground(self._sbx, cmd, opts)
end

-- Commands:run's body (also ids_of's `id` lookups): foreground or background.
run_foreground = function(sbx, cmd, opts)
  if type(cmd) ~= "string" or cmd == "" then
    errmap.raise("InvalidArgument", 0, "commands:run: cmd must be a non-empty string")
  end
  local body, timeout = M.run_body(sbx, cmd, opts)
  local base, h = M.base(sbx)
  h["Content-Type"] = "application/json"
  h["Accept"] = "text/event-stream"
  local request = "POST /command"
  local started = core.now()
  local stream <close> = core.body_stream({ method = "POST", url = base .. "/command", headers = h,
    body = cjson.encode(body), timeout = timeout > 0 and (timeout + sbx.conn.request_timeout) or 0 })
  local st = wire.command_state()
  if opts.background then
    read_stream(stream, st, request, opts, true)
    if not st.id then
      if st.error then
        errmap.raise("InvalidArgument", 0, "commands:run: the command did not start: "
          .. tostring(st.error.traceback[1] or st.error.evalue), { request = request })
      end
      errmap.raise_protocol(200, request, "an init event with the command id")
    end
    local handle = setmetatable({ pid = st.id, _sbx = sbx, _done = false }, Handle)
    if opts.on_stdout then M.follow(handle, opts.on_stdout) end
    if opts.on_stderr then
      -- one combined log: stderr arrives through on_stdout's log (see the file header)
      skip(sbx, "commands:run on_stderr with background (execd keeps one combined log)")
    end
    return handle
  end
  read_stream(stream, st, request, opts, false)
  local fields, start_err = wire.command_result(st, request)
  if not fields then
    errmap.raise("InvalidArgument", 0, "commands:run: the command did not start: " .. start_err,
      { request = request })
  end
  if timeout > 0 and fields.exit_code == -1 and core.now() - started >= timeout then
    errmap.raise("Timeout", 0, string.format("commands:run: the command outlived its timeout of "
      .. "%g s (execd killed it: %s)", timeout, tostring(fields.error)), { request = request })
  end
  return options.strict(RESULT, fields)
end

--- Interrupts a command: GET /command/status/{id} (404: false), then DELETE /command?id= (true).
--- Raises: Authentication, Sandbox, Transport.
---@param id string
---@return boolean
function Commands:kill(id)
  -- asked first: execd answers DELETE for an id it does not know with 500 ("no such session"),
  -- while GET /command/status/{id} says 404
  local sresp, sreq = call(self._sbx, "GET", "/command/status/" .. envd.quote(tostring(id)))
  if sresp.status == 404 then return false end
  if sresp.status ~= 200 then wire.raise_error(sresp, sreq) end
  local resp, request = call(self._sbx, "DELETE", "/command", { { "id", tostring(id) } })
  if resp.status == 200 or resp.status == 204 then return true end
  if resp.status == 404 then return false end
  wire.raise_error(resp, request)
end

--- Sends a signal to a command: "SIGTERM" is execd's interrupt (Commands:kill: true, false when
--- there is no such command); "SIGKILL" cannot be sent alone (see the file header).
--- Raises: InvalidArgument (another signal name), Skipped (SIGKILL), as Commands:kill.
---@param id string execd's command id
---@param signal "SIGTERM"|"SIGKILL"
---@return boolean
function Commands:signal(id, signal)
  if signal ~= "SIGTERM" and signal ~= "SIGKILL" then
    errmap.raise("InvalidArgument", 0, "signal must be \"SIGTERM\" or \"SIGKILL\", got " .. tostring(signal))
  end
  if signal == "SIGKILL" then
    skip(self._sbx, "commands:signal SIGKILL (execd's interrupt sends SIGTERM first)")
  end
  return self:kill(id)
end

for _, name in ipairs({ "connect", "list", "send_stdin", "close_stdin" }) do
  Commands[name] = function(self) skip(self._sbx, "commands:" .. name) end
end

--- GET /command/status/{id}: {running, exit_code, error}. Raises: NotFound (404), Protocol.
local function status_of(h)
  local resp, request = call(h._sbx, "GET", "/command/status/" .. envd.quote(h.pid))
  if resp.status ~= 200 then wire.raise_error(resp, request) end
  local s = errmap.decode_ok(resp, request)
  if type(s.running) ~= "boolean" then
    errmap.raise_protocol(resp.status, request, "a CommandStatusResponse with running")
  end
  return s, request
end

--- Polls until the command ends; returns {stdout (the combined log), stderr "", exit_code,
--- error}. Raises: Sandbox (disconnected first), NotFound, Protocol (no integer exit_code).
---@return table
function Handle:wait()
  local s, request
  while true do
    if self._disconnected then
      errmap.raise("Sandbox", 0, "command handle disconnected before the command ended",
        { request = "GET /command/status/{id}" })
    end
    s, request = status_of(self)
    if not s.running then break end
    core.sleep(POLL_S)
  end
  self._done = true
  if self._follower then -- every chunk delivered before wait returns
    while not self._followed do
      self._waiters = self._waiters or {}
      self._waiters[#self._waiters + 1] = core.current()
      core.park()
    end
    if self._follow_error then error(self._follow_error, 0) end
  end
  local code = math.tointeger(s.exit_code)
  if not code then errmap.raise_protocol(200, request, "an integer exit_code once not running") end
  local err = type(s.error) == "string" and s.error ~= "" and s.error or nil
  return options.strict(RESULT, { stdout = self:stdout(), stderr = "", exit_code = code, error = err })
end

--- Interrupts the command (Commands:kill). Raises: as Commands:kill.
---@return boolean
function Handle:kill()
  return M.commands(self._sbx):kill(self.pid)
end

--- The combined log so far: GET /command/{id}/logs (text/plain). Raises: NotFound, Sandbox.
---@return string
function Handle:stdout()
  local resp, request = call(self._sbx, "GET", "/command/" .. envd.quote(self.pid) .. "/logs")
  if resp.status ~= 200 then wire.raise_error(resp, request) end
  return resp.body or ""
end

--- "" : execd keeps one combined log of a background command (in stdout()). Raises: nothing.
---@return string
function Handle:stderr() return "" end

--- Whether the command has ended (GET /command/status/{id}). Raises: as wait.
---@return boolean
function Handle:done()
  if self._done then return true end
  self._done = not status_of(self).running
  return self._done
end

--- Stops following the command; it keeps running. Raises: nothing.
function Handle:disconnect() self._disconnected = true end

--- Feeds a background command's output to `on_stdout` as it grows: a task polls its status and
--- its log (GET /command/{id}/logs, the whole log: it only grows; the part not delivered yet is
--- handed over) every POLL_S s until it ends or the handle is disconnected, then hands over the
--- rest. An error is kept and raised by wait(). Raises: nothing.
---@param h table handle
---@param on_stdout fun(chunk: string)
function M.follow(h, on_stdout)
  h._delivered = 0
  h._follower = core.spawn(function()
    local ok, err = pcall(function()
      while not h._disconnected do
        local running = status_of(h).running
        local log = h:stdout()
        if #log > h._delivered then
          local chunk = log:sub(h._delivered + 1)
          h._delivered = #log
          on_stdout(chunk)
        end
        if not running then return end
        core.sleep(POLL_S)
      end
    end)
    if not ok then h._follow_error = err end
    h._followed = true
    local waiters = h._waiters or {}
    h._waiters = {}
    for _, task in ipairs(waiters) do core.unpark(task) end
  end)
end

-- Metrics ----------------------------------------------------------------------------------------

local METRIC = options.shape("OpenSandboxMetric", "One sample of an OpenSandbox sandbox's "
  .. "sbx:get_metrics (execd's Metrics in SandboxMetric's units).", {
    { "timestamp_unix", "integer", "Unix seconds (execd's timestamp is ms)" },
    { "cpu_count", "integer", "CPUs" }, { "cpu_used_pct", "number", "percent" },
    { "mem_used", "integer", "bytes (execd's mem_used_mib x 2^20)" },
    { "mem_total", "integer", "bytes (execd's mem_total_mib x 2^20)" },
    { "mem_cache", "integer?", "never set: execd reports no cache figure" },
    { "disk_used", "integer?", "never set: execd reports no disk figures" },
    { "disk_total", "integer?", "never set: execd reports no disk figures" },
  })

--- sbx:get_metrics of an OpenSandbox sandbox: execd's GET /metrics (execd-api.yaml Metrics
--- {cpu_count, cpu_used_pct, mem_total_mib, mem_used_mib, timestamp ms}) as one SandboxMetric.
--- execd has no history, so `start`/`end` do not select: the answer is the sample of now. No disk
--- figures (the metrics_disk capability). An answer that is not execd's (the ingress's 404/502/503
--- once the sandbox is gone) is checked against the lifecycle API: SandboxNotFound when it is.
--- Raises: SandboxNotFound, Authentication, Sandbox, Protocol, Transport, Timeout.
---@param sbx table
---@return table[] one OpenSandboxMetric
function M.metrics(sbx)
  local resp, request = call(sbx, "GET", "/metrics")
  if resp.status ~= 200 then
    if resp.status == 404 or resp.status == 502 or resp.status == 503 then
      sbx.conn:_get(sbx.id) -- raises SandboxNotFound when the sandbox is gone
    end
    wire.raise_error(resp, request)
  end
  local m = errmap.decode_ok(resp, request)
  for _, k in ipairs({ "cpu_count", "cpu_used_pct", "mem_total_mib", "mem_used_mib", "timestamp" }) do
    if type(m[k]) ~= "number" then
      errmap.raise_protocol(resp.status, request, "Metrics with a number " .. k)
    end
  end
  local function int(x) return math.tointeger(math.floor(x + 0.5)) end
  return { options.strict(METRIC, {
    timestamp_unix = math.tointeger(m.timestamp // 1000), cpu_count = int(m.cpu_count),
    cpu_used_pct = m.cpu_used_pct, mem_used = int(m.mem_used_mib * 1048576),
    mem_total = int(m.mem_total_mib * 1048576),
  }) }
end

--- Refused as the E2B client refuses it for a process started without stdin = true: no execd
--- command has stdin (commands:run{stdin = true} is Skipped), so none was.
--- Raises: InvalidArgument.
function Handle:send_stdin()
  errmap.raise("InvalidArgument", 0, "command " .. tostring(self.pid) .. " was started without "
    .. "stdin = true (execd gives commands no stdin)")
end

for _, name in ipairs({ "close_stdin", "keepalives" }) do
  Handle[name] = function(self) skip(self._sbx, "CommandHandle:" .. name) end
end

return M
