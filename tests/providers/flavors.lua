-- Local flavours of the runner (run by tests/runner/run_case.sh from the source root; issue 12
-- part 5): `--flavor NAME` gives the local provider the semantics and capabilities of the remote
-- entry naming that flavour (abx.run.flavor), and refuses what it cannot mean. Pure functions over
-- the shipped config/abxlua.yaml and small YAML texts; no flavoured platform is started here (the
-- whole suite per flavour is `make test-flavors`).
-- Expected: 4 passed, exit 0.
-- expect-line: ^4 passed, 0 failed
local t = require("abx.test")
local config = require("abx.run.config")
local flavor = require("abx.run.flavor")

local cfg = config.load("config/abxlua.yaml")

local function message(fn)
  return t.raises("InvalidArgument", fn).message
end

local function sorted(list)
  local out = {}
  for i, v in ipairs(list) do out[i] = v end
  table.sort(out)
  return table.concat(out, ",")
end

t.test("every flavour maps to its cloud entry's semantics, routing and shared capabilities", function()
  for _, name in ipairs(flavor.NAMES) do
    local cname, cloud = flavor.cloud_entry(cfg, name)
    t.eq(cname, name, "the shipped config names flavour " .. name .. " on the provider of that name")
    local pname, q = config.provider(cfg, "local", name)
    t.eq(pname, "local")
    t.eq(q.kind, "local")
    t.eq(q.flavor, name)
    t.eq(q.flavor_of, name)
    for _, k in ipairs({ "protocol", "route_version", "pagination", "auth_header" }) do
      t.eq(q[k], cloud[k], name .. "." .. k)
    end
    t.eq(q.ttl, cloud.ttl, name .. ".ttl is the cloud entry's table")
    t.eq(q.envd_routing, name == "acs" and "path" or cloud.envd_routing, name .. " routing")
    -- the capabilities both have, in the cloud entry's order
    local want = {}
    for _, c in ipairs(cloud.capabilities) do
      if cfg.providers["local"].capability_set[c] then want[#want + 1] = c end
    end
    t.eq(table.concat(q.capabilities, ","), table.concat(want, ","), name .. " capabilities")
    for _, c in ipairs(want) do t.ok(q.capability_set[c], name .. " set has " .. c) end
  end
  -- the config's own local entry is not changed by a flavoured lookup
  t.eq(cfg.providers["local"].flavor, nil)
end)

t.test("the flavours' capabilities are the published differences", function()
  local function caps(name) return sorted(select(2, config.provider(cfg, "local", name)).capabilities) end
  -- default_user, exact_output, process_list: what envd does and execd does not,
  -- claimed by every entry with envd
  local envd_set = "default_user,e2b_api,env_vars,envd,exact_output,pause,"
  t.eq(caps("acs"), "api_key_check,connect_resume," .. envd_set .. "process_list,pty,snapshot,watch")
  t.eq(caps("cubesandbox"), "default_user,e2b_api,envd,exact_output,pause,"
    .. "process_list,pty,refresh,short_ttl,ttl_shorten,watch")
  t.eq(caps("alicloud-fc"), "api_key_check,code_display,code_interpreter,connect_resume,default_user,"
    .. "e2b_api,env_vars,envd,exact_output,metrics,process_list,pty,short_ttl,templates_build,"
    .. "ttl_shorten,watch")
  -- OpenSandbox's execd serves /code, but not display outputs (figures); it checks secureAccess's token
  t.eq(caps("opensandbox"), "access_token,api_key_check,code_interpreter,connect_resume,env_vars,"
    .. "metrics,network_update,pause,refresh,snapshot")
  -- code_interpreter is both e2b's and the local platform's (issue 23): in the flavour; CubeSandbox
  -- lacks it, so its flavour does too
  local _, e2b = config.provider(cfg, "local", "e2b")
  t.eq(e2b.capability_set.code_interpreter, true)
  t.eq(select(2, config.provider(cfg, "local", "cubesandbox")).capability_set.code_interpreter, nil)
  t.ok(e2b.capability_set.v2_routes)
  t.eq(e2b.route_version, "v2")
  local _, acs = config.provider(cfg, "local", "acs")
  t.eq(acs.route_version, "v1")
  t.eq(acs.ttl.min, 30)
end)

t.test("a bad flavour, a flavour on a remote or TLS provider, a flavour no entry names: refused", function()
  t.eq(message(function() config.provider(cfg, "local", "e2bb") end),
    "unknown --flavor \"e2bb\" (valid: e2b, alicloud-fc, alicloud-express, acs, cubesandbox, opensandbox)")
  t.eq(message(function() config.provider(cfg, "e2b", "acs") end), "--flavor applies to a kind "
    .. "local provider without tls (the embedded platform); provider e2b is kind remote")
  t.eq(message(function() config.provider(cfg, "local-tls", "acs") end), "--flavor applies to a "
    .. "kind local provider without tls (the embedded platform); provider local-tls is tls: true")
  local bare = config.load(nil) -- the built-in defaults: no remote entry names a flavour
  t.eq(message(function() config.provider(bare, "local", "acs") end), "--flavor acs: no remote "
    .. "provider in the config names `flavor: acs` (its semantics and capabilities are what the "
    .. "flavour is run with)")
end)

t.test("config: flavor is a remote key naming a known flavour", function()
  local function load_error(body)
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write("providers:\n  x:\n" .. body)
    f:close()
    local ok, err = pcall(config.load, path)
    os.remove(path)
    t.ok(not ok, "config.load refuses " .. body)
    return (tostring(err.message or err):gsub(path:gsub("%p", "%%%0"), "F"))
  end
  t.eq(load_error("    kind: local\n    flavor: acs\n"), "F: providers.x.flavor applies to kind "
    .. "remote only (it names the local flavour that reproduces this provider: run --provider "
    .. "local --flavor NAME)")
  t.eq(load_error("    kind: remote\n    flavor: kruise\n"), "F: providers.x.flavor must be one of "
    .. "e2b, alicloud-fc, alicloud-express, acs, cubesandbox, opensandbox, got kruise")
end)
