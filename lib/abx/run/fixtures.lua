-- abx.run.fixtures: the per-test context (ctx) and its teardown.
--   ctx.base_sandbox       created on first access (template from config), killed after the test
--   ctx.code_sandbox       likewise, template E2E_CODE_TEMPLATE (default code-interpreter-v1)
--   ctx.server_sandbox     likewise, template E2E_SERVER_TEMPLATE (default python-hello)
--   ctx.template_sandbox   in a template folder's script: a sandbox of that folder's template
--                          (after the run deployed it); the three template fixtures skip the
--                          test, naming the template, when the provider lacks it and the run
--                          did not build it
--   ctx.sandbox_factory(o) creates a tracked sandbox with options `o` (as conn:create)
--   ctx.workdir            a fresh directory in base_sandbox, created on first access
--   ctx.conn, ctx.run_id, ctx.test_name
--   ctx.finally(fn)        runs fn at teardown (last registered runs first)
-- Every sandbox is tagged e2e=<run id> by the connection and registered with the run's tracker.
local core = require("abx.core")
local provider = require("abx.run.provider")

local M = {}

-- Templates of the lazy fixtures: the variable (environment, then .env) or the default.
M.TEMPLATES = {
  code_sandbox = { "E2E_CODE_TEMPLATE", "code-interpreter-v1" },
  server_sandbox = { "E2E_SERVER_TEMPLATE", "python-hello" },
}

-- What ctx offers: { name, LuaLS type, description } each. types/abx/types_ctx.lua is generated
-- from it (`abxlua types --write`); tests/editor/fixtures_declared.lua checks that a ctx has
-- exactly these.
M.FIXTURES = {
  { "base_sandbox", "abx.Sandbox", "a sandbox of the default template, created on first access, "
    .. "killed after the test" },
  { "code_sandbox", "abx.Sandbox", "likewise, template E2E_CODE_TEMPLATE (default code-interpreter-v1)" },
  { "server_sandbox", "abx.Sandbox", "likewise, template E2E_SERVER_TEMPLATE (default python-hello)" },
  { "template_sandbox", "abx.Sandbox", "in a template folder's script: a sandbox of that folder's "
    .. "template (skips when the provider lacks it and the run did not build it)" },
  { "sandbox_factory", "fun(opts?: abx.opts.conn_create): abx.Sandbox", "creates a tracked sandbox "
    .. "(options as conn:create; template and timeout default from the config)" },
  { "workdir", "string", "a fresh directory in base_sandbox, created on first access" },
  { "conn", "abx.Connection", "the run's connection to the provider" },
  { "run_id", "string", "the run's id (every sandbox is tagged e2e=<run id>)" },
  { "test_name", "string", "the test's name" },
  { "finally", "fun(fn: fun())", "runs fn at teardown (the last registered runs first)" },
}

---The template a lazy fixture creates its sandbox from.
---@param fixture string "code_sandbox" or "server_sandbox"
---@return string
function M.template(fixture)
  local var, default = M.TEMPLATES[fixture][1], M.TEMPLATES[fixture][2]
  return (provider.lookup(var)) or default
end

---Creates the context for one test.
---@param test table the collected test
---@param run table the run: { conn, tracker, defaults, run_id }
function M.new(test, run)
  local state = { finalizers = {}, sandboxes = {}, owner = run.owners and run.owners[core.current()] }
  local ctx = { conn = run.conn, run_id = run.run_id, test_name = test.name }

  function ctx.finally(fn)
    if type(fn) ~= "function" then error("ctx.finally needs a function", 2) end
    state.finalizers[#state.finalizers + 1] = fn
  end

  function ctx.sandbox_factory(opts)
    opts = require("abx.client.options").check("conn:create", opts, "ctx.sandbox_factory")
    local o = {}
    for k, v in pairs(opts) do o[k] = v end
    o.template = o.template or run.defaults.template
    o.timeout = o.timeout or run.defaults.sandbox_ttl
    -- the connection's hooks take the slot for this test and track the sandbox (abx.run.tracker)
    local sbx = run.conn:create(o)
    state.sandboxes[#state.sandboxes + 1] = sbx
    return sbx
  end

  -- A sandbox of a template the run may deploy itself: waits for that deploy; a failed one fails
  -- the test with the build's error. A template the provider lacks (404 on create) skips the
  -- test with the template's name, unless the run built it (then the 404 is a failure).
  local function template_sandbox(name)
    local reg = run.templates
    local e = reg and reg:await(name)
    if e and e.state == "failed" then
      -- the log tail goes with the template's own tests; here the reason is enough
      core.error(e.error.kind, e.error.status or 0, "template " .. name .. " was not built: "
        .. tostring(e.error.message))
    end
    local t0 = core.now()
    local ok, sbx = pcall(ctx.sandbox_factory, { template = name })
    if not ok then
      if core.is_error(sbx) and sbx.kind == "NotFound" and not (e and e.state == "ready") then
        core.error("Skipped", 0, string.format("template %s is not on provider %s (%s); deploy it "
          .. "with `abxlua template deploy %s` or run its folder scenarios/templates/%s",
          name, tostring(run.provider), sbx.message, name, name))
      end
      error(sbx, 0)
    end
    -- from the create request (after its slot was granted) to the sandbox handed out ready
    local owner = run.owners and run.owners[core.current()]
    if reg then reg:ready_time(name, core.now() - (owner and owner.create_started or t0)) end
    return sbx
  end

  local lazy = {
    base_sandbox = function() return ctx.sandbox_factory({}) end,
    code_sandbox = function() return template_sandbox(M.template("code_sandbox")) end,
    server_sandbox = function() return template_sandbox(M.template("server_sandbox")) end,
    template_sandbox = function()
      if not test.recipe then
        error("ctx.template_sandbox is a template folder's fixture: only the tests of "
          .. "scenarios/templates/<name>/<name>.lua have it (a sandbox of <name>)", 3)
      end
      return template_sandbox(test.recipe.name)
    end,
    workdir = function()
      local sbx = ctx.base_sandbox
      local dir = "/home/user/e2e-" .. run.run_id .. "/t" .. test.index
      sbx.files:make_dir(dir)
      return dir
    end,
  }
  state.ctx = ctx
  return setmetatable(ctx, {
    __index = function(t, k)
      local make = lazy[k]
      if not make then
        error("ctx has no fixture " .. tostring(k) .. " (fixtures: base_sandbox, code_sandbox, "
          .. "server_sandbox, template_sandbox, sandbox_factory, workdir, conn, run_id, test_name, "
          .. "finally)", 2)
      end
      local v = make()
      rawset(t, k, v)
      return v
    end,
  }), state
end

---Runs the test's finalizers (newest first) and kills its sandboxes. Never raises.
---@return table errors list of { message, traceback }
function M.teardown(state, run)
  local errors = {}
  for i = #state.finalizers, 1, -1 do
    local ok, err = xpcall(state.finalizers[i], debug.traceback)
    if not ok then errors[#errors + 1] = { phase = "finally", message = tostring(err) } end
  end
  -- every sandbox the test created and that is still alive, through a fixture or ctx.conn
  -- (a sandbox it killed itself is not killed again)
  local owned = state.owner and run.tracker:owned(state.owner) or state.sandboxes
  for i = #owned, 1, -1 do
    local ok, err = pcall(run.tracker.kill, run.tracker, owned[i])
    if not ok then
      errors[#errors + 1] = { phase = "kill " .. owned[i].id, message = tostring(err) }
    end
  end
  return errors
end

return M
