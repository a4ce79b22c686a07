-- abx.test: what scenario files require. `t.test` registers a test with the runner that is
-- collecting the file; the assertions come from abx.run.assert.
--
--   local t = require("abx.test")
--   t.test("kill twice returns false", { markers = { "e2e_slow" }, timeout = 120 }, function(ctx)
--     local sbx = ctx.sandbox_factory({ template = "base" })
--     t.eq(sbx:kill(), true)
--     t.eq(sbx:kill(), false)
--   end)
local core = require("abx.core")
local A = require("abx.run.assert")
local options = require("abx.client.options")
local suggest = require("abx.suggest")

local M = {}

-- The runner installs a collector while it loads a scenario file (collector(test_spec)).
local collector = nil

---Called by the runner around loading one file.
---@param fn function|nil
function M._set_collector(fn) collector = fn end

-- The options of t.test, declared like the client's (docs/API.md and types/abx list them); the
-- checks below raise collection errors (a Lua error at the test's line) rather than
-- InvalidArgument.
local TEST_OPTIONS = options.define("t.test", "Registers a test (the options table of t.test).", {
  { "markers", "string[]", "marker names registered under `markers:` in config/abxlua.yaml" },
  { "timeout", "number", "seconds the test may take (default the config's test_timeout)" },
  { "requires", "string[]", "capabilities the provider must have, else the test is skipped" },
  { "known_issue", "string", "a known issue's id (KI-NNN) from config/known_issues.yaml: a strict xfail" },
  { "raises", "string", "with known_issue: the error kind the known issue raises" },
  { "skip", "string", "skip the test with this reason" },
  { "sandboxes", "integer", "sandboxes the test holds at once (default 1), for max_sandboxes" },
  { "thresholds", "table", "k6-style criteria on the test's t.measure statistics: {\"p(95)<500\", "
    .. "\"rate<0.01\"} for every measurement, or {name = {...}}; a crossed one fails the test" },
})

---Registers a test. The test function gets ctx (the fixtures) and passes unless it raises.
---@param name string a sentence about the platform
---@param opts abx.opts.t_test|fun(ctx: abx.Ctx) the options, or the test function
---@param fn? fun(ctx: abx.Ctx)
---@overload fun(name: string, fn: fun(ctx: abx.Ctx))
---Raises: a Lua error (collection error) for a malformed declaration
function M.test(name, opts, fn)
  local info = debug.getinfo(2, "Sl")
  -- a tail call: error levels (here and in the collector) count from the scenario's frame
  return M._register(name, opts, fn, info and info.currentline or 0)
end

---The checks and registration of t.test, with the test's line given: a YAML scenario's tests
---(abx.run.declarative) are registered through here, at the line of their YAML entry.
---@param name string
---@param opts table|function
---@param fn? function
---@param line integer the line the reports give for the test
---@param level? integer the error level of a malformed declaration (default 2: the caller;
---  t.test tail-calls this, so that is the scenario)
function M._register(name, opts, fn, line, level)
  level = level or 2
  if fn == nil and type(opts) == "function" then
    fn, opts = opts, {}
  end
  if type(name) ~= "string" or name == "" then
    error("t.test: the first argument must be the test name (a non-empty string)", level)
  end
  if opts == nil or (type(opts) == "table" and fn == nil) then
    error("t.test(" .. name .. "): the test function is missing", level)
  end
  if type(opts) ~= "table" then error("t.test(" .. name .. "): options must be a table", level) end
  if type(fn) ~= "function" then error("t.test(" .. name .. "): the test function is missing", level) end
  for k, v in pairs(opts) do
    local o = TEST_OPTIONS.by_name[k]
    if not o then
      error(string.format("t.test(%q): unknown option %q%s (known: %s)", name, tostring(k),
        suggest.hint(k, TEST_OPTIONS.names, { marker = "markers", require = "requires",
          timeout_s = "timeout", xfail = "known_issue" }), table.concat(TEST_OPTIONS.names, ", ")),
        level)
    end
    if not options.type_ok(o.type, v) then
      error(string.format("t.test(%q): option %q must be %s", name, k,
        o.type == "string[]" and "an array of strings"
          or ((o.type:match("^[aeiou]") and "an " or "a ") .. o.type)), level)
    end
  end
  if opts.sandboxes ~= nil and (math.type(opts.sandboxes) ~= "integer" or opts.sandboxes < 1) then
    error(string.format("t.test(%q): option \"sandboxes\" must be a whole number >= 1 (the "
      .. "sandboxes the test holds at once)", name), level)
  end
  if opts.thresholds ~= nil then
    local ok, err = require("abx.run.measure").check_option(opts.thresholds)
    if not ok then error(string.format("t.test(%q): %s", name, err), level) end
  end
  if not collector then
    error("t.test must be called while abxlua collects a scenario file", level)
  end
  collector({ name = name, opts = opts, fn = fn, line = line })
end

local FIXTURE_KEYS = { scope = "string", sandboxes = "number" }

---Declares a fixture that the tests of this file (and of every file that requires the helper
---module declaring it) use as `ctx.<name>`: made on first access, then cached for its scope.
---`fn(ctx)` makes the value and may return a teardown function as its second value (or register
---teardown with ctx.finally); the teardown runs when the scope ends, newest first.
---  t.fixture("shared_sbx", { scope = "file" }, function(ctx)
---    local sbx = ctx.sandbox_factory({})
---    return sbx, function() print("done with " .. sbx.id) end
---  end)
---@param name string an identifier, not a built-in fixture's name (abx.run.fixtures.BUILTINS)
---@param opts table|function { scope = "test" (default) | "file" | "run", sandboxes = N (the
---  sandboxes a file- or run-scoped fixture holds at once; default 1) } or the function
---@param fn function|nil function(ctx) -> value, teardown?
---Raises: a Lua error (collection error) for a malformed declaration, naming the valid values
function M.fixture(name, opts, fn)
  local fixtures = require("abx.run.fixtures")
  if fn == nil and type(opts) == "function" then fn, opts = opts, {} end
  if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
    error("t.fixture: the first argument must be the fixture's name (an identifier: letters, "
      .. "digits and _), got " .. tostring(name), 2)
  end
  if fixtures.BUILTIN_SET[name] then
    error(string.format("t.fixture(%q): %q is a built-in fixture (built-in: %s); pick another name",
      name, name, table.concat(fixtures.BUILTINS, ", ")), 2)
  end
  if type(opts) ~= "table" then error(string.format("t.fixture(%q): options must be a table", name), 2) end
  if type(fn) ~= "function" then
    error(string.format("t.fixture(%q): the fixture function is missing", name), 2)
  end
  for k, v in pairs(opts) do
    if not FIXTURE_KEYS[k] then
      error(string.format("t.fixture(%q): unknown option %q%s (known: sandboxes, scope)", name,
        tostring(k), suggest.hint(k, { "sandboxes", "scope" })), 2)
    end
    if type(v) ~= FIXTURE_KEYS[k] then
      error(string.format("t.fixture(%q): option %q must be a %s", name, k, FIXTURE_KEYS[k]), 2)
    end
  end
  local scope = opts.scope or "test"
  if not fixtures.SCOPE_SET[scope] then
    error(string.format("t.fixture(%q): scope %q is not a fixture scope (valid: %s)", name,
      scope, table.concat(fixtures.SCOPES, ", ")), 2)
  end
  if opts.sandboxes ~= nil and (math.type(opts.sandboxes) ~= "integer" or opts.sandboxes < 1
      or scope == "test") then
    error(string.format("t.fixture(%q): option \"sandboxes\" must be a whole number >= 1, and "
      .. "only for scope file or run (a test-scoped fixture's sandboxes are the test's)", name), 2)
  end
  if not collector then
    error("t.fixture must be called while abxlua collects a scenario file", 2)
  end
  local info = debug.getinfo(2, "Sl")
  collector({ kind = "fixture", name = name, scope = scope, fn = fn, sandboxes = opts.sandboxes,
    where = (info and info.short_src or "?") .. ":" .. (info and info.currentline or 0) })
end

local function hook(kind)
  return function(fn)
    if type(fn) ~= "function" then error("t." .. kind .. " needs a function(ctx)", 2) end
    if not collector then
      error("t." .. kind .. " must be called while abxlua collects a scenario file", 2)
    end
    collector({ kind = kind, fn = fn })
  end
end

---Runs fn(ctx) before each test of this file (hooks in declaration order), inside the test: a
---failure fails the test, t.skip skips it.
---@param fn function function(ctx)
M.before_each = hook("before_each")

---Runs fn(ctx) after each test of this file (newest first), also when the test failed, before
---the test's ctx.finally functions and fixture teardowns; a failure is a teardown error of that
---test. It does not run when a before_each hook failed.
---@param fn function function(ctx)
M.after_each = hook("after_each")

M.eq, M.neq, M.ok, M.match, M.raises, M.fail = A.eq, A.neq, A.ok, A.match, A.raises, A.fail

---Skips the running test with a reason.
---@param reason? string shown in the report (default "skipped")
---Raises: an error of kind "Skipped" that the runner turns into the outcome "skipped"
function M.skip(reason)
  core.error("Skipped", 0, reason or "skipped")
end

---The value of a secret or setting a test needs and the run does not provide (an AI provider's
---key, say): the environment first, then `.env` in the working directory, then `scenarios/.env`
---(the same lookup as the provider's credentials, abx.run.provider.lookup). The value is
---registered as a secret, so it is masked in every output. nil when it is set nowhere: the test
---then calls t.skip naming it, e.g. "needs OPENAI_API_KEY (an AI provider key); not given".
---@param name string e.g. "OPENAI_API_KEY"
---@return string|nil
---Raises: a Lua error when name is not a non-empty string
function M.secret(name)
  if type(name) ~= "string" or name == "" then
    error("t.secret: the name must be a non-empty string", 2)
  end
  local v = require("abx.run.provider").lookup(name)
  if v then core.add_secret(v) end
  return v
end

---Runs fn(i) under load and returns the statistics of its iterations (abx.run.measure): times in
---ms (min, med, avg, max, p90, p95, p99), count, ok, failed, rate (failed / count), errors,
---samples. They are recorded on the test for its `thresholds` and the reports.
---  local s = t.measure("command", function() sbx.commands:run("true") end, { iterations = 50 })
---@param name string the measurement's name (thresholds = { name = {...} } names it)
---@param fn fun(i: integer) one iteration; an error is a failed iteration, never a time
---@param opts {iterations?: integer, duration?: number, concurrency?: integer, rate?: number}
---  iterations = N or duration = S (seconds); concurrency (default 1) at once; rate: starts per
---  second at most
---@return table stats
---Raises: a Lua error for bad options; the test's deadline or an interrupt, as they come
function M.measure(name, fn, opts)
  return require("abx.run.measure").measure(name, fn, opts)
end

---Calls fn until it returns without raising, at most `timeout` seconds, sleeping `interval`
---between tries. For eventually consistent operations only (listing, start-up).
---@param fn function
---@param opts? {timeout?: number, interval?: number} seconds: give up after timeout (default
---  30), sleep interval between tries (default 0.5)
---@return any ... the results of the successful call
---Raises: the last error of fn when the time is up
function M.eventually(fn, opts)
  opts = opts or {}
  local deadline = core.now() + (opts.timeout or 30)
  local interval = opts.interval or 0.5
  while true do
    local res = table.pack(pcall(fn))
    if res[1] then return table.unpack(res, 2, res.n) end
    local err = res[2]
    if core.is_error(err) and err.kind == "Timeout" and err.message:find("deadline passed", 1, true) then
      error(err, 0) -- the test's own deadline: stop retrying
    end
    if core.now() + interval > deadline then
      if core.is_error(err) then error(err, 0) end
      A.fail("eventually: gave up after " .. (opts.timeout or 30) .. " s: " .. tostring(err), 2)
    end
    core.sleep(interval)
  end
end

-- What other test frameworks call abx.test's functions (busted, luaunit, pytest, Jest, node:test,
-- unittest): `t.equal(1, 1)` names t.eq instead of calling nil.
local ALIASES = {
  equal = "eq", equals = "eq", assertEqual = "eq", assertEquals = "eq", assert_equal = "eq",
  assert_equals = "eq", same = "eq", deep_equal = "eq", deepEqual = "eq", strictEqual = "eq",
  is = "eq", toBe = "eq", toEqual = "eq", are_equal = "eq",
  not_equal = "neq", notEqual = "neq", ne = "neq", assertNotEqual = "neq", assert_not_equal = "neq",
  notStrictEqual = "neq",
  truthy = "ok", assert = "ok", is_true = "ok", isTrue = "ok", assertTrue = "ok",
  assert_true = "ok", assert_ok = "ok",
  matches = "match", like = "match", assertMatch = "match", assert_match = "match",
  throws = "raises", error = "raises", errors = "raises", assertRaises = "raises",
  assert_raises = "raises", assert_error = "raises", has_error = "raises", rejects = "raises",
  expect_error = "raises", toThrow = "raises",
  it = "test", describe = "test", case = "test", test_case = "test",
  setup = "before_each", before = "before_each", beforeEach = "before_each", setUp = "before_each",
  teardown = "after_each", after = "after_each", afterEach = "after_each", tearDown = "after_each",
  pending = "skip", skip_test = "skip", retry = "eventually", wait_for = "eventually",
  waitFor = "eventually", env = "secret", getenv = "secret",
}

-- abx.test fails closed: an unknown name (a typo, another framework's name) raises at the
-- scenario's line with the function meant, instead of returning nil for the call to fail on.
-- Private names (`_x`) read as nil.
setmetatable(M, { __index = function(_, k)
  if type(k) == "string" and k:sub(1, 1) == "_" then return nil end
  local names = {}
  for n in pairs(M) do
    if n:sub(1, 1) ~= "_" then names[#names + 1] = n end
  end
  table.sort(names)
  local near = suggest.nearest(k, names, ALIASES)
  error(string.format("abx.test has no '%s'%s (it has: %s)", tostring(k),
    near and ("; did you mean t." .. near .. "?") or "", table.concat(names, ", ")), 2)
end })

return M
