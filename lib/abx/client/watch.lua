-- abx.client.watch: directory watching through envd's filesystem service, behind `sbx.files`:
--   streaming   sbx.files:watch_dir(path, opts)       -> WatchHandle   (filesystem.Filesystem/WatchDir)
--   polling     sbx.files:create_watcher(path, opts)  -> Watcher       (CreateWatcher,
--               watcher:get_events(), watcher:remove()                   GetWatcherEvents, RemoveWatcher)
--
--   local w = sbx.files:watch_dir("/home/user/d", { recursive = true })
--   sbx.files:write("/home/user/d/a.txt", "x")
--   t.eventually(function() assert(#w:events() > 0) end); w:stop()
--
-- Events: { name = path relative to the watched directory ("sub/b.txt"), type = "create" | "write" |
--           "remove" | "rename" | "chmod", entry = EntryInfo as abx.client.files returns it (only with
--           include_entry, for create/write/chmod when envd could stat the path) }. One event per
--           operation bit, in envd's order CREATE, RENAME, CHMOD, WRITE, REMOVE (§5.2); a rename
--           is "rename" of the old name and "create" of the new one.
-- Units: seconds; `timeout` 0 means none. watch_dir defaults to 60 s as the SDKs (§5.2 "SDK use"):
--        envd ends the stream with deadline_exceeded then, and the handle keeps its events.
-- Source: docs/protocol/envd-protocol.md §5.1 (WatchDir, CreateWatcher, GetWatcherEvents,
--         RemoveWatcher, FilesystemEvent, EventType), §5.2 (server semantics), §9 (keepalive).

-- Fail closed: options are checked (abx.client.options); an event whose name is not UTF-8 text, whose
-- type is not an EventType or whose message has none of start, filesystem, keepalive ends the
-- stream (or the call) with Protocol naming the call (abx.client.decode).

local core = require("abx.core")
local errmap = require("abx.client.errmap")
local envd = require("abx.client.envd")
local files = require("abx.client.files")
local options = require("abx.client.options")
local decode = require("abx.client.decode")

local watch = {}

local WATCH_DIR = options.define("files:watch_dir", "Watches a directory as a stream: a "
  .. "WatchHandle once envd sent {start:{}}.", {
    { "recursive", "boolean", "watch subdirectories too" },
    { "include_entry", "boolean", "events carry the EntryInfo of the path" },
    { "allow_network_mounts", "boolean", "allow a network mount (envd refuses it otherwise)" },
    { "user", "string", "user to act as (default \"user\")" },
    { "timeout", "number", "seconds the stream may last (default 60, 0 none)" },
    { "keepalive", "integer", "Keepalive-Ping-Interval asked for, whole seconds (default 50)" },
    { "on_event", "function", "on_event(ev) for each WatchEvent as it arrives" },
    { "on_exit", "function", "on_exit(err) when the stream ends by itself" },
  })
local CREATE_WATCHER = options.define("files:create_watcher", "Creates a polling watcher: a "
  .. "Watcher whose get_events() takes the queued events.", {
    { "recursive", "boolean", "watch subdirectories too" },
    { "include_entry", "boolean", "events carry the EntryInfo of the path" },
    { "allow_network_mounts", "boolean", "allow a network mount" },
    { "user", "string", "user to act as (default \"user\")" },
  })
local EVENT = options.shape("WatchEvent", "One filesystem event (watch_dir, get_events).", {
    { "name", "string", "path relative to the watched directory" },
    { "type", "string", "\"create\", \"write\", \"remove\", \"rename\" or \"chmod\"" },
    { "entry", "table?", "EntryInfo (include_entry, when envd could stat the path)" },
  })

---@class abx.WatchHandle
---@field path string
local WatchHandle = {}
options.class(WatchHandle, "WatchHandle", "A directory watch stream (files:watch_dir).", {
    { "path", "string", "the watched directory" },
  }, {
    { "events()", "every WatchEvent received so far, oldest first (a copy)" },
    { "stop()", "stops watching; idempotent" },
    { "done()", "whether the stream has ended" },
    { "error()", "the error that ended the stream by itself, or nil" },
    { "wait()", "yields until the stream ended; the events" },
    { "keepalives()", "keepalive events received so far" },
  })

---@class abx.Watcher
---@field id string
---@field path string
local Watcher = {}
options.class(Watcher, "Watcher", "A polling watcher (files:create_watcher).", {
    { "id", "string", "envd's watcher id" },
    { "path", "string", "the watched directory" },
  }, {
    { "get_events()", "the WatchEvents queued since the last call" },
    { "remove()", "removes the watcher" },
  })

-- EventType by name or number (reference §5.1).
local EVENT_TYPE = {
  EVENT_TYPE_CREATE = "create", EVENT_TYPE_WRITE = "write", EVENT_TYPE_REMOVE = "remove",
  EVENT_TYPE_RENAME = "rename", EVENT_TYPE_CHMOD = "chmod",
  [1] = "create", [2] = "write", [3] = "remove", [4] = "rename", [5] = "chmod",
}

--- A FilesystemEvent (ProtoJSON, §5.1) as a WatchEvent.
--- Raises: Protocol naming `call` when the name is not UTF-8 text or the type no EventType.
---@param e table
---@param call? string e.g. "files:watch_dir" (default "watch")
---@param where? string e.g. "message 3"
---@param request? string
---@return {name: string, type: string, entry?: table}
function watch.event_of(e, call, where, request)
  call, where = call or "watch", where or "event"
  if type(e) ~= "table" then decode.fail(call, where .. ": an event must be an object", request) end
  local t = e.type
  if type(t) == "number" then t = math.tointeger(t) end
  local ty = EVENT_TYPE[t]
  if not ty then decode.fail(call, where .. ": unknown event type " .. tostring(e.type), request) end
  return options.strict(EVENT, {
    name = decode.text(e.name, call, "name of " .. where, request),
    type = ty,
    entry = e.entry ~= nil and files.entry_of(e.entry, call, "entry of " .. where, request) or nil,
  })
end

local function request_of(path, opts)
  return {
    path = path,
    recursive = opts.recursive and true or false,
    includeEntry = opts.include_entry and true or false,
    allowNetworkMounts = opts.allow_network_mounts and true or nil,
  }
end

--- Starts watching `path` (a directory): filesystem.Filesystem/WatchDir (reference §5.1, §5.2).
--- Returns once envd sent its first message `{start:{}}`, so every change made after the call is
--- reported. A task reads the events: each goes to `on_event` and is kept for handle:events().
--- When the stream ends by itself (the `timeout` elapsed: deadline_exceeded; envd stopped) the
--- error is kept (handle:error()) and `on_exit(err)` is called; stop() ends it without error.
--- Raises: NotFound (missing directory), InvalidArgument (not a directory, or a network mount
--- without allow_network_mounts), Authentication (unknown user; permission_denied is Sandbox),
--- SandboxGone, Sandbox, Protocol (first message not `start`), Transport, Timeout.
---@param fs abx.Files
---@param path string
---@param opts? {recursive?: boolean, include_entry?: boolean, allow_network_mounts?: boolean,
---  user?: string, timeout?: number, keepalive?: integer, on_event?: fun(ev: table),
---  on_exit?: fun(err: table|nil)}
---@return abx.WatchHandle
function watch.watch_dir(fs, path, opts)
  opts = options.check(WATCH_DIR, opts)
  local st, request = fs._sbx._envd:stream("filesystem.Filesystem/WatchDir", request_of(path, opts),
    { user = opts.user or "user", timeout = opts.timeout or 60, keepalive = opts.keepalive })
  local ok, first = pcall(envd.next_message, st, request)
  if not ok then st:close(); error(first, 0) end
  if type(first) ~= "table" or type(first.start) ~= "table" then
    st:close()
    errmap.raise_protocol(200, request, "a first message {start:{}}")
  end
  local h = setmetatable({
    path = path, _events = {}, _waiters = {}, _done = false, _stopped = false, _keepalives = 0,
    _stream = st, _on_event = opts.on_event,
  }, WatchHandle)
  h._task = core.spawn(function()
    local rok, err = pcall(function()
      local n = 1 -- {start:{}} was message 1
      while true do
        local msg = envd.next_message(st, request)
        if msg == nil then break end
        n = n + 1
        if msg.filesystem ~= nil then
          local ev = watch.event_of(msg.filesystem, "files:watch_dir", "message " .. n, request)
          h._events[#h._events + 1] = ev
          if h._on_event then h._on_event(ev) end
        elseif msg.keepalive ~= nil then
          h._keepalives = h._keepalives + 1
        elseif msg.start == nil then
          decode.fail("files:watch_dir", "message " .. n .. " has none of start, filesystem, "
            .. "keepalive", request)
        end
      end
    end)
    st:close()
    if not rok and not h._stopped then h._error = err end
    h._done = true
    if opts.on_exit and not h._stopped then pcall(opts.on_exit, h._error) end
    local waiters = h._waiters
    h._waiters = {}
    for _, task in ipairs(waiters) do core.unpark(task) end
  end)
  return h
end

--- Every event received so far, oldest first (a copy). Raises: nothing.
---@return abx.WatchEvent[]
function WatchHandle:events()
  local out = {}
  for i, ev in ipairs(self._events) do out[i] = ev end
  return out
end

--- Stops watching: closes the stream, so envd drops its inotify watch (§5.2). Idempotent.
--- Events already received stay in handle:events(). Raises: nothing.
function WatchHandle:stop()
  if not self._done then
    self._stopped = true
    self._stream:close()
  end
end

--- Whether the stream has ended (stopped, timed out or failed). Raises: nothing.
---@return boolean
function WatchHandle:done()
  return self._done
end

--- The error that ended the stream by itself (Timeout for deadline_exceeded), or nil while it
--- runs and after stop(). Raises: nothing.
---@return abx.Error|nil
function WatchHandle:error()
  return self._error
end

--- Yields until the stream has ended by itself or was stopped; returns the events.
--- Raises: nothing (see handle:error()).
---@return abx.WatchEvent[]
function WatchHandle:wait()
  while not self._done do
    self._waiters[#self._waiters + 1] = core.current()
    core.park()
  end
  return self:events()
end

--- How many keepalive events the stream carried (reference §9). Raises: nothing.
---@return integer
function WatchHandle:keepalives()
  return self._keepalives
end

--- Creates a polling watcher on `path`: filesystem.Filesystem/CreateWatcher (reference §5.1,
--- §5.2); envd queues the events until watcher:get_events() takes them.
--- Raises: NotFound (missing directory), InvalidArgument (not a directory), Authentication,
--- Sandbox (permission_denied and others), Protocol (no watcherId), Transport, Timeout.
---@param fs abx.Files
---@param path string
---@param opts? {recursive?: boolean, include_entry?: boolean, allow_network_mounts?: boolean,
---  user?: string}
---@return abx.Watcher
function watch.create_watcher(fs, path, opts)
  opts = options.check(CREATE_WATCHER, opts)
  local resp = fs._sbx._envd:unary("filesystem.Filesystem/CreateWatcher", request_of(path, opts),
    { user = opts.user or "user" })
  if type(resp.watcherId) ~= "string" or resp.watcherId == "" then
    errmap.raise_protocol(200, "POST /filesystem.Filesystem/CreateWatcher",
      "a CreateWatcherResponse with watcherId")
  end
  return setmetatable({ id = resp.watcherId, path = path, _fs = fs }, Watcher)
end

--- The events queued since the last call, oldest first, and empties envd's queue:
--- filesystem.Filesystem/GetWatcherEvents (reference §5.2).
--- Raises: NotFound (unknown or removed watcher), Sandbox (`internal`: the watcher failed),
--- Authentication, Transport, Timeout.
---@return abx.WatchEvent[]
function Watcher:get_events()
  local resp = self._fs._sbx._envd:unary("filesystem.Filesystem/GetWatcherEvents",
    { watcherId = self.id })
  local out = {}
  for i, e in ipairs(type(resp.events) == "table" and resp.events or {}) do
    out[#out + 1] = watch.event_of(e, "watcher:get_events", "event " .. i,
      "POST /filesystem.Filesystem/GetWatcherEvents")
  end
  return out
end

--- Removes the watcher: filesystem.Filesystem/RemoveWatcher (reference §5.2).
--- Raises: NotFound (already removed or unknown), Authentication, Sandbox, Transport, Timeout.
function Watcher:remove()
  self._fs._sbx._envd:unary("filesystem.Filesystem/RemoveWatcher", { watcherId = self.id })
end

return watch
