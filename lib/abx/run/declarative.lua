-- abx.run.declarative: YAML scenario files (scenarios/*.yaml). A file declares sandbox options and
-- a list of tests, each a list of steps; collection checks every key (fail closed: an unknown key,
-- a wrong type or a missing required key is an error naming file:line, the key path and the valid
-- keys) and compiles each test into an ordinary test function, registered through abx.test like
-- a Lua test's, so selection, reports, known issues, tracking and cleanup do not know the
-- difference. The steps run in abx.run.declarative_steps.
--
--   sandbox: {template: base, timeout: 120, envs: {K: v}, metadata: {k: v}}  # conn:create options
--   tests:
--     - name: python runs remotely          # required: the test's name (node id FILE::NAME)
--       markers: [e2e_slow]                 # t.test's options: markers, timeout, requires,
--       known_issue: KI-NNN                 #   known_issue, raises, skip, sandboxes
--       sandbox: {envs: {A: b}}             # merged over the file's sandbox options
--       steps:                              # required, non-empty
--         - run: echo hi                    # see STEPS below for each kind's keys
--           stdout: "hi\n"
--
-- Errors: InvalidArgument "<file>:<line>: <key path>: <problem> (valid: ...)". The runner turns
-- it into the file's collection error (abx.run.collect).
local core = require("abx.core")
local errmap = require("abx.client.errmap")
local options = require("abx.client.options")

local M = {}

-- The keys of the file, of a test, and of each step kind. A step is a mapping with exactly one
-- action key (the kind) and the keys of that kind.
M.FILE_KEYS = { "sandbox", "tests" }
M.TEST_KEYS = { "name", "steps", "sandbox", "markers", "timeout", "requires", "known_issue",
  "raises", "skip", "sandboxes" }
M.KINDS = { "run", "write", "read", "http", "python", "node", "eventually" }
-- What a process step (run, python, node) may expect: exact text, plain substrings, Lua patterns.
local EXPECT_KEYS = { "exit_code", "stdout", "stdout_contains", "stdout_match", "stderr",
  "stderr_contains", "stderr_match" }
local PROCESS_KEYS = { "cwd", "envs", "user", "timeout" }
local function join(...)
  local out = {}
  for _, list in ipairs({ ... }) do
    for _, k in ipairs(list) do out[#out + 1] = k end
  end
  table.sort(out)
  return out
end
M.STEPS = {
  run = join({ "run", "background" }, PROCESS_KEYS, EXPECT_KEYS),
  python = join({ "python", "returns" }, PROCESS_KEYS, EXPECT_KEYS),
  node = join({ "node", "returns" }, PROCESS_KEYS, EXPECT_KEYS),
  write = { "base64", "content", "user", "write" },
  read = { "contains", "content", "match", "read", "sha256", "user" },
  http = { "body", "headers", "http", "method", "path", "response", "response_contains",
    "response_match", "status", "timeout" },
  eventually = { "eventually", "interval", "timeout" },
}
-- The kinds `eventually` may retry: those that observe. A write or a background start repeated
-- until it "works" would hide a failure instead of waiting for an eventual state.
M.EVENTUAL_KINDS = { "run", "read", "http", "python", "node" }
M.HTTP_METHODS = { "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS" }

local function set_of(list)
  local s = {}
  for _, k in ipairs(list) do s[k] = true end
  return s
end
local KIND_SET, EVENTUAL_SET, METHOD_SET = set_of(M.KINDS), set_of(M.EVENTUAL_KINDS),
  set_of(M.HTTP_METHODS)

-- The file being compiled: { path, lines } (core.yaml_load's lines: [table][key] = line).
local CUR

local function line_of(parent, key)
  local at = type(parent) == "table" and CUR.lines[parent]
  return at and at[key] or nil
end

-- A node of the document while it is checked: the table, its key path and its line.
local function node(value, path, line) return { v = value, path = path, line = line } end

local function child(n, key)
  local path = math.type(key) == "integer" and string.format("%s[%d]", n.path, key)
    or (n.path == "" and key or (n.path .. "." .. key))
  return node(n.v[key], path, line_of(n.v, key) or n.line)
end

local function fail(n, msg)
  errmap.raise("InvalidArgument", 0, string.format("%s%s: %s: %s", CUR.path,
    n.line and (":" .. n.line) or "", n.path == "" and "top level" or n.path, msg))
end

local function show(v)
  if v == nil then return "null (nothing)" end
  if type(v) == "string" then return string.format("string %q", #v > 40 and v:sub(1, 40) .. "..." or v) end
  if type(v) == "table" then return (#v > 0 or next(v) == nil) and "a list" or "a mapping" end
  return type(v) .. " " .. tostring(v)
end

local function is_list(v)
  if type(v) ~= "table" then return false end
  local n = 0
  for k in pairs(v) do
    if math.type(k) ~= "integer" then return false end
    n = n + 1
  end
  return n == #v
end

-- The keys of a mapping (null-valued ones too: they are in the lines table), sorted.
local function keys_of(t)
  local seen, ks = {}, {}
  for k in pairs(t) do seen[k] = true end
  for k in pairs(CUR.lines[t] or {}) do seen[k] = true end
  for k in pairs(seen) do ks[#ks + 1] = k end
  table.sort(ks, function(a, b) return tostring(a) < tostring(b) end)
  return ks
end

local function present(n, key) return n.v[key] ~= nil or line_of(n.v, key) ~= nil end

local function want_map(n, what)
  if type(n.v) ~= "table" or (next(n.v) ~= nil and is_list(n.v)) then
    fail(n, string.format("must be a mapping (%s), got %s", what, show(n.v)))
  end
  return n.v
end

local function check_keys(n, valid, what)
  local set = set_of(valid)
  for _, k in ipairs(keys_of(n.v)) do
    if not set[k] then
      local c = child(n, k)
      fail(c, string.format("unknown key in %s; remove it or use one of the valid keys (valid: %s)",
        what, table.concat(valid, ", ")))
    end
  end
end

local function want_string(n, opts)
  opts = opts or {}
  if type(n.v) ~= "string" or (n.v == "" and not opts.empty) then
    fail(n, string.format("must be a %sstring, got %s%s", opts.empty and "" or "non-empty ",
      show(n.v), type(n.v) == "number" and " (quote it: \"" .. tostring(n.v) .. "\")" or ""))
  end
  return n.v
end

-- One string or a list of strings (each must hold): returned as a list.
local function want_strings(n)
  if type(n.v) == "string" then return { n.v } end
  if not is_list(n.v) or #n.v == 0 then
    fail(n, "must be a string or a non-empty list of strings, got " .. show(n.v))
  end
  for i = 1, #n.v do want_string(child(n, i), { empty = true }) end
  return n.v
end

local function want_number(n, min, integer)
  if type(n.v) ~= "number" or (integer and math.type(n.v) ~= "integer") or n.v < min then
    fail(n, string.format("must be %s >= %s, got %s", integer and "a whole number" or "a number",
      tostring(min), show(n.v)))
  end
  return n.v
end

local function want_string_map(n)
  want_map(n, "names to string values")
  for _, k in ipairs(keys_of(n.v)) do want_string(child(n, k), { empty = true }) end
  return n.v
end

-- A mapping checked against a declared options spec (abx.client.options), key by key so that
-- each error names the key's own line; nested specs for the table-typed options.
local function check_spec(n, spec, nested)
  want_map(n, spec.summary)
  for _, k in ipairs(keys_of(n.v)) do
    local c = child(n, k)
    local o = spec.by_name[k]
    if not o then
      fail(c, string.format("unknown option of %s (valid: %s)", spec.call, table.concat(spec.names, ", ")))
    end
    if c.v == nil then fail(c, "must be " .. o.type .. ", got null; give a value or remove the key") end
    local sub = nested and nested[k]
    if sub and sub.list then
      if not is_list(c.v) then fail(c, "must be a list, got " .. show(c.v)) end
      for i = 1, #c.v do check_spec(child(c, i), options.spec(sub.list)) end
    elseif sub then
      check_spec(c, options.spec(sub.map))
    elseif o.type == "table<string,string>" then
      want_string_map(c)
    elseif not options.type_ok(o.type, c.v) then
      fail(c, string.format("must be %s, got %s", o.type == "string[]" and "a list of strings"
        or o.type, show(c.v)))
    end
  end
  return n.v
end

local CREATE_NESTED = { network = { map = "conn:create network" },
  volume_mounts = { list = "conn:create volume_mounts[i]" } }

local function check_sandbox(n)
  return check_spec(n, options.spec("conn:create"), CREATE_NESTED)
end

local function check_process(n, out)
  local s = n.v
  if present(n, "cwd") then out.cwd = want_string(child(n, "cwd")) end
  if present(n, "user") then out.user = want_string(child(n, "user")) end
  if present(n, "envs") then out.envs = want_string_map(child(n, "envs")) end
  if present(n, "timeout") then out.timeout = want_number(child(n, "timeout"), 0) end
  out.exit_code = 0
  if present(n, "exit_code") then
    local c = child(n, "exit_code")
    if math.type(c.v) ~= "integer" or c.v < -1 or c.v > 255 then
      fail(c, "must be a whole number from -1 (killed by a signal) to 255, got " .. show(c.v))
    end
    out.exit_code = c.v
  end
  for _, stream in ipairs({ "stdout", "stderr" }) do
    if present(n, stream) then out[stream] = want_string(child(n, stream), { empty = true }) end
    for _, how in ipairs({ "contains", "match" }) do
      local k = stream .. "_" .. how
      if present(n, k) then out[k] = want_strings(child(n, k)) end
    end
  end
  if out.background then
    for _, k in ipairs(EXPECT_KEYS) do
      if present(n, k) then
        fail(child(n, k), "a background command has no result to expect; remove it, or drop "
          .. "`background` and the step waits for the command")
      end
    end
  end
  return s
end

-- Why `p` is not a well-formed Lua pattern, or nil. Lua reports a malformed pattern only when
-- the matcher reaches the bad part (string.find("", "(x") fails before it), so the structure is
-- checked here: escapes, sets, captures, %b and %f (lstrlib.c's rules).
local function pattern_problem(p)
  local i, depth, n = 1, 0, #p
  if p:sub(1, 1) == "^" then i = 2 end
  while i <= n do
    local c = p:sub(i, i)
    if c == "%" then
      local d = p:sub(i + 1, i + 1)
      if d == "" then return "malformed pattern (ends with '%')" end
      if d == "b" then
        if i + 3 > n then return "missing arguments to '%b'" end
        i = i + 4
      elseif d == "f" then
        if p:sub(i + 2, i + 2) ~= "[" then return "missing '[' after '%f' in pattern" end
        i = i + 2
      else
        if d:match("%d") and (tonumber(d) == 0 or tonumber(d) > depth) then
          return "invalid capture index %" .. d
        end
        i = i + 2
      end
    elseif c == "[" then
      local j = i + 1
      if p:sub(j, j) == "^" then j = j + 1 end
      if p:sub(j, j) == "]" then j = j + 1 end -- a first ']' is a member of the set
      while true do
        local x = p:sub(j, j)
        if x == "" then return "malformed pattern (missing ']')" end
        if x == "%" then
          if j + 1 > n then return "malformed pattern (ends with '%')" end
          j = j + 2
        elseif x == "]" then break
        else j = j + 1 end
      end
      i = j + 1
    elseif c == "(" then
      depth = depth + 1
      i = i + 1
    elseif c == ")" then
      if depth == 0 then return "invalid pattern capture (a ')' without its '(')" end
      depth = depth - 1
      i = i + 1
    else
      i = i + 1
    end
  end
  if depth > 0 then return "unfinished capture (a '(' without its ')')" end
  local ok, err = pcall(string.find, "", p)
  if not ok then return (tostring(err):gsub("^.-:%d+: ", "")) end
  return nil
end
M.pattern_problem = pattern_problem

local function check_patterns(n, list)
  for i, p in ipairs(list) do
    local why = pattern_problem(p)
    if why then
      fail(is_list(n.v) and child(n, i) or n, "is not a valid Lua pattern: " .. why
        .. " (a plain substring goes in the *_contains key instead)")
    end
  end
end

local check_step

local STEP_CHECK = {}

function STEP_CHECK.run(n, s)
  s.cmd = want_string(child(n, "run"))
  if present(n, "background") then
    local c = child(n, "background")
    if type(c.v) ~= "boolean" then fail(c, "must be true or false, got " .. show(c.v)) end
    s.background = c.v
  end
  check_process(n, s)
end

local function code_step(kind)
  return function(n, s)
    s.source = want_string(child(n, kind))
    if present(n, "returns") then s.returns, s.has_returns = n.v.returns, true end
    check_process(n, s)
  end
end
STEP_CHECK.python, STEP_CHECK.node = code_step("python"), code_step("node")

local function want_path(n)
  local p = want_string(n)
  if p:sub(1, 1) ~= "/" then fail(n, string.format("must be an absolute path (starting with /), got %q", p)) end
  return p
end

function STEP_CHECK.write(n, s)
  s.path = want_path(child(n, "write"))
  if present(n, "content") == present(n, "base64") then
    fail(n, "give exactly one of content (text) and base64 (bytes, base64-encoded)")
  end
  if present(n, "content") then
    s.data = want_string(child(n, "content"), { empty = true })
  else
    local c = child(n, "base64")
    local ok, bytes = pcall(core.b64decode, want_string(c, { empty = true }))
    if not ok or type(bytes) ~= "string" then fail(c, "is not valid base64") end
    s.data = bytes
  end
  if present(n, "user") then s.user = want_string(child(n, "user")) end
end

function STEP_CHECK.read(n, s)
  s.path = want_path(child(n, "read"))
  if present(n, "user") then s.user = want_string(child(n, "user")) end
  local any = false
  if present(n, "content") then s.content, any = want_string(child(n, "content"), { empty = true }), true end
  if present(n, "sha256") then
    local c = child(n, "sha256")
    local h = want_string(c)
    if not h:match("^%x+$") or #h ~= 64 then fail(c, "must be 64 hex digits (a SHA-256), got " .. show(h)) end
    s.sha256, any = h:lower(), true
  end
  if present(n, "contains") then s.contains, any = want_strings(child(n, "contains")), true end
  if present(n, "match") then
    s.match, any = want_strings(child(n, "match")), true
    check_patterns(child(n, "match"), s.match)
  end
  if not any then
    fail(child(n, "read"), "a read step expects something: give content, sha256, contains or match")
  end
end

function STEP_CHECK.http(n, s)
  local c = child(n, "http")
  if math.type(c.v) ~= "integer" or c.v < 1 or c.v > 65535 then
    fail(c, "must be a port number from 1 to 65535, got " .. show(c.v))
  end
  s.port = c.v
  s.path = "/"
  if present(n, "path") then
    local p = child(n, "path")
    s.path = want_string(p)
    if s.path:sub(1, 1) ~= "/" then fail(p, "must start with /, got " .. show(s.path)) end
  end
  s.method = "GET"
  if present(n, "method") then
    local m = child(n, "method")
    s.method = want_string(m)
    if not METHOD_SET[s.method] then
      fail(m, string.format("%q is not an HTTP method (valid: %s)", s.method, table.concat(M.HTTP_METHODS, ", ")))
    end
  end
  if present(n, "headers") then s.headers = want_string_map(child(n, "headers")) end
  if present(n, "body") then s.body = want_string(child(n, "body"), { empty = true }) end
  if present(n, "timeout") then s.timeout = want_number(child(n, "timeout"), 0) end
  s.status = 200
  if present(n, "status") then
    local st = child(n, "status")
    if math.type(st.v) ~= "integer" or st.v < 100 or st.v > 599 then
      fail(st, "must be an HTTP status from 100 to 599, got " .. show(st.v))
    end
    s.status = st.v
  end
  if present(n, "response") then s.response = want_string(child(n, "response"), { empty = true }) end
  if present(n, "response_contains") then s.response_contains = want_strings(child(n, "response_contains")) end
  if present(n, "response_match") then
    s.response_match = want_strings(child(n, "response_match"))
    check_patterns(child(n, "response_match"), s.response_match)
  end
end

function STEP_CHECK.eventually(n, s)
  local c = child(n, "eventually")
  if not is_list(c.v) or #c.v == 0 then
    fail(c, "must be a non-empty list of steps to retry together, got " .. show(c.v))
  end
  s.timeout, s.interval = 30, 0.5
  if present(n, "timeout") then s.timeout = want_number(child(n, "timeout"), 0.1) end
  if present(n, "interval") then s.interval = want_number(child(n, "interval"), 0.01) end
  s.steps = {}
  for i = 1, #c.v do
    local inner = check_step(child(c, i))
    if not EVENTUAL_SET[inner.kind] or inner.background then
      fail(child(child(c, i), inner.kind), string.format("%s cannot be retried by eventually "
        .. "(retried kinds: %s; a background run only once): eventually waits for a state to be "
        .. "observed, it must not repeat an action until it works", inner.background
          and "a background run" or inner.kind, table.concat(M.EVENTUAL_KINDS, ", ")))
    end
    s.steps[i] = inner
  end
end

-- A step: { kind, where = "file:line", label, ...its checked values }.
check_step = function(n)
  want_map(n, "one step: " .. table.concat(M.KINDS, ", "))
  local kind
  for _, k in ipairs(keys_of(n.v)) do
    if KIND_SET[k] then
      if kind then
        fail(child(n, k), string.format("a step has one action; %s and %s are two (split them "
          .. "into two steps)", kind, k))
      end
      kind = k
    end
  end
  if not kind then
    fail(n, string.format("a step needs one action key (valid: %s); got the keys %s",
      table.concat(M.KINDS, ", "), #keys_of(n.v) > 0 and table.concat(keys_of(n.v), ", ") or "none"))
  end
  check_keys(n, M.STEPS[kind], "a " .. kind .. " step")
  local line = line_of(n.v, kind) or n.line
  local s = { kind = kind, where = CUR.path .. ":" .. tostring(line or 0), path_key = n.path }
  STEP_CHECK[kind](n, s)
  for _, k in ipairs({ "stdout_match", "stderr_match" }) do
    if s[k] then check_patterns(child(n, k), s[k]) end
  end
  return s
end

local function check_test(n, file_sandbox, register)
  want_map(n, "one test: name, steps and its options")
  check_keys(n, M.TEST_KEYS, "a test")
  if not present(n, "name") then fail(n, "missing key name (the test's name, a sentence)") end
  local name = want_string(child(n, "name"))
  if not present(n, "steps") then fail(n, "missing key steps (a non-empty list of steps)") end
  local st = child(n, "steps")
  if not is_list(st.v) or #st.v == 0 then fail(st, "must be a non-empty list of steps, got " .. show(st.v)) end
  local steps = {}
  for i = 1, #st.v do steps[i] = check_step(child(st, i)) end
  local sandbox = {}
  for k, v in pairs(file_sandbox) do sandbox[k] = v end
  if present(n, "sandbox") then
    for k, v in pairs(check_sandbox(child(n, "sandbox"))) do sandbox[k] = v end
  end
  -- t.test's options, checked against its declaration (abx.test) key by key
  local spec = options.spec("t.test")
  local opts = {}
  for _, k in ipairs(keys_of(n.v)) do
    if spec.by_name[k] then
      local c = child(n, k)
      local o = spec.by_name[k]
      if o.type == "string[]" then
        if not is_list(c.v) then fail(c, "must be a list of strings, got " .. show(c.v)) end
        for i = 1, #c.v do want_string(child(c, i)) end
      elseif o.type == "string" then
        want_string(c)
      elseif o.type == "integer" then
        want_number(c, 1, true)
      elseif o.type == "number" then
        want_number(c, 0.001)
      end
      opts[k] = c.v
    end
  end
  local steps_mod = require("abx.run.declarative_steps")
  local fn = steps_mod.compile(sandbox, steps)
  -- abx.test's own checks (markers, known issues and capabilities are then checked by the
  -- collector, as for a Lua test) name the test; the prefix names the file and line
  local ok, err = pcall(register, name, opts, fn, n.line or 0)
  if not ok then fail(n, (tostring(core.is_error(err) and err.message or err):gsub("^.-:%d+: ", ""))) end
end

---Compiles one YAML scenario file: checks it and registers its tests (in file order) with
---`register(name, opts, fn, line)` (abx.test._register).
---@param path string the file, as ids print it
---@param register fun(name: string, opts: table, fn: function, line: integer)
---Raises: InvalidArgument "<file>:<line>: <key path>: <problem>" (YAML syntax errors come from
---core.yaml_load as "<file>:<line>:<column>: <problem>")
function M.compile(path, register)
  local raw, lines = core.yaml_load(path, true)
  CUR = { path = path, lines = lines }
  local ok, err = pcall(function()
    local top = node(raw, "", 1)
    if type(raw) ~= "table" or is_list(raw) then
      fail(top, "must be a mapping with the keys sandbox (optional) and tests, got " .. show(raw))
    end
    check_keys(top, M.FILE_KEYS, "the file")
    local sandbox = {}
    if present(top, "sandbox") then sandbox = check_sandbox(child(top, "sandbox")) end
    if not present(top, "tests") then fail(top, "missing key tests (a non-empty list of tests)") end
    local tests = child(top, "tests")
    if not is_list(tests.v) or #tests.v == 0 then
      fail(tests, "must be a non-empty list of tests, got " .. show(tests.v))
    end
    for i = 1, #tests.v do check_test(child(tests, i), sandbox, register) end
  end)
  CUR = nil
  if not ok then error(err, 0) end
end

return M
