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

-- Damerau-Levenshtein distance (optimal string alignment), for "did you mean".
local function distance(a, b)
  local la, lb = #a, #b
  local d = {}
  for i = 0, la do d[i] = { [0] = i } end
  for j = 0, lb do d[0][j] = j end
  for i = 1, la do
    for j = 1, lb do
      local cost = a:byte(i) == b:byte(j) and 0 or 1
      local v = math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
      if i > 1 and j > 1 and a:byte(i) == b:byte(j - 1) and a:byte(i - 1) == b:byte(j) then
        v = math.min(v, d[i - 2][j - 2] + 1)
      end
      d[i][j] = v
    end
  end
  return d[la][lb]
end

--- The closest of `names` to `key` when it is a likely misspelling (distance <= 2, less than
--- half the key), else nil.
local function suggestion(key, names)
  if type(key) ~= "string" then return nil end
  local best, bd
  for _, n in ipairs(names) do
    local dd = distance(key:lower(), n:lower())
    if (not bd or dd < bd) and dd <= 2 and dd < math.max(#key, 2) then best, bd = n, dd end
  end
  return best
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

--- Declares an object class: its fields (as options.shape) and its public methods, each with a
--- one-line description, and sets `class.__index` so that an instance answers a method, a
--- declared field (nil when absent) or a private `_name` (nil when absent), and raises
--- InvalidArgument naming the valid ones for anything else. Inherited methods (the class table's
--- own metatable) are found too. Registered for docs/API.md, which checks that every public
--- function of the class is declared.
--- Raises: a Lua error for a malformed declaration.
---@param class table the methods table (instances have it as metatable)
---@param name string e.g. "Sandbox"
---@param summary string one line
---@param fields {[1]: string, [2]: string, [3]: string}[]
---@param methods {[1]: string, [2]: string}[] { "name(args) -> result", "description" }
---@return table class
function options.class(class, name, summary, fields, methods)
  local by_name, names = index_list(fields, name)
  local mnames = {}
  for i, m in ipairs(methods) do
    local mn = type(m[1]) == "string" and m[1]:match("^([%w_]+)")
    if not mn or type(m[2]) ~= "string" then
      error(name .. ": method " .. i .. " must be { \"name(args)\", description }", 2)
    end
    mnames[#mnames + 1] = mn
  end
  table.sort(mnames)
  local all = {}
  for _, n in ipairs(names) do all[#all + 1] = n end
  for _, n in ipairs(mnames) do all[#all + 1] = n end
  class.__index = function(_, k)
    local m = class[k]
    if m ~= nil then return m end
    if by_name[k] then return nil end
    if type(k) == "string" and k:sub(1, 1) == "_" then return nil end -- private, absent
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
