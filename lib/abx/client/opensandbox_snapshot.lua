-- abx.client.opensandbox_snapshot: snapshots on OpenSandbox's lifecycle API, mapped onto the E2B
-- client's snapshot primitives (abx.client.snapshot) so scenarios do not change. From OpenSandbox
-- @3bb6fad specs/sandbox-lifecycle.yml (tag Snapshots) and server/opensandbox_server/services/
-- snapshot_service.py:
--   sbx:create_snapshot{name}  POST /sandboxes/{id}/snapshots {name?} (202 Snapshot, state
--                              Creating or Ready), then GET /snapshots/{snapshotId} every
--                              create.interval s until Ready (Failed: Sandbox error), at most
--                              create.deadline s. -> SnapshotInfo {snapshot_id = id, names = {id,
--                              name when given}}.
--   conn:list_snapshots_page   GET /snapshots?sandboxId&page&pageSize (next_token = page number).
--   conn:list_snapshots        every page.
--   conn:delete_snapshot(id)   DELETE /snapshots/{id}: 204 true, 404 false.
--   conn:create{template = <snapshot id>}: a template that is a snapshot id (the server's ids are
--                              uuid4, snapshot_service.py) is sent as snapshotId instead of image.
-- Errors: as abx.client.opensandbox_wire (404 on a sandbox route SandboxNotFound, else NotFound;
-- 409 Conflict: a source that is not Running, a snapshot in use).

local core = require("abx.core")
local errmap = require("abx.client.errmap")
local envd = require("abx.client.envd")
local options = require("abx.client.options")
local pages = require("abx.client.pages")
local semantics = require("abx.client.semantics")
local wire = require("abx.client.opensandbox_wire")
require("abx.client.snapshot") -- defines the options checked here (sbx:create_snapshot, ...)

local M = {}

local UUID = "^%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$"

--- Whether a conn:create template names a snapshot (an OpenSandbox snapshot id: a uuid).
--- Raises: nothing.
---@param template string|nil
---@return boolean
function M.is_snapshot_id(template)
  return type(template) == "string" and template:lower():match(UUID) ~= nil
end

local function info_of(s, status, request)
  if type(s) ~= "table" or type(s.id) ~= "string" or s.id == "" or type(s.status) ~= "table"
    or type(s.status.state) ~= "string" then
    errmap.raise_protocol(status, request, "a Snapshot with id and status.state")
  end
  return s
end

local function to_info(s)
  local names = { s.id }
  if type(s.name) == "string" and s.name ~= "" then names[2] = s.name end
  return { snapshot_id = s.id, names = names }
end

--- GET /snapshots/{id}: the decoded Snapshot.
--- Raises: NotFound (404), Authentication, Protocol, Transport, Timeout.
---@param conn table an OpenSandboxConnection
---@param id string
---@return table
function M.get(conn, id)
  local resp, request = conn:_call("GET", "/snapshots/" .. envd.quote(id), nil, nil, true)
  if resp.status ~= 200 then wire.raise_error(resp, request, "NotFound") end
  return info_of(errmap.decode_ok(resp, request), resp.status, request)
end

