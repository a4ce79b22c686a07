-- abx.client.sandbox_wire: the control plane's JSON shapes for abx.client.sandbox, as pure functions: NewSandbox
-- request parts built from snake_case options, and SandboxDetail / ListedSandbox answers turned
-- into snake_case info tables. No I/O.
--
-- Errors: InvalidArgument (abx.client.errmap) for options of the wrong shape.
-- Source: docs/protocol/e2b-control-plane.md §3.2 (NewSandbox, SandboxNetworkConfig), §3.3 (Sandbox,
--         SandboxDetail, ListedSandbox), §3.4 (GET /v2/sandboxes metadata query), §5 (volumes).

local cjson = require("cjson")
local errmap = require("abx.client.errmap")
local envd = require("abx.client.envd")
local options = require("abx.client.options")

local wire = {}

local INFO = options.shape("SandboxInfo", "A sandbox's details (conn:get_info, sbx:get_info; "
  .. "conn:list items carry the ListedSandbox subset).", {
    { "sandbox_id", "string", "sandbox id" },
    { "template_id", "string", "template id" },
    { "alias", "string?", "template alias" },
    { "state", "string", "\"running\" or \"paused\"" },
    { "metadata", "table<string,string>", "metadata, with the run tag e2e" },
    { "started_at", "string", "RFC 3339 (sandbox.parse_time gives Unix seconds)" },
    { "end_at", "string", "RFC 3339: when the TTL ends (or when it was paused)" },
    { "envd_version", "string", "envd version" },
    { "cpu_count", "integer", "vCPUs" },
    { "memory_mb", "integer", "memory, MiB" },
    { "disk_size_mb", "integer?", "disk, MiB" },
    { "domain", "string?", "its domain (null while paused)" },
    { "allow_internet_access", "boolean?", "outbound internet allowed" },
    { "network", "table?", "{allow_public_traffic, allow_out, deny_out}" },
    { "lifecycle", "table?", "{auto_resume, on_timeout}" },
    { "volume_mounts", "table?", "{{name, path, read_only}}" },
    { "abx_network", "table?", "local platform only: {host_address, sandbox_address}" },
  })

--- The SandboxInfo shape, for the OpenSandbox adapter's infos (abx.client.opensandbox_wire).
wire.INFO = INFO

--- A list of strings for a JSON array field; nil (the field left out) when empty or nil, since
--- cjson encodes an empty table as `{}` and an omitted rule list means "none" (reference §3.2).
function wire.json_array(t)
  if t == nil then return nil end
  if type(t) ~= "table" then
    errmap.raise("InvalidArgument", 0, "expected an array of strings, got " .. type(t))
  end
  if #t == 0 then return nil end
  local a = {}
  for i, v in ipairs(t) do a[i] = tostring(v) end
  return a
end

--- The `network` object of NewSandbox (reference §3.2 SandboxNetworkConfig) from snake_case options.
function wire.network_body(n)
  if n == nil then return nil end
  if type(n) ~= "table" then errmap.raise("InvalidArgument", 0, "network must be a table") end
  local b = {}
  if n.allow_public_traffic ~= nil then b.allowPublicTraffic = n.allow_public_traffic and true or false end
  b.allowOut = wire.json_array(n.allow_out)
  b.denyOut = wire.json_array(n.deny_out)
  if n.mask_request_host then b.maskRequestHost = n.mask_request_host end
  return b
end

--- The `volumeMounts` array of NewSandbox (reference §3.2, §5): {{name=, path=, read_only=}}.
--- `readOnly` is sent only when read_only is set (the local platform's extension).
function wire.volume_mounts_body(vm)
  if vm == nil then return nil end
  if type(vm) ~= "table" then errmap.raise("InvalidArgument", 0, "volume_mounts must be an array") end
  local a = {}
  for i, m in ipairs(vm) do
    if type(m) ~= "table" or type(m.name) ~= "string" or type(m.path) ~= "string" then
      errmap.raise("InvalidArgument", 0, "volume_mounts[" .. i .. "] must be {name=, path=}")
    end
    a[i] = { name = m.name, path = m.path }
    if m.read_only ~= nil then a[i].readOnly = m.read_only and true or false end
  end
  return a
end

--- snake_case info table of a SandboxDetail / ListedSandbox (reference §3.3).
function wire.info_of(d)
  local function opt(v) if v == cjson.null then return nil end return v end
  return options.strict(INFO, {
    sandbox_id = d.sandboxID,
    template_id = d.templateID,
    alias = opt(d.alias),
    state = d.state,
    metadata = type(d.metadata) == "table" and d.metadata or {},
    started_at = d.startedAt,
    end_at = d.endAt,
    envd_version = d.envdVersion,
    cpu_count = math.tointeger(d.cpuCount) or d.cpuCount, -- cjson decodes numbers as floats
    memory_mb = math.tointeger(d.memoryMB) or d.memoryMB,
    disk_size_mb = math.tointeger(opt(d.diskSizeMB)) or opt(d.diskSizeMB),
    domain = opt(d.domain),
    allow_internet_access = opt(d.allowInternetAccess),
    network = type(d.network) == "table" and {
      allow_public_traffic = opt(d.network.allowPublicTraffic),
      allow_out = type(d.network.allowOut) == "table" and d.network.allowOut or {},
      deny_out = type(d.network.denyOut) == "table" and d.network.denyOut or {},
    } or nil,
    lifecycle = type(d.lifecycle) == "table" and {
      auto_resume = opt(d.lifecycle.autoResume), on_timeout = opt(d.lifecycle.onTimeout),
    } or nil,
    volume_mounts = type(d.volumeMounts) == "table" and (function()
      local a = {}
      for i, m in ipairs(d.volumeMounts) do
        a[i] = { name = m.name, path = m.path, read_only = opt(m.readOnly) }
      end
      return a
    end)() or nil,
    -- the local platform's extension (GET /sandboxes/{id}): the sandbox's own link, whose host side
    -- is the only address "outside" the sandbox that it may reach
    abx_network = type(d.abxNetwork) == "table" and {
      host_address = d.abxNetwork.hostAddress, sandbox_address = d.abxNetwork.sandboxAddress,
    } or nil,
  })
end

--- The `metadata` query value as the SDK builds it: `k=v&k2=v2` of percent-encoded keys and values;
--- the whole string is encoded again as the parameter value (reference §3.4, GET /v2/sandboxes).
function wire.metadata_query(md)
  local keys = {}
  for k in pairs(md) do keys[#keys + 1] = k end
  table.sort(keys)
  local kv = {}
  for _, k in ipairs(keys) do kv[#kv + 1] = { k, tostring(md[k]) } end
  return envd.query(kv)
end

return wire
