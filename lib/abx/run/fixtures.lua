-- abx.run.fixtures: the per-test context (ctx), user fixtures with their scopes, and teardown.
--   ctx.base_sandbox       created on first access (template from config), killed after the test
--   ctx.code_sandbox       likewise, template E2E_CODE_TEMPLATE (default code-interpreter-v1)
--   ctx.server_sandbox     likewise, template E2E_SERVER_TEMPLATE (default python-hello)
--   ctx.template_sandbox   in a template folder's script: a sandbox of that folder's template
--                          (after the run deployed it; a test's, or a file-scoped fixture's
--                          to share one among the script's tests); the three template fixtures skip the
--                          test, naming the template, when the provider lacks it and the run
--                          did not build it
--   ctx.sandbox_factory(o) creates a tracked sandbox with options `o` (as conn:create)
--   ctx.workdir            a fresh directory in base_sandbox, created on first access
--   ctx.conn, ctx.run_id, ctx.test_name, ctx.scope ("test")
--   ctx.finally(fn)        runs fn at teardown (last registered runs first)
--   ctx.<name>             a user fixture (t.fixture): made on first access, then cached for its
--                          scope: "test" (this test), "file" (the tests of one file; torn down
--                          after the file's last test) or "run" (torn down at the end of the run,
--                          before the cleanup sweep)
-- Every sandbox is tagged e2e=<run id> by the connection and registered with the run's tracker.
--
-- Scopes and slots. A file- or run-scoped fixture is made by the first test that asks for it
-- (others asking meanwhile wait for it) with a context of its own (a "scope context": conn,
-- run_id, scope, finally, sandbox_factory, base_sandbox, code_sandbox, server_sandbox and the user
-- fixtures of the same or a wider scope). Its sandboxes belong to a tracker owner of its own, not
-- to the test: they hold their max_sandboxes slots once for the whole scope (however many tests
-- use them), are not killed by the test's teardown, and are killed when the scope ends. A fixture
-- that fails (or skips) is not made again in its scope: every test asking for it gets the same
-- error, as in pytest; only an error that is the asking test's own deadline or interrupt is not
-- kept (the next test tries again).
local core = require("abx.core")
local suggest = require("abx.suggest")
local provider = require("abx.run.provider")
local measure = require("abx.run.measure")

local M = {}

-- Names that ctx already has: a user fixture may not take one.
M.BUILTINS = { "base_sandbox", "code_sandbox", "server_sandbox", "template_sandbox",
  "sandbox_factory", "workdir", "conn", "run_id", "test_name", "scope", "finally", "provider" }
M.BUILTIN_SET = {}
for _, n in ipairs(M.BUILTINS) do M.BUILTIN_SET[n] = true end
-- Other frameworks' names for what ctx has (pytest's tmp_path, an SDK's `sandbox`), for the
-- "did you mean" of an unknown ctx field.
local FIXTURE_ALIASES = { sandbox = "base_sandbox", sbx = "base_sandbox", connection = "conn",
  factory = "sandbox_factory", create_sandbox = "sandbox_factory", code_interpreter = "code_sandbox",
  name = "test_name", defer = "finally", cleanup = "finally", addCleanup = "finally",
  tmp_path = "workdir", tmpdir = "workdir" }
-- Fixture scopes, narrowest first (a fixture may use fixtures of its own scope or a wider one).
M.SCOPES = { "test", "file", "run" }
local WIDTH = { test = 1, file = 2, run = 3 }
M.SCOPE_SET = WIDTH

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
  { "scope", "string", "\"test\" in a test; a scoped fixture's context has its scope (\"file\" or \"run\")" },
  { "finally", "fun(fn: fun())", "runs fn at teardown (the last registered runs first)" },
  { "provider", "table", "the run's provider: {name, kind (\"local\" or \"remote\"), flavor?, "
    .. "tls, base_url? (a local platform's http(s)://127.0.0.1:PORT), ca_cert? (its CA file, with "
    .. "TLS)}" },
}

---The template a lazy fixture creates its sandbox from.
---@param fixture string "code_sandbox" or "server_sandbox"
---@return string
function M.template(fixture)
  local var, default = M.TEMPLATES[fixture][1], M.TEMPLATES[fixture][2]
  return (provider.lookup(var)) or default
end

