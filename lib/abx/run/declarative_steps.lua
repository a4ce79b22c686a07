-- abx.run.declarative_steps: what the steps of a YAML scenario (abx.run.declarative) do when the
-- test runs. Each test gets one sandbox from ctx.sandbox_factory (so it is tagged e2e=<run id>,
-- tracked and killed at teardown exactly as a Lua test's), created before its first step.
--
-- Expectations (all that are given must hold):
--   exact text           stdout, stderr, content (read), response (http): the bytes, compared
--                        with t.eq (a line diff when long)
--   plain substrings     *_contains, contains (read): each string must occur as is (no pattern)
--   Lua patterns         *_match, match (read): each pattern must match (string.find)
--   exit_code            default 0 for every run/python/node step that is not background
--   sha256 (read)        hex SHA-256 of the file's bytes
--   status (http)        default 200
--   returns (python/node) the JSON value main() returned, compared with t.eq (deep)
-- A failure is an Assertion located at the step's line in the YAML file ("step 2 (run)"); an
-- error of the client (Timeout, Transport, ...) keeps its kind and is located there too.
local core = require("abx.core")
local cjson = require("cjson")
local A = require("abx.run.assert")
local http = require("abx.client.http")
local test_api = require("abx.test")

local M = {}

local function tail(s, n)
  if type(s) ~= "string" or s == "" then return "(empty)" end
  if #s > n then s = "..." .. s:sub(-n) end
  return A.show(s)
end

local function contains(what, text, subs)
  for _, sub in ipairs(subs or {}) do
    if type(text) ~= "string" or not text:find(sub, 1, true) then
      A.fail(string.format("%s: expected the text to contain %s (a plain substring), got %s",
        what, A.show(sub), A.show(text)), 2)
    end
  end
end

local function matches(what, text, pats)
  for _, p in ipairs(pats or {}) do A.match(text, p, what .. " (Lua pattern)") end
end

-- The expectations of a process step on its result.
local function expect_process(s, r)
  if r.exit_code ~= s.exit_code then
    A.fail(string.format("exit code: expected %d, got %d%s; stdout %s; stderr %s", s.exit_code,
      r.exit_code, r.error and (" (" .. core.mask(r.error) .. ")") or "", tail(r.stdout, 200),
      tail(r.stderr, 400)), 2)
  end
  if s.stdout then A.eq(r.stdout, s.stdout, "stdout") end
  if s.stderr then A.eq(r.stderr, s.stderr, "stderr") end
  contains("stdout", r.stdout, s.stdout_contains)
  contains("stderr", r.stderr, s.stderr_contains)
  matches("stdout", r.stdout, s.stdout_match)
  matches("stderr", r.stderr, s.stderr_match)
end

local function process_opts(s)
  return { cwd = s.cwd, envs = s.envs, user = s.user, timeout = s.timeout }
end

-- After the user's source: call main() and write its value as JSON to `out` (not to stdout, so
-- the stdout expectations see only what the code printed). Appended, so the source's own line
-- numbers in a traceback stay right.
local EPILOGUE = {
  python = function(out)
    return string.format("\nimport json as _abx_json\nif 'main' not in globals():\n"
      .. "    raise SystemExit('returns: the python block defines no main()')\n"
      .. "with open(%q, 'w') as _abx_f:\n    _abx_json.dump(main(), _abx_f)\n", out)
  end,
  node = function(out)
    return string.format("\n;(async () => {\n  if (typeof main !== 'function') {\n"
      .. "    console.error('returns: the node block defines no function main()'); process.exit(3);\n"
      .. "  }\n  const r = await main();\n"
      .. "  require('fs').writeFileSync(%q, JSON.stringify(r === undefined ? null : r));\n"
      .. "})().catch((e) => { console.error(e && e.stack ? e.stack : String(e)); process.exit(1); });\n",
      out)
  end,
}
local INTERPRETER = { python = { "python3", ".py" }, node = { "node", ".js" } }

