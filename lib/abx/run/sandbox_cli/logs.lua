-- abx.run.sandbox_cli.logs: `abxlua sandbox logs ID`: the platform's sandbox logs. With the
-- v2_routes capability GET /v2/sandboxes/{id}/logs?cursor&limit&direction&level&search ->
-- {logs: [SandboxLogEntry]}; otherwise the deprecated GET /sandboxes/{id}/logs?start&limit ->
-- {logs: [{timestamp, line}], logEntries: [SandboxLogEntry]} (docs/protocol/e2b-control-plane.md §3
-- "logs", SandboxLogEntry {timestamp, level, message, fields}). --level, --search and
-- --direction need the v2 route. JSON: {sandbox_id, route, logs: [{timestamp, level, message,
-- fields}]}; human: one "timestamp level message" line each, oldest first.
local a = require("abx.run.sandbox_cli.args")
local common = require("abx.run.sandbox_cli.common")
local errmap = require("abx.client.errmap")
local envd = require("abx.client.envd")

local M = {}

M.DESCRIPTION = "Print a sandbox's logs (the platform's sandbox log route)."
M.LEVELS = { "debug", "info", "warn", "error" }
M.DIRECTIONS = { "forward", "backward" }

function M.configure(cmd)
  cmd:argument("id", "Sandbox id."):convert(a.sandbox_id)
  cmd:option("--limit", "At most this many entries (1..1000).", "1000")
    :convert(a.integer("--limit", 1, 1000))
  cmd:option("--since", "Only entries from this Unix time in milliseconds on.")
    :convert(a.integer("--since", 0, math.maxinteger))
  cmd:option("--level", "Only entries of this level or above (v2 route).")
    :choices(M.LEVELS)
  cmd:option("--search", "Only entries whose message contains this text (v2 route).")
  cmd:option("--direction", "forward (oldest first) or backward (v2 route).")
    :choices(M.DIRECTIONS)
end

local function query_string(pairs_)
  local q = {}
  for _, kv in ipairs(pairs_) do
    if kv[2] ~= nil then q[#q + 1] = kv[1] .. "=" .. envd.quote(tostring(kv[2])) end
  end
  return table.concat(q, "&")
end

local function entries(list, request)
  local out = common.array()
  if type(list) ~= "table" then errmap.raise_protocol(200, request, "{logs: [...]}") end
  for _, e in ipairs(list) do
    if type(e) ~= "table" or type(e.timestamp) ~= "string" or type(e.message) ~= "string" then
      errmap.raise_protocol(200, request, "SandboxLogEntry {timestamp, level, message, fields}")
    end
    out[#out + 1] = { timestamp = e.timestamp, level = e.level, message = e.message,
      fields = type(e.fields) == "table" and common.plain(e.fields) or {} }
  end
  return out
end

function M.execute(args, env)
  local conn = env:open()
  local v2 = conn.v2_routes == true
  if not v2 and (args.level or args.search or args.direction) then
    return nil, "--level, --search and --direction need the v2 logs route (a provider with the "
      .. "v2_routes capability)"
  end
  if args.search and #args.search > 256 then return nil, "--search is at most 256 characters" end
  local path, query
  if v2 then
    path = "/v2/sandboxes/" .. envd.quote(args.id) .. "/logs"
    query = query_string({ { "cursor", args.since }, { "limit", args.limit },
      { "direction", args.direction }, { "level", args.level }, { "search", args.search } })
  else
    path = "/sandboxes/" .. envd.quote(args.id) .. "/logs"
    query = query_string({ { "start", args.since }, { "limit", args.limit } })
  end
  local resp, request = conn:_call("GET", path, query, nil, true)
  if resp.status ~= 200 then errmap.raise_api(resp, request, "SandboxNotFound") end
  local body = errmap.decode_ok(resp, request)
  local logs = entries(v2 and body.logs or body.logEntries, request)
  env:emit({ sandbox_id = args.id, route = "GET " .. path, logs = logs }, function()
    local lines = {}
    for _, e in ipairs(logs) do
      lines[#lines + 1] = string.format("%s %-5s %s", e.timestamp, tostring(e.level), e.message)
    end
    return table.concat(lines, "\n")
  end)
  return 0
end

return M
