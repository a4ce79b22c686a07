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
})

---Registers a test. The test function gets ctx (the fixtures) and passes unless it raises.
---@param name string a sentence about the platform
---@param opts abx.opts.t_test|fun(ctx: abx.Ctx) the options, or the test function
---@param fn? fun(ctx: abx.Ctx)
---@overload fun(name: string, fn: fun(ctx: abx.Ctx))
---Raises: a Lua error (collection error) for a malformed declaration
function M.test(name, opts, fn)
  if fn == nil and type(opts) == "function" then
    fn, opts = opts, {}
  end
  if type(name) ~= "string" or name == "" then
    error("t.test: the first argument must be the test name (a non-empty string)", 2)
  end
  if opts == nil or (type(opts) == "table" and fn == nil) then
    error("t.test(" .. name .. "): the test function is missing", 2)
  end
  if type(opts) ~= "table" then error("t.test(" .. name .. "): options must be a table", 2) end
  if type(fn) ~= "function" then error("t.test(" .. name .. "): the test function is missing", 2) end
  for k, v in pairs(opts) do
    local o = TEST_OPTIONS.by_name[k]
    if not o then
      error(string.format("t.test(%q): unknown option %q (known: %s)", name, tostring(k),
        table.concat(TEST_OPTIONS.names, ", ")), 2)
    end
    if not options.type_ok(o.type, v) then
      error(string.format("t.test(%q): option %q must be %s", name, k,
        o.type == "string[]" and "an array of strings" or ((o.type:match("^[aeiou]") and "an " or "a ") .. o.type)), 2)
    end
  end
  if opts.sandboxes ~= nil and (math.type(opts.sandboxes) ~= "integer" or opts.sandboxes < 1) then
    error(string.format("t.test(%q): option \"sandboxes\" must be a whole number >= 1 (the "
      .. "sandboxes the test holds at once)", name), 2)
  end
  if not collector then
    error("t.test must be called while abxlua collects a scenario file", 2)
  end
  local info = debug.getinfo(2, "Sl")
  collector({ name = name, opts = opts, fn = fn, line = info and info.currentline or 0 })
end

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

return M
