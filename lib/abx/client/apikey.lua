-- abx.client.apikey: managed team API keys on the control plane (E2B's /api-keys routes). They
-- take the connection's admin credential, conn.access_token, as `Authorization: Bearer <token>`
-- (with X-Team-ID when conn.team_id is set), never the API key: on the local platform the token
-- is serve's access token (its ready line; platform/api/apikeys.h), on E2B's cloud a dashboard token
-- and its team (spec security AuthProviderBearerAuth + AuthProviderTeamAuth).
--
--   local k = conn:create_api_key{ name = "ci-" .. ctx.run_id }  -- {id, key, name, mask, ...}
--   local other = conn:with{ api_key = k.key }                    -- a connection on the new key
--   conn:list_api_keys()                                          -- {{id, name, mask, ...}, ...}
--   conn:rename_api_key(k.id, "renamed")                          -- true
--   conn:delete_api_key(k.id)                                     -- true; false when already gone
--
-- A created key is registered as a secret (masked in every output); listings never hold a key.
-- Connection hooks `api_key_created(info)` and `api_key_deleted(id)` are called after each
-- create and delete (the run's tracker deletes what a run made and left).
-- Errors: abx.error kinds through abx.client.errmap: 400 -> InvalidArgument (name, an id that is
-- not a UUID), 401 -> Authentication (no or a wrong access token), 404 -> NotFound (rename of an
-- unknown id; delete answers false), 5xx -> Sandbox; InvalidArgument before any request when the
-- connection has no access_token.
-- Source: e2b-dev/infra spec/openapi.yml paths /api-keys (GET 200 TeamAPIKey[], POST
-- NewTeamAPIKey -> 201 CreatedTeamAPIKey), /api-keys/{apiKeyID} (PATCH UpdateTeamAPIKey, DELETE
-- 204); handlers/apikey.go (PATCH answers 202; an unknown id 404 "id not found").

local core = require("abx.core")
local errmap = require("abx.client.errmap")
local envd = require("abx.client.envd")
local options = require("abx.client.options")

local apikey = {}

local CREATE = options.define("conn:create_api_key", "Creates a managed team API key (POST "
  .. "/api-keys): a CreatedApiKey; the only answer that holds the key.", {
    { "name", "string", "its name (required)" },
  })
local INFO = options.shape("ApiKeyInfo", "A managed API key as listed (TeamAPIKey): never its "
  .. "value.", {
    { "id", "string", "its UUID" },
    { "name", "string", "its name" },
    { "mask", "table", "{prefix, value_length, masked_value_prefix, masked_value_suffix}" },
    { "created_at", "string", "RFC 3339" },
    { "created_by", "string?", "the creating user's id, when the platform names one" },
    { "last_used", "string?", "RFC 3339; nil until the key was used" },
  })
local CREATED = options.shape("CreatedApiKey", "A new managed API key (CreatedTeamAPIKey).", {
    { "id", "string", "its UUID" },
    { "key", "string", "the key itself (a secret: masked in every output)" },
    { "name", "string", "its name" },
    { "mask", "table", "{prefix, value_length, masked_value_prefix, masked_value_suffix}" },
    { "created_at", "string", "RFC 3339" },
    { "created_by", "string?", "the creating user's id, when the platform names one" },
    { "last_used", "string?", "RFC 3339; nil until the key was used" },
  })

-- One admin request: the access token instead of the API key.
local function call(conn, method, path, body)
  if type(conn.access_token) ~= "string" or conn.access_token == "" then
    errmap.raise("InvalidArgument", 0, "the API-key routes need the connection's access_token "
      .. "(Authorization: Bearer; the local platform's is on serve's ready line, a remote "
      .. "provider's comes from ABX_SANDBOX_ACCESS_TOKEN or E2B_ACCESS_TOKEN)")
  end
  local h = { Authorization = "Bearer " .. conn.access_token }
  if conn.team_id then h["X-Team-ID"] = conn.team_id end
  local admin = conn:with({ api_key = false })
  -- POST is not retried (a retry could make a second key); the others are idempotent
  return admin:_call(method, path, nil, body, method ~= "POST", h)
end

local function mask_of(m, status, request)
  if type(m) ~= "table" or type(m.prefix) ~= "string" or math.type(m.valueLength) == nil
    or type(m.maskedValuePrefix) ~= "string" or type(m.maskedValueSuffix) ~= "string" then
    errmap.raise_protocol(status, request, "an IdentifierMaskingDetails mask")
  end
  return { prefix = m.prefix, value_length = math.tointeger(m.valueLength),
    masked_value_prefix = m.maskedValuePrefix, masked_value_suffix = m.maskedValueSuffix }
end

local function fields_of(k, status, request)
  if type(k) ~= "table" or type(k.id) ~= "string" or type(k.name) ~= "string"
    or type(k.createdAt) ~= "string" then
    errmap.raise_protocol(status, request, "a TeamAPIKey with id, name, mask and createdAt")
  end
  local by = type(k.createdBy) == "table" and type(k.createdBy.id) == "string" and k.createdBy.id or nil
  return { id = k.id, name = k.name, mask = mask_of(k.mask, status, request),
    created_at = k.createdAt, created_by = by,
    last_used = type(k.lastUsed) == "string" and k.lastUsed or nil }
end

--- Creates a managed API key: POST /api-keys {name} -> 201 CreatedTeamAPIKey. Not retried. The
--- key is registered as a secret before anything else sees it; then hooks.api_key_created(info).
--- Raises: InvalidArgument (no access_token, 400), Authentication (401), Sandbox, Protocol,
--- Transport, Timeout.
---@param conn abx.Connection
---@param opts {name: string}
---@return table info {id, key, name, mask, created_at, created_by?, last_used?} (CreatedApiKey)
function apikey.create(conn, opts)
  opts = options.check(CREATE, opts)
  if type(opts.name) ~= "string" then
    errmap.raise("InvalidArgument", 0, "conn:create_api_key: name is required")
  end
  local resp, request = call(conn, "POST", "/api-keys", { name = opts.name })
  if resp.status ~= 201 and resp.status ~= 200 then errmap.raise_api(resp, request) end
  local body = errmap.decode_ok(resp, request)
  if type(body.key) ~= "string" or body.key == "" then
    errmap.raise_protocol(resp.status, request, "a CreatedTeamAPIKey with its key")
  end
  core.add_secret(body.key)
  local info = fields_of(body, resp.status, request)
  info.key = body.key
  info = options.strict(CREATED, info)
  if conn.hooks.api_key_created then conn.hooks.api_key_created(info) end
  return info
end

--- Every managed key of the team: GET /api-keys -> TeamAPIKey[] (no key values).
--- Raises: InvalidArgument (no access_token), Authentication, Sandbox, Protocol, Transport, Timeout.
---@param conn abx.Connection
---@return table[] keys {id, name, mask, created_at, created_by?, last_used?} each (ApiKeyInfo)
function apikey.list(conn)
  local resp, request = call(conn, "GET", "/api-keys")
  if resp.status ~= 200 then errmap.raise_api(resp, request) end
  local out = {}
  for i, k in ipairs(errmap.decode_ok(resp, request, true)) do
    out[i] = options.strict(INFO, fields_of(k, resp.status, request))
  end
  return out
end

--- Renames a key: PATCH /api-keys/{id} {name} -> 202 (200 as the spec has it).
--- Raises: InvalidArgument (no access_token, 400), Authentication, NotFound (404), Sandbox,
--- Transport, Timeout.
---@param conn abx.Connection
---@param id string
---@param name string
---@return boolean true
function apikey.rename(conn, id, name)
  if type(id) ~= "string" or type(name) ~= "string" then
    errmap.raise("InvalidArgument", 0, "conn:rename_api_key(id, name): two strings")
  end
  local resp, request = call(conn, "PATCH", "/api-keys/" .. envd.quote(id), { name = name })
  if resp.status ~= 202 and resp.status ~= 200 and resp.status ~= 204 then
    errmap.raise_api(resp, request)
  end
  return true
end

--- Deletes a key: DELETE /api-keys/{id}. true on 204, false on 404 (it was already gone); then
--- hooks.api_key_deleted(id). The key is refused (401) from then on.
--- Raises: InvalidArgument (no access_token, 400), Authentication, Sandbox, Transport, Timeout.
---@param conn abx.Connection
---@param id string
---@return boolean
function apikey.delete(conn, id)
  if type(id) ~= "string" then errmap.raise("InvalidArgument", 0, "conn:delete_api_key(id): a string") end
  local resp, request = call(conn, "DELETE", "/api-keys/" .. envd.quote(id))
  if resp.status ~= 204 and resp.status ~= 200 and resp.status ~= 404 then
    errmap.raise_api(resp, request)
  end
  if conn.hooks.api_key_deleted then conn.hooks.api_key_deleted(id) end
  return resp.status ~= 404
end

return apikey