-- A decoded JSON value as YAML gives it: whole numbers as integers (cjson decodes 3 as 3.0, which
-- compares equal but prints as "3.0" in a failure), JSON null as nil.
local function from_json(v)
  if v == cjson.null then return nil end
  if math.type(v) == "float" and math.tointeger(v) then return math.tointeger(v) end
  if type(v) == "table" then
    local out = {}
    for k, x in pairs(v) do out[k] = from_json(x) end
    return out
  end
  return v
end

local RUN = {}

function RUN.run(sbx, s)
  local o = process_opts(s)
  if s.background then
    o.background = true
    sbx.commands:run(s.cmd, o)
    return
  end
  expect_process(s, sbx.commands:run(s.cmd, o))
end

local function run_code(sbx, s)
  local interp, ext = INTERPRETER[s.kind][1], INTERPRETER[s.kind][2]
  -- the source is uploaded, then run: no quoting of code through a shell command line
  local base = "/tmp/abx-decl-" .. core.random_hex(8)
  local src, out = base .. ext, base .. ".json"
  local code = s.source
  if s.has_returns then code = code .. EPILOGUE[s.kind](out) end
  sbx.files:write(src, code, { user = s.user })
  expect_process(s, sbx.commands:run(interp .. " " .. src, process_opts(s)))
  if s.has_returns then
    local text = sbx.files:read(out, { user = s.user })
    local ok, value = pcall(cjson.decode, text)
    if not ok then A.fail("returns: main()'s value is not JSON: " .. A.show(text), 1) end
    value = from_json(value)
    A.eq(value, s.returns, "returns (main()'s value as JSON)")
  end
end
RUN.python, RUN.node = run_code, run_code

function RUN.write(sbx, s)
  sbx.files:write(s.path, s.data, { user = s.user })
end

function RUN.read(sbx, s)
  local data = sbx.files:read(s.path, { user = s.user })
  if s.content then A.eq(data, s.content, "content of " .. s.path) end
  if s.sha256 then
    local got = core.sha256(data)
    if got ~= s.sha256 then
      A.fail(string.format("sha256 of %s: expected %s, got %s (%d bytes)", s.path, s.sha256, got,
        #data), 1)
    end
  end
  contains("content of " .. s.path, data, s.contains)
  matches("content of " .. s.path, data, s.match)
end

function RUN.http(sbx, s)
  local r = http.request(sbx, s.port, { method = s.method, path = s.path, headers = s.headers,
    body = s.body, timeout = s.timeout })
  if r.status ~= s.status then
    A.fail(string.format("status of %s %s on port %d: expected %d, got %d; body %s", s.method,
      s.path, s.port, s.status, r.status, tail(r.body, 300)), 1)
  end
  if s.response then A.eq(r.body, s.response, "response body") end
  contains("response body", r.body, s.response_contains)
  matches("response body", r.body, s.response_match)
end

local run_step

function RUN.eventually(sbx, s)
  test_api.eventually(function()
    for _, inner in ipairs(s.steps) do run_step(sbx, inner) end
  end, { timeout = s.timeout, interval = s.interval })
end

-- Runs one step; an error leaves located at the step's line, its message starting with the
-- step's kind and position, its kind unchanged (a known issue's `raises` names it).
run_step = function(sbx, s)
  -- a deadline or interrupt that ends the test while this step waits is reported at its line
  core.guard_where(s.where)
  local ok, err = pcall(RUN[s.kind], sbx, s)
  if ok then return end
  if core.is_error(err) and err.kind ~= "Skipped" and err.kind ~= "Interrupted" then
    if not err.declarative then -- an inner step of eventually has placed it already
      err.declarative = true
      err.where = s.where
      err.message = string.format("%s (%s): %s", s.path_key, s.kind, tostring(err.message))
    end
  end
  error(err, 0)
end

---The test function of a compiled YAML test: creates its sandbox, runs its steps in order.
---@param sandbox table conn:create options (checked at collection)
---@param steps table[] checked steps (abx.run.declarative)
---@return fun(ctx: abx.Ctx)
function M.compile(sandbox, steps)
  return function(ctx)
    local opts = {}
    for k, v in pairs(sandbox) do opts[k] = v end
    local sbx = ctx.sandbox_factory(opts)
    for _, s in ipairs(steps) do run_step(sbx, s) end
  end
end

return M
