-- abx.client.opensandbox_egress: a sandbox's outbound rules on OpenSandbox's egress sidecar (its
-- policy API on port 18080, reached through the sandbox's endpoint like any port), mapped onto the
-- E2B client's network primitives. Sources: OpenSandbox @3bb6fad specs/egress-api.yaml
-- (NetworkPolicy {defaultAction, egress [{action, target}]}, GET /policy), components/egress/
-- policy_server.go (POST /policy replaces the whole policy; errors are text/plain), and
-- specs/sandbox-lifecycle.yml CreateSandboxRequest.networkPolicy.
--   E2B's rules -> a NetworkPolicy: allow_internet_access = false is defaultAction "deny" (else
--   "allow"); allow_out targets become allow rules, then deny_out targets deny rules (allow
--   first: E2B's allow beats deny, and the sidecar evaluates rules in order).
--   sbx:update_network  POST {endpoint 18080}/policy with that policy (E2B's PUT network replaces
--                       the rules: omitted is cleared).
--   sbx:get_info        adds network {allow_out, deny_out} and allow_internet_access from GET
--                       {endpoint 18080}/policy when the sidecar answers (else they stay nil).
--   conn:create         network {allow_out, deny_out} and allow_internet_access -> networkPolicy.
-- Errors: a 400 (text) is InvalidArgument, 404 (the ingress: sandbox gone) SandboxNotFound,
-- 401 Authentication, else as the status (abx.client.opensandbox_wire).

local core = require("abx.core")
local cjson = require("cjson")
local errmap = require("abx.client.errmap")
local options = require("abx.client.options")
local wire = require("abx.client.opensandbox_wire")

local M = {}

M.PORT = 18080 -- the egress sidecar's policy API

local function strings(t, what)
  if t == nil then return {} end
  if type(t) ~= "table" then
    errmap.raise("InvalidArgument", 0, what .. " must be an array of strings, got " .. type(t))
  end
  for i, v in ipairs(t) do
    if type(v) ~= "string" then
      errmap.raise("InvalidArgument", 0, string.format("%s[%d] must be a string", what, i))
    end
  end
  return t
end

--- The NetworkPolicy of E2B's outbound rules (see the file header).
--- Raises: InvalidArgument (not arrays of strings).
---@param allow_out? string[]
---@param deny_out? string[]
---@param internet? boolean allow_internet_access (nil: true)
---@return table NetworkPolicy (egress left out when empty: cjson has no empty array)
function M.policy(allow_out, deny_out, internet)
  local egress = {}
  for _, t in ipairs(strings(allow_out, "allow_out")) do egress[#egress + 1] = { action = "allow", target = t } end
  for _, t in ipairs(strings(deny_out, "deny_out")) do egress[#egress + 1] = { action = "deny", target = t } end
  return { defaultAction = internet == false and "deny" or "allow", egress = #egress > 0 and egress or nil }
end

--- E2B's fields of a NetworkPolicy: {network = {allow_out, deny_out}, allow_internet_access}.
--- Raises: Protocol (not a policy).
---@param pol table
---@return table network, boolean allow_internet_access
function M.fields_of(pol, status, request)
  if type(pol) ~= "table" or (pol.egress ~= nil and pol.egress ~= cjson.null and type(pol.egress) ~= "table") then
    errmap.raise_protocol(status, request, "a PolicyStatusResponse with policy {defaultAction, egress}")
  end
  local allow, deny = {}, {}
  for _, r in ipairs(type(pol.egress) == "table" and pol.egress or {}) do
    if r.action == "allow" then allow[#allow + 1] = r.target else deny[#deny + 1] = r.target end
  end
  return { allow_out = allow, deny_out = deny }, pol.defaultAction ~= "deny"
end

local function call(sbx, method, body)
  local url, h = sbx:_endpoint(M.PORT)
  h["Content-Type"] = "application/json"
  local request = method .. " " .. url .. "/policy"
  local resp = core.request({ method = method, url = url .. "/policy", headers = h,
    body = body and cjson.encode(body) or nil, timeout = sbx.conn.request_timeout })
  if resp.status ~= 200 then
    if resp.status == 400 then
      errmap.raise("InvalidArgument", 400, (resp.body or ""):gsub("%s+$", ""), { request = request })
    end
    wire.raise_error(resp, request, "SandboxNotFound")
  end
  return errmap.decode_ok(resp, request), resp.status, request
end

--- Replaces the sandbox's outbound rules: POST /policy on its egress sidecar.
--- Raises: InvalidArgument (400: a bad address), SandboxNotFound (gone), Authentication,
--- Protocol, Transport, Timeout.
---@param sbx table an OpenSandbox Sandbox
---@param opts? {allow_out?: string[], deny_out?: string[], allow_internet_access?: boolean}
function M.update(sbx, opts)
  opts = options.check("sbx:update_network", opts)
  call(sbx, "POST", M.policy(opts.allow_out, opts.deny_out, opts.allow_internet_access))
end

--- The sandbox's rules from GET /policy, or nil when the sidecar does not answer.
--- Raises: nothing (a failure is nil).
---@param sbx table
---@return table|nil network, boolean|nil allow_internet_access
function M.read(sbx)
  local ok, d, status, request = pcall(call, sbx, "GET")
  if not ok then return nil end
  local ok2, net, internet = pcall(M.fields_of, d.policy, status, request)
  if not ok2 then return nil end
  return net, internet
end

return M
