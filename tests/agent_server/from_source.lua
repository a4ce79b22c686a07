-- from_source: the scripts of the python-hello and node-web templates, and
-- scenarios/06_server_sdk.lua, run against base sandboxes into which this file applies the
-- template's recipe by hand, as E2B's v2 builds (and the local build API) run it: the steps'
-- user is `user` unless a step names one; each copy step's files are uploaded, owned by the
-- step's user or `user`, with its mode; each run step runs as its user or `user`; env steps
-- become the sandbox's env vars; then start_cmd is started as the template's user (`user`, its
-- own session, the sandbox's env vars) and ready_cmd ({url} or {port}) is polled. So the servers and the client sbx:server()
-- (lib/abx/client/server.lua) are tested by `make test` without the build API; the built
-- templates run the same scripts through ctx.server_sandbox / ctx.template_sandbox.
-- The same test functions run: t.test is wrapped while the files load, and each test sees a ctx
-- whose server_sandbox / template_sandbox (and sandbox_factory for the server template) give
-- such a sandbox; every other fixture is the real one. Only the step kinds these two recipes use
-- (copy, run, env) are applied; any other is an error naming it.
-- args: -j 2
local t = require("abx.test")
local fixtures = require("abx.fixtures")
local core = require("abx.core")

local ROOT = "scenarios/templates/"

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

--- The recipe of template `name`, turned into uploads, commands, envs, start and ready commands.
local function plan(name)
  local dir = ROOT .. name .. "/"
  local y = core.yaml_load(dir .. "template.yaml")
  assert(y.from == "base", name .. ": from_source applies recipes on base only")
  local p = { uploads = {}, runs = {}, envs = {}, start_cmd = y.start_cmd }
  for i, step in ipairs(y.steps or {}) do
    if step.copy then
      local src, dest = step.copy.src, step.copy.dest
      assert(src:sub(-1) == "/" and dest:sub(-1) == "/", name .. ": copy steps of directories only")
      for _, f in ipairs(core.list_files(dir .. src:sub(1, -2))) do
        local rel = f:sub(#dir + #src + 1)
        p.uploads[#p.uploads + 1] = { data = read(f), dest = dest .. rel, mode = step.copy.mode,
          owner = step.copy.user or "user" }
      end
    elseif step.run then
      p.runs[#p.runs + 1] = { cmd = step.run, user = step.user or "user" }
    elseif step.env then
      for k, v in pairs(step.env) do p.envs[k] = v end
    else
      error(name .. ": step " .. i .. " is not one from_source applies (copy, run, env)")
    end
  end
  local r = y.ready_cmd
  if type(r) == "table" and r.url then
    p.ready = "curl -s -o /dev/null -w '%{http_code}' " .. r.url .. " | grep -q 200"
  elseif type(r) == "table" and r.port then
    p.ready = string.format("[ -n \"$(ss -Htuln sport = :%d)\" ]", math.tointeger(r.port))
  else
    error(name .. ": ready_cmd must be {url} or {port} here")
  end
  return p
end

--- Applies plan `p` in `sbx` and starts its server; returns sbx once ready_cmd succeeds.
local function apply(sbx, p)
  for _, u in ipairs(p.uploads) do
    sbx.files:write(u.dest, u.data, { user = "root" })
    local r = sbx.commands:run("chown " .. u.owner .. ": '" .. u.dest .. "'"
      .. (u.mode and (" && chmod " .. u.mode .. " '" .. u.dest .. "'") or ""), { user = "root" })
    t.eq(r.exit_code, 0, "owner and mode of " .. u.dest .. ": " .. r.stderr)
  end
  for _, run in ipairs(p.runs) do
    local r = sbx.commands:run(run.cmd, { user = run.user })
    t.eq(r.exit_code, 0, "run step `" .. run.cmd .. "` as " .. run.user .. ": " .. r.stderr)
  end
  local r = sbx.commands:run("setsid " .. p.start_cmd
    .. " >>/tmp/start_cmd.log 2>&1 </dev/null & echo started", { user = "user" })
  t.eq(r.exit_code, 0, "starting `" .. p.start_cmd .. "`: " .. r.stderr)
  t.eventually(function()
    local h = sbx.commands:run(p.ready, { user = "user" })
    t.eq(h.exit_code, 0, "ready_cmd " .. p.ready .. "; start_cmd.log: "
      .. sbx.commands:run("tail -c 400 /tmp/start_cmd.log").stdout)
  end, { timeout = 30, interval = 0.2 })
  return sbx
end

local function wrap(fn, p, server_template)
  return function(ctx)
    local made = {}
    local function box(opts)
      local o = { envs = {} }
      for k, v in pairs(opts or {}) do o[k] = v end
      local envs = {}
      for k, v in pairs(p.envs) do envs[k] = v end
      for k, v in pairs(o.envs) do envs[k] = v end
      o.template, o.envs = "base", envs
      return apply(ctx.sandbox_factory(o), p)
    end
    local proxy = setmetatable({}, {
      __index = function(_, k)
        if k == "template_sandbox" or (server_template and k == "server_sandbox") then
          made[k] = made[k] or box({})
          return made[k]
        elseif k == "sandbox_factory" and server_template then
          return function(opts)
            if opts and opts.template == fixtures.template("server_sandbox") then return box(opts) end
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
local function load(path, template, prefix, server_template)
  local p = plan(template)
  t.test = function(name, opts, fn)
    if fn == nil then fn, opts = opts, {} end
    real_test(prefix .. name, opts, wrap(fn, p, server_template))
  end
  local ok, err = pcall(function()
    local chunk = assert(loadfile(path, "t", setmetatable({}, { __index = _ENV })))
    chunk()
  end)
  t.test = real_test
  if not ok then error(err, 0) end
end
load("scenarios/06_server_sdk.lua", "python-hello", "06: ", true)
load(ROOT .. "python-hello/python-hello.lua", "python-hello", "python-hello: ", true)
load(ROOT .. "node-web/node-web.lua", "node-web", "node-web: ", false)
