-- abx.client.options: the object model fails closed. Each module declares, at its top, the options of
-- every call that takes an options table and the fields of every table or object it returns
-- (name, type, one-line description, as sysbench declares its options); this module checks
-- them, and the same declarations generate docs/API.md (`abxlua api --write`).
--
--   local RUN = options.define("commands:run", "Runs a command.", {
--     { "cwd", "string", "working directory" }, { "timeout", "number", "seconds; 0 none" } })
--   function Commands:run(cmd, opts) opts = options.check(RUN, opts) ... end
--
--   local RESULT = options.shape("CommandResult", "What run returns.", {
--     { "stdout", "string", "..." }, { "error", "string?", "nil when none" } })
--   return options.strict(RESULT, { stdout = ..., error = nil })
--
--   options.class(Sandbox, "Sandbox", "One sandbox.", { fields... }, { methods... })
--
-- Types: "string", "number", "integer", "boolean", "table", "function", "string[]" (an array of
-- strings), "table<string,string>" (string keys and values), "file" (an open Lua file handle),
-- "any", and alternatives joined by "|"
-- ("boolean|string"). A trailing "?" marks a field that may be absent (nil) in a shape; every
-- option is optional.
-- Errors: InvalidArgument (abx.client.errmap) naming the call, the key and the valid keys:
--   commands:run: unknown option 'cdw', did you mean 'cwd'? (valid: background, cwd, ...)
--   commands:run: option 'cwd' must be a string, got number 5
--   CommandResult has no field 'exitcode', did you mean 'exit_code'? (fields: ...)
-- Names that start with "_" are private: an object answers nil for one it does not hold.

local errmap = require("abx.client.errmap")
local suggest = require("abx.suggest")

local options = {}

-- Everything declared, for the reference generator: calls, shapes and classes in declaration
-- order, each with the module file that declared it.
local REGISTRY = { calls = {}, shapes = {}, classes = {}, by_call = {} }
options.REGISTRY = REGISTRY

local function declaring_module(level)
  local info = debug.getinfo(level + 1, "S")
  local src = info and info.short_src or "?"
  return (src:match("(lib/abx/[%w_/]+%.lua)$")) or src
end

