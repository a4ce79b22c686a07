-- abx.client.envd_checked: envd RPCs that change state and are sent again after a gateway's bare
-- 502/503/504 only when the sandbox's state shows the first request did no work (issue 27 part 4).
-- A bare answer says nothing about whether the request reached envd (a gateway answers so when
-- it cannot reach the upstream, and also when the upstream's answer was lost), so each RPC here
-- reads what it would change before it is sent and again after the bare answer:
--   - Move {source, destination}: the source existed and is gone now: the move was done, and its
--     answer is the destination's entry (Stat), what envd's MoveResponse carries; the source is
--     still there (or was never there: the repeat answers envd's own not_found): sent again; a
--     Stat that failed another way leaves the outcome unknown: not retried.
--   - SendSignal {process, signal}: the process ran and is gone now: the signal was delivered (or
--     the process ended in the same moment; the caller's checks of its end tell which), answered
--     `{}` as envd does; it still runs and the signal is SIGKILL: sent again (a second SIGKILL to
--     a live process does what one does; a repeat that finds it gone means it was dying of the
--     first, answered `{}`); it still runs after a SIGTERM: not retried (a process may outlive
--     SIGTERM, so whether this one reached it is unknown); it never ran: sent again (envd answers
--     not_found); a List that failed before or after leaves the outcome unknown: not retried.
--   - Start (a stream): sent again when envd lists no process with the Start's tag.
--   - CreateWatcher: sent again; a watcher the first request may have made is never read and
--     ends with the sandbox (envd frees a sandbox's watchers with it).
-- RPCs whose repeat changes the outcome whatever the state shows (SendInput, StreamInput,
-- GetWatcherEvents: input delivered twice, events read once and lost) have no check here and are
-- sent once. Source: docs/protocol/envd-protocol.md §4.2 (SendSignal, List), §5.2 (Move, Stat,
-- CreateWatcher).
local cjson = require("cjson")
local errmap = require("abx.client.errmap")

local M = {}

--- The entry of `path` for `user` (filesystem.Filesystem/Stat, itself retried): the entry table,
--- false (not_found), or nil when the Stat failed another way (the state is then unknown).
local function stat(client, path, user)
  local ok, r = pcall(client.unary, client, "filesystem.Filesystem/Stat", { path = path },
    { user = user })
  if ok then return type(r) == "table" and type(r.entry) == "table" and r.entry or nil end
  if errmap.has_code(r, "not_found") then return false end
  return nil
end

--- Whether envd lists the process `selector` ({pid = N} or {tag = S}) as running (List, itself
--- retried): true, false, or nil when List failed.
local function running(client, selector)
  local ok, list = pcall(client.unary, client, "process.Process/List", {})
  if not ok or type(list) ~= "table" then return nil end
  for _, p in ipairs(type(list.processes) == "table" and list.processes or {}) do
    if type(p) == "table" and ((selector.pid ~= nil and math.tointeger(p.pid) == selector.pid)
      or (selector.tag ~= nil and p.tag == selector.tag)) then
      return true
    end
  end
  return false
end

--- envd's 200 answer `obj`, as the state showed it (what gateway_retry returns instead).
local function answered(obj)
  return { status = 200, headers = {}, body = cjson.encode(obj) }
end

--- A repeat's answer `resp` when envd's not_found on it means the first request did the work:
--- envd's answer to that one ({}), else nil (the repeat's own answer stands).
local function gone_is_done(resp)
  local obj = resp.status == 404 and errmap.decode_object(resp.body)
  if obj and obj.code == "not_found" then return answered({}) end
  return nil
end

-- Each check reads the state before the request and returns the function called after a bare
-- answer, which returns what abx.client.api_call.gateway_retry's `again` returns: true (send
-- again, with an optional settle of the repeat's answer), envd's answer as the state shows it,
-- or why the request is not sent again.
local CHECKS = {}

CHECKS["filesystem.Filesystem/Move"] = function(client, msg, opts)
  local before = stat(client, msg.source, opts.user)
  return function()
    if before == false then return true end
    if before == nil then return "a Stat of its source failed before it" end
    local now = stat(client, msg.source, opts.user)
    if now then return true end
    if now == nil then return "a Stat of its source failed after it" end
    local entry = stat(client, msg.destination, opts.user)
    if entry then return answered({ entry = entry }) end
    return "its source is gone but its destination cannot be read"
  end
end

CHECKS["process.Process/SendSignal"] = function(client, msg)
  local selector = type(msg.process) == "table" and msg.process or {}
  local before = running(client, selector)
  return function()
    if before == false then return true end
    local now = running(client, selector)
    if now == false and before == true then return answered({}) end
    -- the process may be dying of the first SIGKILL: a repeat that finds it gone is its success
    if now == true and msg.signal == "SIGNAL_SIGKILL" then return true, gone_is_done end
    if now == true then
      return "the process still runs: a process may outlive " .. tostring(msg.signal)
        .. ", so whether this one reached it is unknown"
    end
    if now == false then return "the process is gone, and whether it ran before is unknown" end
    return "envd's process list could not be read"
  end
end

-- A Start carries its tag (Client:stream gives it one): no process with it means the Start never
-- reached envd. What this cannot see: a process that was started and has already ended.
CHECKS["process.Process/Start"] = function(client, msg)
  return function()
    if type(msg.tag) ~= "string" then return "it carries no tag to look for" end
    local now = running(client, { tag = msg.tag })
    if now == false then return true end
    if now == true then return "it reached envd: a process with its tag " .. msg.tag .. " runs" end
    return "envd's process list could not be read"
  end
end

CHECKS["filesystem.Filesystem/CreateWatcher"] = function()
  return function() return true end
end

--- For an envd `rpc` that has a check: reads the state it would change now (before the request
--- is sent) and returns a function for abx.client.api_call.gateway_retry's `again`, called after
--- a gateway's bare answer: true to send the request again (and a function that may replace the
--- repeat's answer), a response table ({status = 200, body = JSON}) when the state shows the work
--- done, or a string saying why it is not sent again. nil for an RPC without a check.
--- Raises: nothing (a failed state read makes the outcome unknown: not sent again).
---@param client table abx.client.envd Client
---@param rpc string e.g. "filesystem.Filesystem/Move"
---@param msg table the request message
---@param opts table {user?: string}
---@return (fun(): true|string|table, (fun(resp: table): table|nil)|nil)|nil
function M.before(client, rpc, msg, opts)
  local check = CHECKS[rpc]
  if not check then return nil end
  local after = check(client, msg, opts)
  return function()
    local verdict, settle = after()
    if type(verdict) == "string" then
      return "POST /" .. rpc .. " may have done its work (" .. verdict .. ")"
    end
    return verdict, settle
  end
end

return M
