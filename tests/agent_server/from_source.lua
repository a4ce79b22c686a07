-- from_source: scenarios/06_server_sdk.lua and the python-hello template script, run against
-- base sandboxes into which this file uploads scenarios/templates/python-hello/server/server.py
-- and starts it as the recipe's start_cmd does (as root, the sandbox's env vars, in its own
-- session), then waits for its /health as ready_cmd does. So the server and its client
-- (lib/abx/client/server.lua) are tested by `make test` without building the template; the
-- built template runs the same scenario through ctx.server_sandbox.
-- The same test functions run: t.test is wrapped while the two files load, and each test sees a
-- ctx whose server_sandbox / template_sandbox (and sandbox_factory for the server template) give
-- such a sandbox; every other fixture is the real one.
-- args: -j 2
local t = require("abx.test")
local fixtures = require("abx.fixtures")

local SOURCE = "scenarios/templates/python-hello/server/server.py"
local START_CMD = "python3 /opt/agent-server/server.py"

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end
local server_py = read(SOURCE)
t.ok(read("scenarios/templates/python-hello/template.yaml"):find(START_CMD, 1, true),
  "the recipe's start_cmd is the one this file runs")

--- Uploads and starts the server in `sbx`; returns sbx once GET /health answers 200.
local function start(sbx)
  sbx.files:write("/opt/agent-server/server.py", server_py, { user = "root" })
  local r = sbx.commands:run("mkdir -p /var/log/abx && setsid " .. START_CMD
    .. " >>/var/log/abx/start_cmd.log 2>&1 </dev/null & echo started", { user = "root" })
  t.eq(r.exit_code, 0, "starting the server: " .. r.stderr)
  t.eventually(function()
    local h = sbx.commands:run("curl -s -o /dev/null -w '%{http_code}' http://localhost:8080/health")
    t.eq(h.stdout, "200", "the server's /health")
  end, { timeout = 30, interval = 0.2 })
  return sbx
end

local function wrap(fn)
  return function(ctx)
    local made = {}
    local function server_box(opts)
      local o = {}
      for k, v in pairs(opts or {}) do o[k] = v end
      o.template = "base"
      return start(ctx.sandbox_factory(o))
    end
    local proxy = setmetatable({}, {
      __index = function(_, k)
        if k == "server_sandbox" or k == "template_sandbox" then
          made[k] = made[k] or server_box({})
          return made[k]
        elseif k == "sandbox_factory" then
          return function(opts)
            if opts and opts.template == fixtures.template("server_sandbox") then
              return server_box(opts)
            end
            return ctx.sandbox_factory(opts)
          end
        end
        return ctx[k]
      end,
    })
    return fn(proxy)
  end
end

local real_test = t.test
local function load(path, prefix)
  t.test = function(name, opts, fn)
    if fn == nil then fn, opts = opts, {} end
    real_test(prefix .. name, opts, wrap(fn))
  end
  local ok, err = pcall(function()
    local chunk = assert(loadfile(path, "t", setmetatable({}, { __index = _ENV })))
    chunk()
  end)
  t.test = real_test
  if not ok then error(err, 0) end
end
load("scenarios/06_server_sdk.lua", "06: ")
load("scenarios/templates/python-hello/python-hello.lua", "python-hello: ")