local function index_list(list, what)
  local by_name, names = {}, {}
  for i, o in ipairs(list) do
    if type(o[1]) ~= "string" or type(o[2]) ~= "string" or type(o[3]) ~= "string" then
      error(what .. ": entry " .. i .. " must be { name, type, description }", 3)
    end
    if by_name[o[1]] then error(what .. ": " .. o[1] .. " declared twice", 3) end
    by_name[o[1]] = { name = o[1], type = o[2], description = o[3] }
    names[#names + 1] = o[1]
  end
  table.sort(names)
  return by_name, names
end

--- Declares the options of one call and registers them for docs/API.md.
--- Raises: a Lua error for a malformed declaration (a bug in the module, found at load).
---@param call string how the error messages name the call, e.g. "commands:run"
---@param summary string one line: what the call does
---@param list {[1]: string, [2]: string, [3]: string}[] { name, type, description } each
---@return table spec for options.check
function options.define(call, summary, list)
  local by_name, names = index_list(list, call)
  local spec = { call = call, summary = summary, list = list, by_name = by_name, names = names,
    module = declaring_module(2) }
  REGISTRY.calls[#REGISTRY.calls + 1] = spec
  REGISTRY.by_call[call] = spec
  return spec
end

--- The spec registered for `call` (e.g. "conn:create"), or nil.
---@param call string
---@return table|nil
function options.spec(call)
  return REGISTRY.by_call[call]
end

--- The closest of `names` to `key` when it is a likely misspelling, else nil (abx.suggest).
local function suggestion(key, names)
  return suggest.nearest(key, names)
end

local function show(v)
  if type(v) == "string" then return string.format("string %q", #v > 40 and v:sub(1, 40) .. "..." or v) end
  if type(v) == "number" or type(v) == "boolean" then return type(v) .. " " .. tostring(v) end
  return type(v)
end

local function one_type_ok(t, v)
  if t == "integer" then return math.type(v) == "integer" end
  if t == "string[]" then
    if type(v) ~= "table" then return false end
    for k, x in pairs(v) do
      if math.type(k) ~= "integer" or type(x) ~= "string" then return false end
    end
    return true
  end
  if t == "table<string,string>" then
    if type(v) ~= "table" then return false end
    for k, x in pairs(v) do
      if type(k) ~= "string" or type(x) ~= "string" then return false end
    end
    return true
  end
  if t == "file" then return io.type(v) == "file" end
  if t == "any" then return true end
  return type(v) == t
end

--- Whether `v` has the declared type (see the file header). nil is never of a type here.
---@param t string declared type, without "?"
---@param v any
---@return boolean
function options.type_ok(t, v)
  for alt in t:gmatch("[^|]+") do
    if one_type_ok(alt, v) then return true end
  end
  return false
end

local function article(t)
  if t:find("|", 1, true) then return t:gsub("|", " or ") end
  if t == "string[]" then return "an array of strings" end
  if t == "table<string,string>" then return "a table of string keys and string values" end
  if t == "file" then return "an open file handle" end
  return (t:match("^[aeiou]") and "an " or "a ") .. t
end

--- Checks an options table against a spec: every key must be declared and of its type.
--- Returns `opts`, or a new empty table when it is nil, so callers write
--- `opts = options.check(SPEC, opts)`.
--- Raises: InvalidArgument naming the call (`call`, default the spec's), the key and the valid
--- keys: an unknown key (with the closest valid one when it looks misspelled), a value of the
--- wrong type, or options that are not a table.
---@param spec table|string from options.define, or a registered call name
---@param opts table|nil
---@param call? string the name to report (e.g. "ctx.sandbox_factory" for conn:create's options)
---@return table opts
function options.check(spec, opts, call)
  if type(spec) == "string" then
    spec = REGISTRY.by_call[spec] or error("options.check: no options declared for " .. spec, 2)
  end
  call = call or spec.call
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    errmap.raise("InvalidArgument", 0, string.format("%s: options must be a table, got %s (valid: %s)",
      call, show(opts), table.concat(spec.names, ", ")))
  end
  for k, v in pairs(opts) do
    local o = spec.by_name[k]
    if not o then
      local near = suggestion(k, spec.names)
      errmap.raise("InvalidArgument", 0, string.format("%s: unknown option '%s'%s (valid: %s)", call,
        tostring(k), near and (", did you mean '" .. near .. "'?") or "",
        #spec.names > 0 and table.concat(spec.names, ", ") or "none"))
    end
    if not options.type_ok(o.type, v) then
      errmap.raise("InvalidArgument", 0, string.format("%s: option '%s' must be %s, got %s", call,
        k, article(o.type), show(v)))
    end
  end
  return opts
end

--- Declares the fields of a result table (CommandResult, EntryInfo, ...); "?" after a type marks
--- a field that may be absent. Registered for docs/API.md.
--- Raises: a Lua error for a malformed declaration.
---@param name string e.g. "CommandResult"
---@param summary string one line
---@param fields {[1]: string, [2]: string, [3]: string}[]
---@return table shape for options.strict
function options.shape(name, summary, fields)
  local by_name, names = index_list(fields, name)
  local shape = { name = name, summary = summary, list = fields, by_name = by_name, names = names,
    module = declaring_module(2) }
  shape.mt = {
    __index = function(_, k)
      if by_name[k] then return nil end -- declared, absent: a documented optional field
      local near = suggestion(k, names)
      errmap.raise("InvalidArgument", 0, string.format("%s has no field '%s'%s (fields: %s)", name,
        tostring(k), near and (", did you mean '" .. near .. "'?") or "", table.concat(names, ", ")))
    end,
    __name = "abx." .. name,
  }
  REGISTRY.shapes[#REGISTRY.shapes + 1] = shape
  return shape
end

--- Makes `t` answer an unknown field with InvalidArgument (a declared but absent one is nil).
--- Returns `t`. Raises: nothing.
---@param shape table from options.shape
---@param t table
---@return table
function options.strict(shape, t)
  return setmetatable(t, shape.mt)
end

-- How a scenario reaches an instance of each class, for the messages below ("sbx.files" for
-- Files): a method called with '.' names the colon form on it.
local VAR = {
  Sandbox = "sbx", OpenSandbox = "sbx", Files = "sbx.files", OpenSandboxFiles = "sbx.files",
  Commands = "sbx.commands", OpenSandboxCommands = "sbx.commands", Pty = "sbx.pty",
  CommandHandle = "handle", OpenSandboxCommandHandle = "handle", PtyHandle = "terminal",
  Connection = "conn", OpenSandboxConnection = "conn", AgentServer = "server",
  WatchHandle = "watch", Watcher = "watcher",
}

-- The E2B SDKs' names (JS camelCase, Python, and the v0 SDK's `process`, `filesystem`,
-- `terminal`, `close`, `keepAlive`) that have another name here, per class: "x" is a field or
-- method of the class, "field:method" a method of one of its objects. A camelCase name whose
-- snake_case is declared needs no entry. Source: the E2B SDKs' public API (e2b-dev/E2B,
-- packages/js-sdk/src/sandbox/index.ts, packages/python-sdk/e2b/sandbox_sync/main.py).
local SDK_NAMES = {
  Sandbox = {
    exec = "commands:run", run = "commands:run", execute = "commands:run",
    process = "commands", filesystem = "files", fs = "files", terminal = "pty",
    sandbox_id = "id", sandboxId = "id", sandboxID = "id", templateId = "template_id",
    sandboxDomain = "domain", sandbox_domain = "domain", close = "kill", keepAlive = "set_timeout",
    keep_alive = "set_timeout", betaPause = "pause", beta_pause = "pause", notebook = "run_code",
    read_file = "files:read", readFile = "files:read", write_file = "files:write",
    writeFile = "files:write",
  },
  Files = { mkdir = "make_dir", makedirs = "make_dir", ls = "list", rm = "remove",
    delete = "remove", mv = "rename", move = "rename", stat = "get_info", info = "get_info",
    readBytes = "read", writeBytes = "write", watch = "watch_dir" },
  Commands = { exec = "run", execute = "run", start = "run", spawn = "run", ps = "list" },
  Connection = { createSandbox = "create", create_sandbox = "create", listSandboxes = "list",
    list_sandboxes = "list", killSandbox = "kill", kill_sandbox = "kill" },
}
SDK_NAMES.OpenSandbox = SDK_NAMES.Sandbox
SDK_NAMES.OpenSandboxFiles, SDK_NAMES.OpenSandboxCommands = SDK_NAMES.Files, SDK_NAMES.Commands
SDK_NAMES.OpenSandboxConnection = SDK_NAMES.Connection

-- "use sbx.commands:run(...)" for a name `right` (a field, a method, or "field:method") of an
-- object reached as `var`.
local function use(var, right, is_method)
  local f, m = right:match("^([%w_]+):([%w_]+)$")
  if f then return "use " .. var .. "." .. f .. ":" .. m .. "(...)" end
  if is_method then return "use " .. var .. ":" .. right .. "(...)" end
  return "use " .. var .. "." .. right
end

-- Whether `v` is an instance of `class` (its metatable, or one its metatable inherits from).
local function instance_of(v, class)
  if type(v) ~= "table" then return false end
  local mt = getmetatable(v)
  for _ = 1, 8 do
    if mt == nil then return false end
    if mt == class then return true end
    mt = getmetatable(mt)
  end
  return false
end

-- The declared method `m` (named `k`) wrapped once: called with '.' instead of ':' its first
-- argument is not the object, which would fail inside the library (an index of nil); the
-- wrapper raises InvalidArgument naming the colon form instead, at the scenario's line.
local function checked_method(cache, class, var, k, m)
  local w = cache[m]
  if w then return w end
  local short = var:match("([%w_]+)$")
  w = function(self, ...)
    if not instance_of(self, class) then
      errmap.raise("InvalidArgument", 0, string.format("%s.%s called with '.'; use %s:%s(...)",
        short, k, var, k))
    end
    return m(self, ...)
  end
  cache[m] = w
  return w
end

-- The pointer for a name an instance does not have: an E2B SDK name (SDK_NAMES) or a camelCase
-- spelling of a declared name ("runCode"), as "use sbx:run_code(...)"; nil otherwise.
local function sdk_pointer(k, sdk, var, by_name, is_method)
  if type(k) ~= "string" then return nil end
  local right = sdk[k]
  if not right then
    local s = suggest.snake(k)
    if s ~= k and (by_name[s] or is_method[s]) then right = s end
  end
  return right and use(var, right, is_method[right]) or nil
end

--- Declares an object class: its fields (as options.shape) and its public methods, each with a
--- one-line description, and sets `class.__index` so that an instance answers a method, a
--- declared field (nil when absent) or a private `_name` (nil when absent), and raises
--- InvalidArgument naming the valid ones for anything else. Inherited methods (the class table's
--- own metatable) are found too. Registered for docs/API.md, which checks that every public
--- function of the class is declared.
--- A newcomer's slips fail closed with a pointer, at the scenario's line: a declared method
--- called with '.' (`sbx.files.read("/x")`) raises InvalidArgument "files.read called with '.';
--- use sbx.files:read(...)"; an E2B SDK name raises "Sandbox has no 'exec'; use
--- sbx.commands:run(...)" (SDK_NAMES, and camelCase names whose snake_case is declared).
--- Raises: a Lua error for a malformed declaration.
---@param class table the methods table (instances have it as metatable)
---@param name string e.g. "Sandbox"
---@param summary string one line
---@param fields {[1]: string, [2]: string, [3]: string}[]
---@param methods {[1]: string, [2]: string}[] { "name(args) -> result", "description" }
---@return table class
function options.class(class, name, summary, fields, methods)
  local by_name, names = index_list(fields, name)
  local mnames, is_method = {}, {}
  for i, m in ipairs(methods) do
    local mn = type(m[1]) == "string" and m[1]:match("^([%w_]+)")
    if not mn or type(m[2]) ~= "string" then
      error(name .. ": method " .. i .. " must be { \"name(args)\", description }", 2)
    end
    mnames[#mnames + 1] = mn
    is_method[mn] = true
  end
  table.sort(mnames)
  local all = {}
  for _, n in ipairs(names) do all[#all + 1] = n end
  for _, n in ipairs(mnames) do all[#all + 1] = n end
  local var, sdk = VAR[name] or name:lower(), SDK_NAMES[name] or {}
  local cache = setmetatable({}, { __mode = "k" })
  class.__index = function(_, k)
    local m = class[k]
    if m ~= nil then
      if is_method[k] and type(m) == "function" then return checked_method(cache, class, var, k, m) end
      return m
    end
    if by_name[k] then return nil end
    if type(k) == "string" and k:sub(1, 1) == "_" then return nil end -- private, absent
    local pointer = sdk_pointer(k, sdk, var, by_name, is_method)
    if pointer then
      errmap.raise("InvalidArgument", 0, string.format("%s has no '%s'; %s", name, k, pointer))
    end
    local near = suggestion(k, all)
    errmap.raise("InvalidArgument", 0, string.format("%s has no field or method '%s'%s (fields: %s; "
      .. "methods: %s)", name, tostring(k), near and (", did you mean '" .. near .. "'?") or "",
      #names > 0 and table.concat(names, ", ") or "none", table.concat(mnames, ", ")))
  end
  REGISTRY.classes[#REGISTRY.classes + 1] = { name = name, summary = summary, list = fields,
    methods = methods, method_names = mnames, class = class, module = declaring_module(2) }
  return class
end

return options
