-- Runner case: abx.run.limits names every source of a test's limit (issue 22, item 3), without
-- waiting for one: the test's own `timeout =` (and a YAML test's `timeout:`), --timeout, the
-- config file's defaults.test_timeout, the built-in default (with and without a config file), and
-- a phase bounded by a default (teardown, template build).
-- Expected: 4 passed, exit 0.
local t = require("abx.test")
local limits = require("abx.run.limits")

local function run(origin, path, test_timeout)
  return { defaults = { test_timeout = test_timeout or 300, teardown_timeout = 60 },
    origin = origin, config_path = path }
end

t.test("the test's own timeout wins", function()
  local l = limits.test_limit({ file = "scenarios/a.lua", opts = { timeout = 3 } },
    run({ test_timeout = "--timeout" }, "config/abxlua.yaml", 9))
  t.eq(l.seconds, 3)
  t.eq(l.source, "test")
  t.eq(limits.guard_opts(l).limit, "the test ran 3 s, its limit (timeout = 3 on the test; change it there)")
  t.eq(limits.guard_opts(l).timeout, 3)
  local y = limits.test_limit({ file = "scenarios/b.yaml", opts = { timeout = 2.5 } }, run({}))
  t.eq(y.text, "its limit (timeout: 2.5 on the test; change it there)")
end)

t.test("--timeout and the config file", function()
  local f = limits.test_limit({ file = "a.lua", opts = {} }, run({ test_timeout = "--timeout" },
    "./config/abxlua.yaml", 30))
  t.eq(f.source, "--timeout")
  t.eq(f.text, "its limit (--timeout 30 on the command line; set timeout = N on the test or "
    .. "another --timeout S)")
  local c = limits.test_limit({ file = "a.lua", opts = {} }, run({ test_timeout = "config" },
    "./config/abxlua.yaml"))
  t.eq(limits.guard_opts(c).limit, "the test ran 300 s, its limit (defaults.test_timeout in "
    .. "config/abxlua.yaml; set timeout = N on the test or --timeout S)")
end)

t.test("the built-in default", function()
  local b = limits.test_limit({ file = "a.lua", opts = {} }, run({ test_timeout = "builtin" },
    "my.yaml"))
  t.eq(b.source, "builtin")
  t.eq(b.text, "its limit (the built-in default: defaults.test_timeout is not set in my.yaml; "
    .. "set timeout = N on the test, --timeout S or defaults.test_timeout in it)")
  local n = limits.test_limit({ file = "a.lua", opts = {} }, run(nil, nil))
  t.eq(n.text, "its limit (the built-in default: no config file was found; set timeout = N on "
    .. "the test, --timeout S or defaults.test_timeout in it)")
end)

t.test("a phase bounded by a default", function()
  local p = limits.phase_opts("teardown", "teardown_timeout", run({ teardown_timeout = "config" },
    "config/abxlua.yaml"), false)
  t.eq(p.timeout, 60)
  t.eq(p.interruptible, false)
  t.eq(p.limit, "the teardown ran 60 s, its limit (defaults.teardown_timeout in config/abxlua.yaml)")
  local q = limits.phase_opts("template build", "teardown_timeout", run({}, nil), true)
  t.eq(q.limit, "the template build ran 60 s, its limit (the built-in default; set "
    .. "defaults.teardown_timeout in the config)")
end)
