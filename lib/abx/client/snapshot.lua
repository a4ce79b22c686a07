-- abx.client.snapshot: sandbox snapshots on the control plane (docs/protocol/e2b-control-plane.md §3.1, §3.3
-- SnapshotInfo, §3.4, §6.1). A snapshot is a template: restore it with
-- conn:create{ template = snapshot_id }.
--
--   local snap = sbx:create_snapshot({ name = "my-snap" })   -- {snapshot_id, names}
--   local clone = conn:create{ template = snap.snapshot_id }
--   conn:list_snapshots({ sandbox_id = sbx.id })              -- follows X-Next-Token
--   conn:delete_snapshot(snap.snapshot_id)                    -- true; false when already gone
--
-- The Sandbox and Connection methods of abx.client.sandbox call these functions. A connection hook
-- `snapshot_created(info)` is called after each successful create (to track what a run made).
-- Errors: abx.error kinds through abx.client.errmap; create: 404 -> SandboxNotFound, 400 ->
-- InvalidArgument (bad name); delete: 404 -> false, 400 (still used by a sandbox) -> InvalidArgument.

local errmap = require("abx.client.errmap")
local envd = require("abx.client.envd")
local options = require("abx.client.options")
local pages = require("abx.client.pages")

local snapshot = {}

local CREATE = options.define("sbx:create_snapshot", "Snapshots the sandbox (POST "
  .. "/sandboxes/{id}/snapshots): a SnapshotInfo.", {
    { "name", "string", "snapshot name (default: the server names it)" },
  })
local LIST_PAGE = options.define("conn:list_snapshots_page", "One page of snapshots: "
  .. "SnapshotInfo[] and the next token.", {
    { "sandbox_id", "string", "only snapshots of this sandbox" },
    { "name", "string", "only snapshots with this name" },
    { "limit", "integer", "page size, 1..100" },
    { "next_token", "string", "the token of the previous page" },
  })
local LIST = options.define("conn:list_snapshots", "Every snapshot matching the filters, "
  .. "following X-Next-Token.", {
    { "sandbox_id", "string", "only snapshots of this sandbox" },
    { "name", "string", "only snapshots with this name" },
    { "limit", "integer", "page size, 1..100" },
  })
local INFO = options.shape("SnapshotInfo", "A snapshot (a template: restore it with "
  .. "conn:create{template = snapshot_id}).", {
    { "snapshot_id", "string", "the snapshot's template id" },
    { "names", "string[]", "its names" },
  })

local function info_of(s, status, request)
  if type(s) ~= "table" or type(s.snapshotID) ~= "string" then
    errmap.raise_protocol(status, request, "a SnapshotInfo with snapshotID")
  end
  local names = {}
  for i, n in ipairs(type(s.names) == "table" and s.names or {}) do names[i] = n end
  return options.strict(INFO, { snapshot_id = s.snapshotID, names = names })
end

--- Snapshots a sandbox: POST /sandboxes/{id}/snapshots {name?} -> 201 SnapshotInfo. Not retried
--- (an unnamed snapshot is a new one each time).
--- Raises: SandboxNotFound (404), InvalidArgument (400 bad name), Conflict, Authentication, Sandbox,
--- Protocol, Transport, Timeout.
---@param sbx abx.Sandbox
---@param opts? {name?: string}
---@return {snapshot_id: string, names: string[]}
function snapshot.create(sbx, opts)
  opts = options.check(CREATE, opts)
  local conn = sbx.conn
  local body = {} -- cjson encodes an empty table as `{}` (the spec requires a body)
  if opts.name then body.name = opts.name end
  local path = "/sandboxes/" .. envd.quote(sbx.id) .. "/snapshots"
  local resp, request = conn:_call("POST", path, nil, body, false)
  if resp.status ~= 201 and resp.status ~= 200 then
    errmap.raise_api(resp, request, "SandboxNotFound")
  end
  local info = info_of(errmap.decode_ok(resp, request), resp.status, request)
  if conn.hooks.snapshot_created then conn.hooks.snapshot_created(info) end
  return info
end

--- One page of GET /snapshots (reference §2 Pagination): filters `sandbox_id`, `name`; `limit`
--- 1..100. Returns the items and the X-Next-Token (nil when no more pages).
--- Raises: InvalidArgument (400), Authentication, Sandbox, Protocol, Transport, Timeout.
---@param conn abx.Connection
---@param opts? {sandbox_id?: string, name?: string, limit?: integer, next_token?: string}
---@return {snapshot_id: string, names: string[]}[] items, string|nil next_token
function snapshot.list_page(conn, opts)
  opts = options.check(LIST_PAGE, opts)
  local q = {}
  if opts.sandbox_id then q[#q + 1] = { "sandboxID", opts.sandbox_id } end
  if opts.name then q[#q + 1] = { "name", opts.name } end
  if opts.limit then q[#q + 1] = { "limit", string.format("%d", opts.limit) } end
  if opts.next_token then q[#q + 1] = { "nextToken", opts.next_token } end
  local resp, request = conn:_call("GET", "/snapshots", envd.query(q), nil, true)
  if resp.status ~= 200 then errmap.raise_api(resp, request) end
  local items = {}
  for i, s in ipairs(errmap.decode_ok(resp, request, true)) do items[i] = info_of(s, resp.status, request) end
  local token = resp.headers["x-next-token"]
  if token == "" then token = nil end
  return items, token
end

--- Every snapshot matching the filters, following X-Next-Token until exhausted.
--- Raises: as list_page.
---@param conn abx.Connection
---@param opts? {sandbox_id?: string, name?: string, limit?: integer}
---@return {snapshot_id: string, names: string[]}[]
function snapshot.list(conn, opts)
  local o = {}
  for k, v in pairs(options.check(LIST, opts)) do o[k] = v end
  return pages.follow("GET /snapshots", "cursor", function(token)
    o.next_token = token
    return snapshot.list_page(conn, o)
  end, function(info) return info.snapshot_id end)
end

--- Deletes a snapshot: DELETE /templates/{id} (reference §3.1). true on 204, false on 404; then
--- hooks.snapshot_deleted(id).
--- Raises: InvalidArgument (400: sandboxes still use it), Authentication, Sandbox, Transport, Timeout.
---@param conn abx.Connection
---@param id string snapshot id
---@return boolean
function snapshot.delete(conn, id)
  return conn:_delete("/templates/" .. envd.quote(id), "snapshot_deleted", id)
end

return snapshot