-- Calls fn(...) with `owner` as the running task's slot owner, so that every sandbox created
-- meanwhile (through the run connection's hooks, abx.run.tracker) belongs to it.
local function as_owner(run, owner, fn, ...)
  local task = core.current()
  local prev = run.owners[task]
  run.owners[task] = owner
  local r = table.pack(pcall(fn, ...))
  run.owners[task] = prev
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
end

-- The errors of the asking test itself, never kept as a fixture's failure.
local function own_stop(err)
  if not core.is_error(err) then return false end
  if err.kind == "Interrupted" then return true end
  return err.kind == "Timeout" and tostring(err.message):find("deadline passed", 1, true) ~= nil
end

local make_ctx

-- The scopes of the run: per file, the fixtures made for it and the tests still to finish.
local function scopes(run)
  if not run.scopes then
    run.scopes = { files = {}, run = { insts = {}, order = {}, name = "run" } }
  end
  return run.scopes
end

local function file_scope(run, path)
  local s = scopes(run)
  local f = s.files[path]
  if not f then
    f = { insts = {}, order = {}, remaining = 0, name = path }
    s.files[path] = f
  end
  return f
end

-- The instance of a file- or run-scoped fixture for `file`, made on first use. Raises what the
-- fixture raised (the same error for every later user).
local function scoped_value(run, def, file, test)
  local scope = def.scope == "run" and scopes(run).run or file_scope(run, file)
  local inst = scope.insts[def]
  while inst and inst.state == "creating" do
    if inst.creator == core.current() then
      core.error("InvalidArgument", 0, string.format("fixture %q uses itself (a cycle through "
        .. "its fixtures)", def.name))
    end
    local w = { task = core.current(), waiting = true }
    inst.waiters[#inst.waiters + 1] = w
    local ok, err = pcall(core.park)
    w.waiting = false
    if not ok then error(err, 0) end
    inst = scope.insts[def]
  end
  if inst then
    if inst.state == "failed" then error(inst.err, 0) end
    return inst.value
  end
  inst = { def = def, state = "creating", creator = core.current(), waiters = {},
    finalizers = {}, sandboxes = {}, scope = scope }
  inst.owner = run.tracker and run.tracker:owner(string.format("fixture %s (scope %s, %s)",
    def.name, def.scope, def.where), def.sandboxes, def.scope)
  scope.insts[def] = inst
  local ctx = make_ctx(run, inst, { scope = def.scope, file = file, defs = test.fixtures or {},
    test = test })
  local res = table.pack(pcall(as_owner, run, inst.owner, def.fn, ctx))
  local waiters = inst.waiters
  inst.waiters = {}
  if res[1] then
    local teardown = res[3]
    if teardown ~= nil and type(teardown) ~= "function" then
      res = { false, core.new_error("InvalidArgument", 0, string.format("fixture %q (%s): its "
        .. "function returned a %s as the second value; that is its teardown: a function or "
        .. "nothing", def.name, def.where, type(teardown))) }
    else
      inst.value, inst.teardown, inst.state = res[2], teardown, "ready"
    end
  end
  if not res[1] then
    if own_stop(res[2]) then
      -- the asking test ran out of time: the fixture was not made and the next test tries
      -- again; what it made so far is torn down with the scope (this test can no longer wait)
      scope.insts[def] = nil
      inst.state = "abandoned"
    else
      inst.state, inst.err = "failed", res[2]
    end
  end
  scope.order[#scope.order + 1] = inst
  for _, w in ipairs(waiters) do
    if w.waiting then core.unpark(w.task) end
  end
  if not res[1] then error(res[2], 0) end
  return inst.value
end

-- A test-scoped user fixture: made with the test's ctx; its teardown runs with the test's
-- finalizers (it is registered after the fixture's own ctx.finally calls, so it runs before them).
local function test_value(state, def)
  if state.creating[def] then
    core.error("InvalidArgument", 0, string.format("fixture %q uses itself (a cycle through its "
      .. "fixtures)", def.name))
  end
  state.creating[def] = true
  local ok, v, teardown = pcall(def.fn, state.ctx)
  state.creating[def] = nil
  if not ok then error(v, 0) end
  if teardown ~= nil then
    if type(teardown) ~= "function" then
      core.error("InvalidArgument", 0, string.format("fixture %q (%s): its function returned a "
        .. "%s as the second value; that is its teardown: a function or nothing", def.name,
        def.where, type(teardown)))
    end
    state.finalizers[#state.finalizers + 1] = teardown
  end
  return v
end

-- ctx.sandbox_factory(o): a sandbox of the run's connection with the run's default template and
-- TTL, owned by `state` (a test's, or a scoped fixture instance's).
local function sandbox_factory(run, state, scope)
  local function create(o)
    return run.conn:create(o)
  end
  return function(o0)
    local opts0 = require("abx.client.options").check("conn:create", o0, "ctx.sandbox_factory")
    local o = {}
    for k, v in pairs(opts0) do o[k] = v end
    o.template = o.template or run.defaults.template
    o.timeout = o.timeout or run.defaults.sandbox_ttl
    -- the connection's hooks take the slot for this test (or this scoped fixture) and track the
    -- sandbox (abx.run.tracker)
    local sbx
    if state.owner and scope ~= "test" then sbx = as_owner(run, state.owner, create, o)
    else sbx = create(o) end
    state.sandboxes[#state.sandboxes + 1] = sbx
    return sbx
  end
end

-- A sandbox of a template the run may deploy itself: waits for that deploy; a failed one fails
-- the test with the build's error. A template the provider lacks (404 on create) skips the
-- test with the template's name, unless the run built it (then the 404 is a failure).
local function template_sandbox(run, ctx, name)
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
      -- a run that cannot build it says why first: the provider lacks templates_build
      local why = ""
      if not (run.capabilities or {}).templates_build then
        why = string.format("provider %s lacks capability templates_build, so the run cannot "
          .. "build it; ", run.provider_label or tostring(run.provider))
      end
      core.error("Skipped", 0, string.format("%stemplate %s is not on provider %s (%s); deploy it "
        .. "with `abxlua template deploy %s` or run its folder scenarios/templates/%s",
        why, name, tostring(run.provider), sbx.message, name, name))
    end
    error(sbx, 0)
  end
  -- from the create request (after its slot was granted) to the sandbox handed out ready
  local owner = run.owners and run.owners[core.current()]
  if reg then reg:ready_time(name, core.now() - (owner and owner.create_started or t0)) end
  return sbx
end

-- The built-in fixtures made on first access (name -> maker); their misuse errors point at the
-- access (level 3: the maker, ctx's __index, the access).
local function lazy_fixtures(run, ctx, test, scope)
  return {
    base_sandbox = function() return ctx.sandbox_factory({}) end,
    code_sandbox = function() return template_sandbox(run, ctx, M.template("code_sandbox")) end,
    server_sandbox = function() return template_sandbox(run, ctx, M.template("server_sandbox")) end,
    template_sandbox = function()
      -- a file scope is one script's, so one folder's template; a run scope spans folders
      if scope == "run" then
        error("ctx.template_sandbox is a template folder's: a test's or a file-scoped "
          .. "fixture's, not a run-scoped one's", 3)
      end
      if not test.recipe then
        error("ctx.template_sandbox is a template folder's fixture: only the tests of "
          .. "scenarios/templates/<name>/<name>.lua have it (a sandbox of <name>)", 3)
      end
      return template_sandbox(run, ctx, test.recipe.name)
    end,
    test_name = function()
      error("ctx.test_name is a test's; a " .. scope .. "-scoped fixture serves several tests", 3)
    end,
    workdir = function()
      if scope ~= "test" then
        error("ctx.workdir is a test's fixture (a directory per test), not a " .. scope
          .. "-scoped one's", 3)
      end
      local sbx = ctx.base_sandbox
      local dir = "/home/user/e2e-" .. run.run_id .. "/t" .. test.index
      sbx.files:make_dir(dir)
      return dir
    end,
  }
end

-- Raises the error of an access to a fixture ctx does not have, naming the fixtures it has (the
-- built-in ones and the file's `defs`); level 3 points at the access (through ctx's __index).
local function unknown_fixture(k, defs)
  local user = {}
  for n in pairs(defs) do user[#user + 1] = n end
  table.sort(user)
  local all = {}
  for _, n in ipairs(M.BUILTINS) do all[#all + 1] = n end
  for _, n in ipairs(user) do all[#all + 1] = n end
  error("ctx has no fixture " .. tostring(k) .. suggest.hint(k, all, FIXTURE_ALIASES, "ctx.%s")
    .. " (fixtures: base_sandbox, code_sandbox, "
    .. "server_sandbox, template_sandbox, sandbox_factory, workdir, conn, run_id, test_name, "
    .. "scope, finally, provider" .. (#user > 0 and ("; this file's: " .. table.concat(user, ", "))
    or "") .. ")", 3)
end

-- The value of user fixture `def` (named k) in a `scope` context, made once per context: a
-- narrower fixture cannot serve a wider one.
local function user_fixture(run, state, opts, k, def)
  local memo = state.values[k]
  if memo then return memo[1] end
  local scope = opts.scope
  if WIDTH[def.scope] < WIDTH[scope] then
    core.error("InvalidArgument", 0, string.format("fixture %q has scope %s: a %s-scoped "
      .. "fixture cannot use it (the %s-scoped one outlives one %s; valid scopes, narrowest "
      .. "first: %s)", k, def.scope, scope, scope, def.scope, table.concat(M.SCOPES, ", ")))
  end
  local v
  if def.scope == "test" then v = test_value(state, def)
  else v = scoped_value(run, def, opts.file, opts.test) end
  state.values[k] = { v }
  return v
end

-- Builds a ctx. `state` holds its finalizers and sandboxes (a test's, or a scoped fixture
-- instance's); opts: { scope = "test"|"file"|"run", test = the test (the one asking, for a
-- scope context), file = its path, defs = the user fixtures visible there (name -> def) }.
make_ctx = function(run, state, opts)
  local test, scope = opts.test, opts.scope
  state.values, state.creating = {}, {}
  local ctx = { conn = run.conn, run_id = run.run_id, scope = scope,
    provider = run.provider_info or { name = run.provider, kind = run.provider_kind, tls = false } }
  if scope == "test" then ctx.test_name = test.name end

  function ctx.finally(fn)
    if type(fn) ~= "function" then error("ctx.finally needs a function", 2) end
    state.finalizers[#state.finalizers + 1] = fn
  end
  ctx.sandbox_factory = sandbox_factory(run, state, scope)

  local lazy = lazy_fixtures(run, ctx, test, scope)
  state.ctx = ctx
  local defs = opts.defs or {}
  return setmetatable(ctx, {
    __index = function(t, k)
      local def = defs[k]
      if def then return user_fixture(run, state, opts, k, def) end
      local make = lazy[k]
      if not make then unknown_fixture(k, defs) end
      local v = make()
      rawset(t, k, v)
      return v
    end,
  })
end

---Creates the context for one test.
---@param test table the collected test
---@param run table the run: { conn, tracker, defaults, run_id, owners }
---@return table ctx, table state (for M.body and M.teardown)
function M.new(test, run)
  local state = { finalizers = {}, sandboxes = {}, owner = run.owners and run.owners[core.current()],
    test = test }
  local ctx = make_ctx(run, state, { scope = "test", test = test, file = test.file,
    defs = test.fixtures })
  return ctx, state
end

---The function the runner calls as the test: its file's before_each hooks (in declaration order),
---then the test. When every before_each returned, the after_each hooks run at teardown.
---@param test table
---@param state table from M.new
---@return function body(ctx)
function M.body(test, state)
  local before = test.before_each or {}
  local thresholds = test.opts.thresholds
  if #before == 0 and #(test.after_each or {}) == 0 and not thresholds then
    return function(ctx)
      measure.begin(core.current()) -- t.measure records on the test (abx.run.measure)
      return test.fn(ctx)
    end
  end
  return function(ctx)
    measure.begin(core.current())
    for _, hook in ipairs(before) do hook(ctx) end
    state.hooks_ran = true
    test.fn(ctx)
    if thresholds then -- k6's thresholds, once the body returned (abx.run.measure)
      local source = test.file .. ":" .. tostring(test.line)
      local list, held = measure.evaluate(measure.check_option(thresholds),
        measure.peek(core.current()), source)
      state.thresholds = list
      if not held then
        local crossed = {}
        for _, e in ipairs(list) do
          if not e.ok then crossed[#crossed + 1] = measure.describe(e) end
        end
        core.error("Threshold", 0, table.concat(crossed, "; "), { where = source })
      end
    end
  end
end

---Runs the test's after_each hooks (newest first, when its before_each hooks all ran), its
---finalizers (newest first) and kills its sandboxes. Never raises.
---@return table errors list of { phase, message }
function M.teardown(state, run)
  local errors = {}
  local test = state.test
  if test and (state.hooks_ran or #(test.before_each or {}) == 0) then
    local after = test.after_each or {}
    for i = #after, 1, -1 do
      local ok, err = xpcall(after[i], debug.traceback, state.ctx)
      if not ok then errors[#errors + 1] = { phase = "after_each", message = tostring(err) } end
    end
  end
  for i = #state.finalizers, 1, -1 do
    local ok, err = xpcall(state.finalizers[i], debug.traceback)
    if not ok then errors[#errors + 1] = { phase = "finally", message = tostring(err) } end
  end
  -- every sandbox the test created and that is still alive, through a fixture or ctx.conn
  -- (a sandbox it killed itself is not killed again); a failed test's under --keep-failed are
  -- kept instead (abx.run.keep; state.keep is its node id, set by the runner)
  local owned = state.owner and run.tracker:owned(state.owner) or state.sandboxes
  if state.keep and #owned > 0 then
    for _, e in ipairs(require("abx.run.keep").keep(run, owned, state.keep)) do
      errors[#errors + 1] = e
    end
    return errors
  end
  for i = #owned, 1, -1 do
    local ok, err = pcall(run.tracker.kill, run.tracker, owned[i])
    if not ok then
      errors[#errors + 1] = { phase = "kill " .. owned[i].id, message = tostring(err) }
    end
  end
  return errors
end

---Tears down one file- or run-scoped fixture: its teardown function, its ctx.finally functions
---(newest first), then its sandboxes are killed and its slots given back. Never raises.
---@return table errors list of { phase, message }
function M.teardown_instance(inst, run)
  local errors = {}
  local name = inst.def.name
  if inst.teardown then
    local ok, err = xpcall(inst.teardown, debug.traceback)
    if not ok then errors[#errors + 1] = { phase = "fixture " .. name, message = tostring(err) } end
  end
  for i = #inst.finalizers, 1, -1 do
    local ok, err = xpcall(inst.finalizers[i], debug.traceback)
    if not ok then
      errors[#errors + 1] = { phase = "fixture " .. name .. " finally", message = tostring(err) }
    end
  end
  if run.tracker and inst.owner then
    local owned = run.tracker:owned(inst.owner)
    for i = #owned, 1, -1 do
      local ok, err = pcall(run.tracker.kill, run.tracker, owned[i])
      if not ok then
        errors[#errors + 1] = { phase = "fixture " .. name .. " kill " .. owned[i].id,
          message = tostring(err) }
      end
    end
    run.tracker:finish(inst.owner)
  end
  return errors
end

-- Tears down a scope's fixtures, newest first. Returns the errors.
local function close_scope(scope, run)
  local errors = {}
  for i = #scope.order, 1, -1 do
    local inst = scope.order[i]
    -- like a test's teardown: to its end after an interrupt too; only its own deadline stops it
    local _, errs = core.guard(require("abx.run.limits").phase_opts("fixture teardown",
      "teardown_timeout", run, false), function(e)
        return { { phase = "fixture " .. inst.def.name, message = core.is_error(e) and e.message
          or tostring(e) } }
      end, M.teardown_instance, inst, run)
    for _, e in ipairs(errs or {}) do errors[#errors + 1] = e end
  end
  scope.order, scope.insts = {}, {}
  return errors
end

---Before the tests start: counts each file's tests, so that its scope ends with its last one.
---@param run table
---@param tests table[] the tests to run, in order
function M.prepare(run, tests)
  for _, t in ipairs(tests) do
    local f = file_scope(run, t.file)
    f.remaining = f.remaining + 1
  end
end

---After a test (whatever its outcome, skipped too): when it was its file's last, the file's
---fixtures are torn down now and their errors become teardown errors of this test's result.
---@param run table
---@param test table
---@param result table the test's result (teardown_errors may be added)
function M.test_done(run, test, result)
  local f = file_scope(run, test.file)
  f.remaining = f.remaining - 1
  f.last = result
  scopes(run).run.last = result
  if f.remaining > 0 or #f.order == 0 then return end
  local errs = close_scope(f, run)
  if #errs > 0 then
    result.teardown_errors = result.teardown_errors or {}
    for _, e in ipairs(errs) do result.teardown_errors[#result.teardown_errors + 1] = e end
  end
end

---At the end of the run (after an interrupt or -x too), before the cleanup sweep: the file scopes
---still open (tests that did not run), then the run-scoped fixtures. Their errors become teardown
---errors of the last test that ran in that scope, each printed as an ERROR line through `out`.
---@param run table
---@param out table the console (abx.run.console)
function M.end_run(run, out)
  if not run.scopes then return end
  local function report(scope, errs)
    local r = scope.last or run.scopes.run.last
    if #errs == 0 or not r then return end
    r.teardown_errors = r.teardown_errors or {}
    local had = #r.teardown_errors > 0
    for _, e in ipairs(errs) do
      r.teardown_errors[#r.teardown_errors + 1] = e
      out:line(out:paint("error", "ERROR") .. "    " .. r.test.file .. "::" .. r.test.name
        .. " (teardown, " .. e.phase .. "): " .. e.message)
    end
    -- the run counted this result before it had teardown errors (abx.run.tally)
    if not had and run.counts then run.counts:teardown_error_added() end
  end
  local paths = {}
  for path in pairs(run.scopes.files) do paths[#paths + 1] = path end
  table.sort(paths)
  for _, path in ipairs(paths) do
    local f = run.scopes.files[path]
    if #f.order > 0 then report(f, close_scope(f, run)) end
  end
  report(run.scopes.run, close_scope(run.scopes.run, run))
end

return M
