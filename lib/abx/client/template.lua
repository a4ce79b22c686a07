-- abx.client.template: the E2B template build API, driven as the 2.51 SDK drives it
-- (sdk-src/template/buildApi.ts and index.ts; docs/protocol/e2b-v2-and-peers.md §2,
-- docs/protocol/e2b-control-plane.md §4). Knows the wire; recipes are abx.run.recipe.
--
--   local template = require("abx.client.template")
--   local b = template.request_build(conn, { name = "hello:abx-0123456789ab", cpuCount = 2 })
--   template.upload_files(conn, b.template_id, { ctx = dir, src = "server/", hash = h })
--   template.trigger_build(conn, b.template_id, b.build_id, body)
--   template.wait(conn, b.template_id, b.build_id, { on_log = fn(entry), interval = 0.2 })
--   template.assign_tags(conn, "hello:abx-0123456789ab", { "default" })
--   template.exists(conn, "hello"), template.get_id(conn, "hello"), template.tags(conn, id),
--   template.remove_tags(conn, "hello", {"v1"}), template.delete(conn, id), template.list(conn)
--
-- Errors: abx.error kinds through abx.client.errmap (400 InvalidArgument, 401 Authentication,
-- 404 NotFound, 409 Conflict, 429 RateLimit, ...); a build that ends in status "error" raises
-- kind Sandbox with code "BuildError", `message` = the build's reason.message and `step` =
-- reason.step (the SDK's BuildError). Idempotent reads (files, status, tags, aliases, list) are
-- retried like every idempotent control-plane call (abx.client.sandbox RETRY); creates, triggers
-- and tag changes are not.
local core = require("abx.core")
local cjson = require("cjson")
local errmap = require("abx.client.errmap")
local envd = require("abx.client.envd")
local files = require("abx.client.template_files")
local pages = require("abx.client.pages")

local M = {}

-- The SDK's pace (TemplateBase.logsRefreshFrequency) and page bound (≤100 entries per call).
M.POLL_INTERVAL = 0.2
-- A PUT of the upload archive may take long (the SDK's FILE_UPLOAD_TIMEOUT_MS: 1 h).
M.UPLOAD_TIMEOUT = 3600

local function q(s) return envd.quote(s) end

local function ok_status(resp, ...)
  for _, s in ipairs({ ... }) do
    if resp.status == s then return true end
  end
  return false
end

--- POST /v3/templates {name, tags?, cpuCount?, memoryMB?} -> 202 TemplateRequestResponseV3.
--- Raises: InvalidArgument (400), Authentication, Conflict, RateLimit, Sandbox, Protocol.
---@param conn abx.Connection
---@param body {name: string, tags?: string[], cpuCount?: integer, memoryMB?: integer}
---@return {template_id: string, build_id: string, names: string[], tags: string[]}
function M.request_build(conn, body)
  local resp, request = conn:_call("POST", "/v3/templates", nil, body, false)
  if not ok_status(resp, 202, 200, 201) then errmap.raise_api(resp, request) end
  local d = errmap.decode_ok(resp, request)
  if type(d.templateID) ~= "string" or type(d.buildID) ~= "string" then
    errmap.raise_protocol(resp.status, request, "a TemplateRequestResponseV3 with templateID and buildID")
  end
  return { template_id = d.templateID, build_id = d.buildID, names = d.names or {},
    tags = d.tags or {} }
end

--- GET /templates/{id}/files/{hash} -> 201 {present, url?, headers?}.
--- Raises: as request_build (404 NotFound).
---@return {present: boolean, url: string|nil, headers: table<string,string>}
function M.file_upload_link(conn, template_id, hash)
  local resp, request = conn:_call("GET", "/templates/" .. q(template_id) .. "/files/" .. q(hash),
    nil, nil, true)
  if not ok_status(resp, 201, 200) then errmap.raise_api(resp, request) end
  local d = errmap.decode_ok(resp, request)
  if type(d.present) ~= "boolean" then
    errmap.raise_protocol(resp.status, request, "a TemplateBuildFileUpload with present")
  end
  local headers = {}
  for k, v in pairs(type(d.headers) == "table" and d.headers or {}) do
    if type(k) == "string" and type(v) == "string" then headers[k] = v end
  end
  return { present = d.present, url = type(d.url) == "string" and d.url or nil, headers = headers }
end

--- Uploads a COPY step's files when the platform does not have them: GET the upload link, and
--- when `url` is given and `present` is false, PUT the tar.gz to it with the link's headers and
--- an exact Content-Length (no chunked encoding, no API key: the URL is pre-signed).
--- Returns "uploaded" or "cached".
--- Raises: as file_upload_link; InvalidArgument (files unreadable); Sandbox for a PUT answer
--- that is not 2xx (the SDK's FileUploadError), Transport, Timeout.
---@param conn abx.Connection
---@param template_id string
---@param c {ctx: string, src: string, hash: string}
---@return string
function M.upload_files(conn, template_id, c)
  local link = M.file_upload_link(conn, template_id, c.hash)
  if link.present or not link.url then return "cached" end
  local tmp = os.tmpname()
  local ok, err = pcall(function()
    local size = files.tar_gz(c.ctx, c.src, tmp)
    local fh = assert(io.open(tmp, "rb"))
    local headers = {}
    for k, v in pairs(link.headers) do
      if k:lower() ~= "content-length" then headers[k] = v end
    end
    headers["Content-Length"] = string.format("%d", size)
    local url = link.url
    if url:sub(1, 1) == "/" then url = conn.api_url .. url end -- a platform-relative link
    local resp = core.request({ method = "PUT", url = url, headers = headers, body_file = fh,
      timeout = M.UPLOAD_TIMEOUT })
    fh:close()
    if resp.status < 200 or resp.status >= 300 then
      errmap.raise("Sandbox", resp.status, string.format("Failed to upload file: %s: HTTP %d %s",
        c.src, resp.status, (resp.body or ""):sub(1, 200)), { request = "PUT upload",
        code = "FileUploadError" })
    end
  end)
  os.remove(tmp)
  if not ok then error(err, 0) end
  return "uploaded"
end

--- POST /v2/templates/{id}/builds/{buildID} TemplateBuildStartV2 -> 202.
--- Raises: InvalidArgument (400), Authentication, NotFound, Sandbox, Protocol.
function M.trigger_build(conn, template_id, build_id, body)
  local resp, request = conn:_call("POST", "/v2/templates/" .. q(template_id) .. "/builds/"
    .. q(build_id), nil, body, false)
  if not ok_status(resp, 202, 200, 201, 204) then errmap.raise_api(resp, request) end
end

--- GET /templates/{id}/builds/{buildID}/status?logsOffset=N -> TemplateBuildInfo.
--- Raises: NotFound, Authentication, Sandbox, Protocol.
---@return {status: string, log_entries: table[], reason: table|nil}
function M.status(conn, template_id, build_id, offset)
  local resp, request = conn:_call("GET", "/templates/" .. q(template_id) .. "/builds/"
    .. q(build_id) .. "/status", "logsOffset=" .. string.format("%d", offset or 0), nil, true)
  if resp.status ~= 200 then errmap.raise_api(resp, request) end
  local d = errmap.decode_ok(resp, request)
  if type(d.status) ~= "string" or type(d.logEntries) ~= "table" then
    errmap.raise_protocol(resp.status, request, "a TemplateBuildInfo with status and logEntries")
  end
  return { status = d.status, log_entries = d.logEntries,
    reason = type(d.reason) == "table" and d.reason or nil }
end

--- Polls the build's status every `interval` seconds (default 0.2, the SDK's), hands every new
--- log entry ({timestamp, level, message, step?}) to `on_log` as it comes, and after a terminal
--- status drains the log until an empty page (the SDK's waitForBuildFinish).
--- Returns the number of log entries seen.
--- Raises: Sandbox with code "BuildError" (status "error": message = reason.message or "Unknown
--- error", fields step = reason.step, reason = the reason table); Protocol for an unknown status;
--- what status raises.
---@param opts? {on_log?: fun(entry: table), interval?: number}
---@return integer
function M.wait(conn, template_id, build_id, opts)
  opts = opts or {}
  local offset = 0
  local function poll()
    local st = M.status(conn, template_id, build_id, offset)
    offset = offset + #st.log_entries
    for _, e in ipairs(st.log_entries) do
      if opts.on_log then opts.on_log(e) end
    end
    return st
  end
  while true do
    local st = poll()
    if st.status == "ready" or st.status == "error" then
      -- the drain is a paging loop too (by log offset): bounded, so a platform that ignores
      -- the offset and answers the same entries again cannot keep it going
      local tail, drained = st, 0
      while #tail.log_entries > 0 do
        drained = drained + 1
        if drained > pages.MAX_PAGES then
          errmap.raise("Protocol", 200, string.format("the build log did not end after %d pages "
            .. "(log offset %d; the platform ignores logsOffset?)", pages.MAX_PAGES, offset),
            { request = "GET /templates/" .. template_id .. "/builds/" .. build_id .. "/status" })
        end
        tail = poll()
      end
      if st.status == "ready" then return offset end
      local reason = st.reason or {}
      local msg = type(reason.message) == "string" and reason.message or "Unknown error"
      core.error("Sandbox", 0, msg, { code = "BuildError", request = "GET /templates/"
        .. template_id .. "/builds/" .. build_id .. "/status", step = reason.step,
        reason = reason })
    elseif st.status ~= "building" and st.status ~= "waiting" then
      errmap.raise_protocol(200, "GET build status", "status building, waiting, ready or error, "
        .. "got " .. tostring(st.status))
    end
    core.sleep(opts.interval or M.POLL_INTERVAL)
  end
end

--- POST /templates/tags {target: "name:tag", tags} -> 201 {buildID, tags}.
--- Raises: NotFound, InvalidArgument, Authentication, Sandbox, Protocol.
---@return {build_id: string, tags: string[]}
function M.assign_tags(conn, target, tags)
  local resp, request = conn:_call("POST", "/templates/tags", nil, { target = target,
    tags = tags }, false)
  if not ok_status(resp, 201, 200) then errmap.raise_api(resp, request) end
  local d = errmap.decode_ok(resp, request)
  return { build_id = d.buildID, tags = d.tags or {} }
end

--- DELETE /templates/tags {name, tags} -> 204.
--- Raises: NotFound, InvalidArgument, Authentication, Sandbox.
function M.remove_tags(conn, name, tags)
  local resp, request = conn:_call("DELETE", "/templates/tags", nil, { name = name, tags = tags },
    false)
  if not ok_status(resp, 204, 200) then errmap.raise_api(resp, request) end
end

--- GET /templates/{id}/tags -> [{tag, buildID, createdAt}].
--- Raises: NotFound, Authentication, Sandbox, Protocol.
---@return {tag: string, build_id: string, created_at: string}[]
function M.tags(conn, template_id)
  local resp, request = conn:_call("GET", "/templates/" .. q(template_id) .. "/tags", nil, nil, true)
  if resp.status ~= 200 then errmap.raise_api(resp, request) end
  local out = {}
  for _, t in ipairs(errmap.decode_ok(resp, request, true)) do
    out[#out + 1] = { tag = t.tag, build_id = t.buildID, created_at = t.createdAt }
  end
  return out
end

--- GET /templates/aliases/{name}: the template's id, or nil when it does not exist (404). 403
--- (it exists but is another team's) raises Authentication naming it.
--- Raises: Authentication, Sandbox, Protocol.
---@return string|nil template_id
function M.get_id(conn, name)
  local resp, request = conn:_call("GET", "/templates/aliases/" .. q(name), nil, nil, true)
  if resp.status == 404 then return nil end
  if resp.status == 403 then
    errmap.raise("Authentication", 403, "template name " .. name .. " belongs to another team",
      { request = request })
  end
  if resp.status ~= 200 then errmap.raise_api(resp, request) end
  local d = errmap.decode_ok(resp, request)
  if type(d.templateID) ~= "string" then
    errmap.raise_protocol(resp.status, request, "a TemplateAliasResponse with templateID")
  end
  return d.templateID
end

--- Does the name exist? The SDK's checkAliasExists: 200 true, 404 false, 403 true (exists,
--- another team's). Raises: Authentication (401), Sandbox, Protocol.
---@return boolean
function M.exists(conn, name)
  local resp, request = conn:_call("GET", "/templates/aliases/" .. q(name), nil, nil, true)
  if resp.status == 404 then return false end
  if resp.status == 403 or resp.status == 200 then return true end
  errmap.raise_api(resp, request)
end

--- DELETE /templates/{id} -> 204 (the platform drops its names and tags). false on 404.
--- Raises: InvalidArgument (400: sandboxes still use it), Authentication, Sandbox.
---@return boolean
function M.delete(conn, template_id)
  return conn:_delete("/templates/" .. q(template_id))
end

--- GET /v2/templates following X-Next-Token: every template of the team, as the API sends them
--- (Template: templateID, names, buildStatus, cpuCount, memoryMB, ...).
--- Raises: Authentication, InvalidArgument, Sandbox, Protocol.
---@return table[]
function M.list(conn)
  return pages.follow("GET /v2/templates", "cursor", function(token)
    local query = "limit=100" .. (token and ("&nextToken=" .. q(token)) or "")
    local resp, request = conn:_call("GET", "/v2/templates", query, nil, true)
    if resp.status ~= 200 then errmap.raise_api(resp, request) end
    local items = errmap.decode_ok(resp, request, true)
    local next_token = resp.headers["x-next-token"]
    if next_token == "" then next_token = nil end
    return items, next_token
  end, function(t) return type(t) == "table" and t.templateID or nil end)
end

--- JSON text of a body exactly as it is sent (for --dry-run and tests).
function M.encode(body) return cjson.encode(body) end

return M
