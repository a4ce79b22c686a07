-- abx.client.volume: team volumes on the control plane (docs/protocol/e2b-control-plane.md §5). Mount one with
-- conn:create{ volume_mounts = {{ name = v.name, path = "/mnt/data", read_only = false }} }.
--
--   local v = conn:create_volume("data-" .. ctx.run_id)   -- {volume_id, name, token, domain?}
--   conn:list_volumes()                                   -- {{volume_id, name}, ...}
--   conn:get_volume(v.volume_id)                          -- {volume_id, name, token}
--   conn:delete_volume(v.volume_id)                       -- true; false when already gone
--
-- The volume token is registered as a secret. A connection hook `volume_created(info)` is called
-- after each successful create.
-- Errors: abx.error kinds through abx.client.errmap: 400 -> InvalidArgument (bad name; delete while
-- mounted by a live sandbox on the local platform), 409 -> Conflict (name taken), get 404 ->
-- NotFound, delete 404 -> false.

local core = require("abx.core")
local errmap = require("abx.client.errmap")
local envd = require("abx.client.envd")
local options = require("abx.client.options")

local volume = {}

local INFO = options.shape("VolumeInfo", "A team volume (conn:create_volume, list_volumes, "
  .. "get_volume).", {
    { "volume_id", "string", "volume id" },
    { "name", "string", "its name" },
    { "token", "string?", "its access token (a secret; not in list answers)" },
    { "domain", "string?", "the volume-content domain, when the platform sends one" },
  })

local function info_of(v, status, request)
  if type(v) ~= "table" or type(v.volumeID) ~= "string" or type(v.name) ~= "string" then
    errmap.raise_protocol(status, request, "a Volume with volumeID and name")
  end
  local token = type(v.token) == "string" and v.token or nil
  if token then core.add_secret(token) end
  return options.strict(INFO, { volume_id = v.volumeID, name = v.name, token = token,
    domain = type(v.domain) == "string" and v.domain or nil })
end

--- Creates a volume: POST /volumes {name} -> 201 VolumeAndToken. Not retried (the name would be
--- taken by the first attempt).
--- Raises: InvalidArgument (400), Conflict (409), Authentication, Sandbox, Protocol, Transport, Timeout.
---@param conn abx.Connection
---@param name string ^[a-zA-Z0-9_-]+$
---@return {volume_id: string, name: string, token: string|nil, domain: string|nil}
function volume.create(conn, name)
  if type(name) ~= "string" then errmap.raise("InvalidArgument", 0, "volume name must be a string") end
  local resp, request = conn:_call("POST", "/volumes", nil, { name = name }, false)
  if resp.status ~= 201 and resp.status ~= 200 then errmap.raise_api(resp, request) end
  local info = info_of(errmap.decode_ok(resp, request), resp.status, request)
  if conn.hooks.volume_created then conn.hooks.volume_created(info) end
  return info
end

--- Every volume of the team: GET /volumes -> [{volumeID, name}].
--- Raises: Authentication, Sandbox, Protocol, Transport, Timeout.
---@param conn abx.Connection
---@return {volume_id: string, name: string}[]
function volume.list(conn)
  local resp, request = conn:_call("GET", "/volumes", nil, nil, true)
  if resp.status ~= 200 then errmap.raise_api(resp, request) end
  local out = {}
  for i, v in ipairs(errmap.decode_ok(resp, request, true)) do out[i] = info_of(v, resp.status, request) end
  return out
end

--- One volume: GET /volumes/{id} -> VolumeAndToken.
--- Raises: NotFound (404), Authentication, Sandbox, Protocol, Transport, Timeout.
---@param conn abx.Connection
---@param id string
---@return {volume_id: string, name: string, token: string|nil}
function volume.get(conn, id)
  local resp, request = conn:_call("GET", "/volumes/" .. envd.quote(id), nil, nil, true)
  if resp.status ~= 200 then errmap.raise_api(resp, request) end
  return info_of(errmap.decode_ok(resp, request), resp.status, request)
end

--- Deletes a volume and its data: DELETE /volumes/{id}. true on 204, false on 404; then
--- hooks.volume_deleted(id).
--- Raises: InvalidArgument (400: still mounted), Authentication, Sandbox, Transport, Timeout.
---@param conn abx.Connection
---@param id string
---@return boolean
function volume.delete(conn, id)
  return conn:_delete("/volumes/" .. envd.quote(id), "volume_deleted", id)
end

return volume
