-- abx.watch: directory watching through envd's filesystem service, behind `sbx.files`:
--   streaming   sbx.files:watch_dir(path, opts)       -> WatchHandle   (filesystem.Filesystem/WatchDir)
--   polling     sbx.files:create_watcher(path, opts)  -> Watcher       (CreateWatcher,
--               watcher:get_events(), watcher:remove()                   GetWatcherEvents, RemoveWatcher)
--
--   local w = sbx.files:watch_dir("/home/user/d", { recursive = true })
--   sbx.files:write("/home/user/d/a.txt", "x")
--   t.eventually(function() assert(#w:events() > 0) end); w:stop()
--
-- Events: { name = path relative to the watched directory ("sub/b.txt"), type = "create" | "write" |
--           "remove" | "rename" | "chmod", entry = EntryInfo as abx.files returns it (only with
--           include_entry, for create/write/chmod when envd could stat the path) }. One event per
--           operation bit, in envd's order CREATE, RENAME, CHMOD, WRITE, REMOVE (§5.2); a rename
--           is "rename" of the old name and "create" of the new one.
-- Units: seconds; `timeout` 0 means none. watch_dir defaults to 60 s as the SDKs (§5.2 "SDK use"):
--        envd ends the stream with deadline_exceeded then, and the handle keeps its events.
-- Source: reference/envd-protocol.md §5.1 (WatchDir, CreateWatcher, GetWatcherEvents,
--         RemoveWatcher, FilesystemEvent, EventType), §5.2 (server semantics), §9 (keepalive).

local core = require("abx.core")
local errmap = require("abx.errmap")
local envd = require("abx.envd")
local files = require("abx.files")

local watch = {}

---@class abx.WatchHandle
---@field path string
local WatchHandle = {}
WatchHandle.__index = WatchHandle

---@class abx.Watcher
---@field id string
---@field path string
local Watcher = {}
Watcher.__index = Watcher

-- EventType by name or number (reference §5.1).
local EVENT_TYPE = {
  EVENT_TYPE_CREATE = "create", EVENT_TYPE_WRITE = "write", EVENT_TYPE_REMOVE = "remove",
  EVENT_TYPE_RENAME = "rename", EVENT_TYPE_CHMOD = "chmod",
  [1] = "create", [2] = "write", [3] = "remove", [4] = "rename", [5] = "chmod",
}

--- A FilesystemEvent (ProtoJSON, §5.1) as a Lua event table.
---@param e table
---@return {name: string, type: string, entry?: table}
function watch.event_of(e)
  local t = e.type
  if type(t) == "number" then t = math.tointeger(t) end
  return {
    name = e.name,
    type = EVENT_TYPE[t] or "unknown",
    entry = type(e.entry) == "table" and files.entry_of(e.entry) or nil,
  }
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
  opts = opts or {}
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
      while true do
        local msg = envd.next_message(st, request)
        if msg == nil then break end
        if type(msg.filesystem) == "table" then
          local ev = watch.event_of(msg.filesystem)
          h._events[#h._events + 1] = ev
          if h._on_event then h._on_event(ev) end
        elseif type(msg.keepalive) == "table" then
          h._keepalives = h._keepalives + 1
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
---@return {name: string, type: string, entry?: table}[]
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
---@return table|nil
function WatchHandle:error()
  return self._error
end

--- Yields until the stream has ended by itself or was stopped; returns the events.
--- Raises: nothing (see handle:error()).
---@return table[]
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
  opts = opts or {}
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
---@return {name: string, type: string, entry?: table}[]
function Watcher:get_events()
  local resp = self._fs._sbx._envd:unary("filesystem.Filesystem/GetWatcherEvents",
    { watcherId = self.id })
  local out = {}
  for _, e in ipairs(type(resp.events) == "table" and resp.events or {}) do
    out[#out + 1] = watch.event_of(e)
  end
  return out
end

--- Removes the watcher: filesystem.Filesystem/RemoveWatcher (reference §5.2).
--- Raises: NotFound (already removed or unknown), Authentication, Sandbox, Transport, Timeout.
function Watcher:remove()
  self._fs._sbx._envd:unary("filesystem.Filesystem/RemoveWatcher", { watcherId = self.id })
end

return watch