--- Snapshots sandbox `sbx` and waits until the snapshot is Ready (see the file header); calls the
--- connection hook snapshot_created(info). Not retried (each POST makes a new snapshot).
--- Raises: SandboxNotFound (404), Conflict (409: not Running), InvalidArgument (400), Sandbox
--- (the snapshot Failed), Timeout, Authentication, Protocol, Transport.
---@param sbx table an OpenSandbox Sandbox
---@param opts? {name?: string}
---@return {snapshot_id: string, names: string[]}
function M.create(sbx, opts)
  opts = options.check("sbx:create_snapshot", opts)
  local conn = sbx.conn
  local body = {}
  if opts.name then body.name = opts.name end
  local path = "/sandboxes/" .. envd.quote(sbx.id) .. "/snapshots"
  local resp, request = conn:_call("POST", path, nil, body, false)
  if resp.status ~= 202 and resp.status ~= 200 and resp.status ~= 201 then
    wire.raise_error(resp, request, "SandboxNotFound")
  end
  local s = info_of(errmap.decode_ok(resp, request), resp.status, request)
  local deadline = core.now() + conn.create_mode.deadline
  while s.status.state ~= "Ready" do
    if s.status.state == "Failed" then
      errmap.raise("Sandbox", 0, string.format("sbx:create_snapshot: snapshot %s failed (%s: %s)",
        s.id, tostring(s.status.reason), tostring(s.status.message)), { request = request })
    end
    if core.now() + conn.create_mode.interval > deadline then
      errmap.raise("Timeout", 0, string.format("sbx:create_snapshot: snapshot %s is still %s after "
        .. "%g s (create.deadline)", s.id, s.status.state, conn.create_mode.deadline))
    end
    core.sleep(conn.create_mode.interval)
    s = M.get(conn, s.id)
  end
  local info = to_info(s)
  if conn.hooks.snapshot_created then conn.hooks.snapshot_created(info) end
  return info
end

--- One page of GET /snapshots: `sandbox_id` filters by source; `limit` is pageSize (1..200);
--- `next_token` the page number as a string (semantics.page_query). `name` has no equivalent
--- (OpenSandbox filters by sandboxId and state only): Skipped.
--- Raises: Skipped, InvalidArgument (400), Authentication, Protocol, Transport, Timeout.
---@param conn table
---@param opts? {sandbox_id?: string, limit?: integer, next_token?: string}
---@return {snapshot_id: string, names: string[]}[] items, string|nil next_token
function M.list_page(conn, opts)
  opts = options.check("conn:list_snapshots_page", opts)
  if opts.name then conn:_skip("conn:list_snapshots_page option name") end
  local q = {}
  if opts.sandbox_id then q[#q + 1] = { "sandboxId", opts.sandbox_id } end
  for _, kv in ipairs(semantics.page_query("page", opts.limit, opts.next_token)) do q[#q + 1] = kv end
  local resp, request = conn:_call("GET", "/snapshots", envd.query(q), nil, true)
  if resp.status ~= 200 then wire.raise_error(resp, request) end
  local body = errmap.decode_ok(resp, request)
  if type(body.items) ~= "table" then
    errmap.raise_protocol(resp.status, request, "a ListSnapshotsResponse with items")
  end
  local items = {}
  for i, s in ipairs(body.items) do items[i] = to_info(info_of(s, resp.status, request)) end
  return items, semantics.next_token("page", resp.headers, body)
end

--- Every snapshot matching the filters, page after page.
--- Raises: as list_page.
---@param conn table
---@param opts? {sandbox_id?: string, limit?: integer}
---@return {snapshot_id: string, names: string[]}[]
function M.list(conn, opts)
  opts = options.check("conn:list_snapshots", opts)
  local q = { sandbox_id = opts.sandbox_id, name = opts.name, limit = opts.limit }
  return pages.follow("GET /snapshots", "page", function(token)
    q.next_token = token
    return M.list_page(conn, q)
  end, function(info) return info.snapshot_id end)
end

--- DELETE /snapshots/{id}: true on 204, false on 404.
--- Raises: Conflict (409: in use or still being created), Authentication, Protocol, Transport.
---@param conn table
---@param id string
---@return boolean
function M.delete(conn, id)
  if type(id) ~= "string" or id == "" then
    errmap.raise("InvalidArgument", 0, "a snapshot id must be a non-empty string, got " .. tostring(id))
  end
  local resp, request = conn:_call("DELETE", "/snapshots/" .. envd.quote(id), nil, nil, true)
  if resp.status == 404 then return false end
  if resp.status ~= 204 and resp.status ~= 200 then wire.raise_error(resp, request) end
  return true
end

return M
