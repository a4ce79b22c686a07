-- abx.run.flavor: `--flavor NAME` on a `kind: local` provider: the run starts `abxlua serve
-- --flavor NAME` (platform/util/flavor.h: the routes, status codes, TTL rules and credential refusal of
-- that platform) and speaks to it with the wire semantics and capabilities of the configured cloud
-- provider that names the flavour (`flavor: NAME` on a remote entry of config/abxlua.yaml). So a
-- user learns from a local run which tests a platform would skip, and every adapter runs in CI
-- against real sandboxes (issue 12 part 5).
--
-- The capabilities of a flavoured run are the cloud entry's that the local platform also has
-- (both lists are published tables: config/abxlua.yaml's sources, docs/protocol/e2b-control-plane.md
-- §8 and docs/protocol/e2b-v2-and-peers.md §4-5); the semantics (protocol, route_version, ttl, create,
-- pagination, auth_header, envd_routing) are the cloud entry's.
local core = require("abx.core")

local M = {}

-- The flavours `abxlua serve --flavor` knows (platform/util/flavor.c abx_flavor_names; the test
-- providers:flavors checks that both lists agree).
M.NAMES = { "e2b", "alicloud-fc", "alicloud-express", "acs", "cubesandbox", "opensandbox" }

-- The control plane's base path under serve's URL per flavour: OpenKruise's sandbox-manager
-- under /kruise/api, CubeAPI under /cubeapi/v1 (docs/protocol/e2b-v2-and-peers.md §5; platform/util/flavor.c
-- `prefix`), OpenSandbox's lifecycle API under /v1 (§4, specs/sandbox-lifecycle.yml servers).
M.API_PATH = { acs = "/kruise/api", cubesandbox = "/cubeapi/v1", opensandbox = "/v1" }

-- The envd routing a flavour's run uses instead of its cloud entry's: ACS's path route
-- (<domain>/kruise/<id>/<port>), so the whole suite goes through it once; the other flavours
-- take the host route of their cloud entries.
M.ROUTING = { acs = "path" }

-- The semantics a flavoured local provider takes from its cloud entry.
M.SEMANTICS = { "protocol", "route_version", "ttl", "create", "pagination", "auth_header",
  "envd_routing" }

local function known(name)
  for _, n in ipairs(M.NAMES) do if n == name then return true end end
  return false
end

---The remote provider entry that names `flavor` (its `flavor:` key), with its name.
---@param cfg table a loaded config (abx.run.config.load)
---@param flavor string
---@return string|nil name, table|nil settings
function M.cloud_entry(cfg, flavor)
  local names = {}
  for n, p in pairs(cfg.providers) do
    if type(p) == "table" and p.kind == "remote" and p.flavor == flavor then names[#names + 1] = n end
  end
  table.sort(names)
  if #names == 0 then return nil end
  return names[1], cfg.providers[names[1]]
end

---The settings of local provider `name` run as `flavor`: a new table (kind local, flavor, the
---cloud entry's semantics, the capabilities both have). The config's own entry is not changed.
---Raises: InvalidArgument naming the valid flavours, a provider that is not `kind: local` or has
---`tls: true`, or a flavour no remote entry names.
---@param cfg table
---@param name string the local provider's name
---@param p table its settings (validated by abx.run.config)
---@param flavor string
---@return table settings
function M.apply(cfg, name, p, flavor)
  if not known(flavor) then
    core.error("InvalidArgument", 0, string.format("unknown --flavor %q (valid: %s)",
      tostring(flavor), table.concat(M.NAMES, ", ")))
  end
  if p.kind ~= "local" or p.tls then
    core.error("InvalidArgument", 0, string.format("--flavor applies to a kind local provider "
      .. "without tls (the embedded platform); provider %s is %s", name,
      p.kind ~= "local" and ("kind " .. tostring(p.kind)) or "tls: true"))
  end
  local cname, cloud = M.cloud_entry(cfg, flavor)
  if not cloud then
    core.error("InvalidArgument", 0, string.format("--flavor %s: no remote provider in %s names "
      .. "`flavor: %s` (its semantics and capabilities are what the flavour is run with)", flavor,
      cfg.path or "the config", flavor))
  end
  local q = { kind = "local", flavor = flavor, flavor_of = cname, domain = p.domain or "localhost",
    description = string.format("the embedded platform as %s (%s)", flavor,
      cloud.description or cname) }
  for _, k in ipairs(M.SEMANTICS) do q[k] = cloud[k] end
  q.envd_routing = M.ROUTING[flavor] or q.envd_routing or "host"
  local list, set = {}, {}
  for _, c in ipairs(cloud.capabilities or {}) do
    if (p.capability_set or {})[c] then list[#list + 1] = c; set[c] = true end
  end
  q.capabilities, q.capability_set = list, set
  if (q.route_version == "v2") ~= (set.v2_routes == true) then
    -- the cloud entry was validated: v2 without the capability cannot happen, but the local one
    -- may lack v2_routes; then the run speaks v1
    q.route_version = set.v2_routes and "v2" or "v1"
  end
  return q
end

return M
