-- abx.run.luals: the LuaLS meta files of types/abx/ (`abxlua types --write`), generated from the
-- same declarations as docs/API.md (abx.client.options: calls, shapes, classes), the error kinds
-- (core.KINDS), the fixtures of ctx (abx.run.fixtures.FIXTURES), the options of t.test, and the
-- doc comments (`---@param`, `---@return`, description lines) written above each function in
-- lib/abx/ (for abx.core's C functions, their `/* core.name(args) ... */` comments in bindings/).
-- An editor running lua-language-server with the root's .luarc.json then completes and
-- checks `ctx.`, `t.`, `sbx.commands:run(cmd, {cwd = ...})` and the fields of every result.
--
-- Type names: a class or result table Foo is `abx.Foo`, the options of call "commands:run" are
-- `abx.opts.commands_run`, an error kind is `abx.ErrorKind`, ctx is `abx.Ctx`.
-- Doc comments are read from lib/abx/*.lua relative to the working directory (the chunk names
-- of the embedded modules): the command runs from the project root, like `abxlua api`.
local core = require("abx.core")
local options = require("abx.client.options")

local M = {}

-- Public module name -> the files of types/abx/ are named after (require("abx.files") finds
-- types/abx/files.lua on the library path). The other files hold no module: ---@meta _.
local PUBLIC = require("abx.run.cli").PUBLIC

-- How scenarios name the object a class method is called on, for the options of call
-- "<prefix>:<method>" (e.g. Commands:run takes the options of "commands:run").
local CLASS_PREFIX = { Sandbox = "sbx", Connection = "conn", Commands = "commands", Files = "files",
  Pty = "pty", AgentServer = "server", WatchHandle = "watch", Watcher = "watcher" }

local BUILTIN = { string = true, number = true, integer = true, boolean = true, table = true,
  ["function"] = true, any = true, ["nil"] = true, ["table<string,string>"] = true }

--- The LuaLS class name of the options of `call`: "conn:create volume_mounts[i]" ->
--- "abx.opts.conn_create_volume_mounts_i".
---@param call string
---@return string
function M.opts_class(call)
  return "abx.opts." .. call:gsub("[^%w]+", "_"):gsub("_+$", "")
end

--- Turns a declared type (abx.client.options vocabulary) into a LuaLS type. `known` maps
--- declared class and shape names to true. Raises: a Lua error naming `where` for a type
--- outside the vocabulary (a new type needs a rule here).
---@param t string
---@param known table<string, boolean>
---@param where string
---@return string luals, boolean optional
function M.luals_type(t, known, where)
  local optional = t:sub(-1) == "?"
  if optional then t = t:sub(1, -2) end
  local out = {}
  for alt in t:gmatch("[^|]+") do
    local base, arr = alt, ""
    while base:sub(-2) == "[]" do base, arr = base:sub(1, -3), arr .. "[]" end
    local lt
    if base == "file" then lt = "file*"
    elseif BUILTIN[base] then lt = base
    elseif known[base] then lt = "abx." .. base
    else error(where .. ": type " .. alt .. " has no LuaLS rule (abx.run.luals)", 0) end
    out[#out + 1] = lt .. arr
  end
  return table.concat(out, "|"), optional
end

-- Source lines of the chunk `src` ("@lib/abx/x.lua"), cached; nil for a C function.
local sources = {}
local function source_lines(src)
  local path = src and src:match("^@(.+)$")
  if not path then return nil end
  if sources[path] == nil then
    local text = core.read_file(path)
    if not text then
      error("abxlua types: cannot read " .. path .. " (run from the project root: the doc comments "
        .. "are read from lib/)", 0)
    end
    local lines = {}
    for line in (text .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
    sources[path] = lines
  end
  return sources[path]
end

-- Splits "TYPE rest" where TYPE may hold spaces inside (), {}, [], <> or after ':' ',' '|'.
-- Returns the type, the rest, and whether the brackets are still open.
local function split_type(s)
  local depth, i, n = 0, 1, #s
  while i <= n do
    local c = s:sub(i, i)
    if c:match("[%(%{%[<]") then depth = depth + 1
    elseif c:match("[%)%}%]>]") then depth = depth - 1
    elseif c:match("%s") and depth <= 0 then
      local prev, nxt = s:sub(i - 1, i - 1), s:match("^%s*(.)", i)
      if not (prev:match("[:,|]") or nxt == "|") then break end
    end
    i = i + 1
  end
  return s:sub(1, i - 1), (s:sub(i):gsub("^%s+", "")), depth > 0
end

--- The doc comment above a Lua function: its description lines, its `---@param`s by name, its
--- `---@return` lines and other `---@` lines (verbatim). Empty for a C function.
---@param fn function
---@return {desc: string[], params: table<string, {type: string, desc: string, optional: boolean}>,
---  returns: string[], tags: string[]}
function M.doc(fn)
  local d = { desc = {}, params = {}, returns = {}, tags = {} }
  local info = debug.getinfo(fn, "S")
  local lines = info.what == "Lua" and source_lines(info.source)
  if not lines then return d end
  local first = info.linedefined
  while first > 1 and lines[first - 1]:match("^%s*%-%-%-") do first = first - 1 end
  local i = first
  local last -- the tag line an indented line continues: { kind = "param", name } or { kind = "return" }
  while i < info.linedefined do
    local text = lines[i]:gsub("^%s*%-%-%-%s?", "")
    local tag, rest = text:match("^@(%w+)%s*(.*)$")
    if not tag and last and lines[i]:match("^%s*%-%-%-%s%s+%S") then
      -- "---  more words": the description of the tag above goes on
      local more = text:gsub("^%s+", "")
      if last.kind == "return" then
        d.returns[#d.returns] = d.returns[#d.returns] .. " " .. more
      else
        local p = d.params[last.name]
        p.desc = p.desc .. (p.desc ~= "" and " " or "") .. more
      end
    elseif tag == "param" or tag == "return" then
      local name, body = "", rest
      if tag == "param" then name, body = rest:match("^([%w_%.]+%??)%s*(.*)$") end
      -- a type spanning lines continues on the following comment lines
      while name and select(3, split_type(body)) and i + 1 < info.linedefined do
        i = i + 1
        body = body .. " " .. lines[i]:gsub("^%s*%-%-%-%s*", "")
      end
      if tag == "return" then
        d.returns[#d.returns + 1] = body
        last = { kind = "return" }
      elseif name then
        local ty, desc = split_type(body)
        d.params[(name:gsub("%?$", ""))] = { type = ty, desc = desc, optional = name:match("%?$") }
        last = { kind = "param", name = (name:gsub("%?$", "")) }
      end
    elseif tag then
      d.tags[#d.tags + 1] = "@" .. tag .. (rest ~= "" and " " .. rest or "")
      last = nil
    elseif not text:match("^%-*$") then
      d.desc[#d.desc + 1] = text
      last = nil
    end
    i = i + 1
  end
  return d
end

--- The parameter names of a Lua function (and "..." when it takes varargs); nil for a C one.
---@param fn function
---@return string[]|nil
function M.params(fn)
  local info = debug.getinfo(fn, "u")
  if debug.getinfo(fn, "S").what ~= "Lua" then return nil end
  local names = {}
  for i = 1, info.nparams do names[i] = debug.getlocal(fn, i) end
  if info.isvararg then names[#names + 1] = "..." end
  return names
end

local function comment(out, text)
  for line in tostring(text):gmatch("[^\n]+") do out[#out + 1] = "---" .. line end
end

--- The doc comments of abx.core's C functions: each `/* core.NAME(ARGS) ... */` comment of
--- bindings/*.c (the function's own comment; a line ` * core.NAME(ARGS) ...` of a file comment
--- when it has none). Returns NAME -> { args = {names, "..."}, optional = {name = true},
--- text = {lines} }. Raises: nothing (no bindings/ directory gives an empty table).
---@return table<string, {args: string[], optional: table<string, boolean>, text: string[]}>
function M.c_docs()
  local out, weak = {}, {}
  for _, path in ipairs(core.list_files("bindings") or {}) do
    local text = path:match("%.c$") and core.read_file(path) or ""
    for body in text:gmatch("/%*(.-)%*/") do
      local lines = {}
      for l in body:gmatch("[^\n]+") do
        l = l:gsub("^%s*%*?%s?", ""):gsub("%s+$", "")
        if l ~= "" then lines[#lines + 1] = l end
      end
      for idx, l in ipairs(lines) do
        -- "core.isdir(path) -> boolean; core.exists(path) -> boolean" documents both
        for name, args in (l:match("^core%.") and l or ""):gmatch("core%.([%w_]+)(%b())") do
          local own = idx == 1
          local doc = { args = {}, optional = {}, text = own and lines or { l } }
          local depth = 0
          for piece in args:sub(2, -2):gmatch("[^,]+") do
            -- optional: inside "[...]", or after a "[" that opens before the name ("[, extra]")
            local br, at = piece:find("[", 1, true), piece:find("[%a_%.]")
            local opt = depth > 0 or (br and at and br < at)
            depth = depth + select(2, piece:gsub("%[", "")) - select(2, piece:gsub("%]", ""))
            local id = piece:match("%.%.%.") and "..." or piece:match("([%a_][%w_]*)")
            if id then
              doc.args[#doc.args + 1] = id
              if opt then doc.optional[id] = true end
            end
          end
          if own and not out[name] then out[name] = doc
          elseif not own and not weak[name] then weak[name] = doc end
        end
      end
    end
  end
  for name, doc in pairs(weak) do out[name] = out[name] or doc end
  return out
end

--- A doc comment's first `---@return` with the result a declaration names: when it says only
--- `table`, `table[]` or an inline `{...}` (optionally `|nil`), the declared `abx.<result>` takes
--- its place (an array when either says so); any other type is kept.
---@param r string the `---@return` text
---@param result string e.g. "SandboxInfo[]"
---@return string
function M.refine_return(r, result)
  local ty, rest = split_type(r)
  local nilable = ty:match("|nil$")
  local core_ty = nilable and ty:sub(1, -5) or ty
  local array = core_ty:match("%[%]$") or result:match("%[%]$")
  local base = core_ty:gsub("%[%]$", "")
  if base ~= "table" and not base:match("^%b{}$") then return r end
  ty = "abx." .. result:gsub("%[%]$", "") .. (array and "[]" or "") .. (nilable and "|nil" or "")
  return ty .. (rest ~= "" and " " .. rest or "")
end

--- Appends the declaration of one function: its summary and doc comment, `---@param`s (the
--- options of `call`, when given, for its last parameter), `---@return`s, and the stub
--- `function <owner><sep><name>(params) end`. `drop_first`: a method, whose first parameter is
--- the object. Returns the call it linked (or nil).
local function declare_function(out, owner, sep, name, fn, summary, call, drop_first, result, cdoc)
  local d = M.doc(fn)
  if summary then comment(out, summary) end
  for _, line in ipairs(d.desc) do out[#out + 1] = "---" .. line end
  local names = M.params(fn)
  if not names and cdoc then
    -- a C function: its comment in bindings/ gives the argument names and the description
    for _, line in ipairs(cdoc.text) do out[#out + 1] = "---" .. line end
    names = {}
    for _, a in ipairs(cdoc.args) do
      names[#names + 1] = a
      if a ~= "..." then d.params[a] = { type = "any", desc = "", optional = cdoc.optional[a] } end
    end
  end
  names = names or { "..." }
  if drop_first and names[1] and names[1] ~= "..." then table.remove(names, 1) end
  local linked, opts_at = nil, #names
  for idx, p in ipairs(names) do
    if p == "opts" then opts_at = idx end
  end
  for idx, p in ipairs(names) do
    local doc = d.params[p]
    if call and idx == opts_at and p ~= "..." and not (doc and doc.type:find(M.opts_class(call), 1, true)) then
      out[#out + 1] = string.format("---@param %s? %s%s", p, M.opts_class(call),
        doc and doc.desc ~= "" and (" " .. doc.desc) or "")
      linked = call
    elseif doc then
      if call and idx == opts_at then linked = call end
      out[#out + 1] = string.format("---@param %s%s %s%s", p, doc.optional and "?" or "", doc.type,
        doc.desc ~= "" and (" " .. doc.desc) or "")
    elseif p == "..." then
      out[#out + 1] = "---@param ... any"
    end
  end
  for n, r in ipairs(d.returns) do
    if n == 1 and result then r = M.refine_return(r, result) end
    out[#out + 1] = "---@return " .. r
  end
  for _, tg in ipairs(d.tags) do out[#out + 1] = "---" .. tg end
  out[#out + 1] = string.format("function %s%s%s(%s) end", owner, sep, name, table.concat(names, ", "))
  out[#out + 1] = ""
  return linked
end

local function header(what, module)
  return { "---@meta " .. (module or "_"),
    "-- " .. what,
    "-- Generated by `abxlua types --write` (abx.run.luals) from lib/abx/ and the comments of",
    "-- bindings/; `ctest -R types_meta` fails when it is stale. Do not edit it by hand.", "" }
end

--- A callback option's LuaLS type from its description "on_x(a, b) ...": `fun(a: any, b: any)`,
--- with the declared result table or object the description names for a single argument
--- ("on_result(result) per Result" -> `fun(result: abx.Result)`). Any other type is returned as is.
---@param name string the option
---@param lt string its LuaLS type so far
---@param desc string its description
---@param known table<string, boolean> declared classes and shapes
---@return string
function M.callback_type(name, lt, desc, known)
  local args = lt == "function" and desc:match("^" .. name:gsub("%p", "%%%0") .. "%(([^%)]*)%)")
  if not args then return lt end
  local names = {}
  for a in args:gmatch("[%a_][%w_]*") do names[#names + 1] = a end
  local shape
  for word in desc:gmatch("%u[%w_]*") do
    if known[word] and not shape then shape = word end
  end
  for i, a in ipairs(names) do
    names[i] = a .. ": " .. ((#names == 1 and shape) and ("abx." .. shape) or "any")
  end
  return "fun(" .. table.concat(names, ", ") .. ")"
end

-- Declares the fields of a declared list as `---@field` lines of class `cls`. `sub` finds the
-- options class of a nested table option ("conn:create network").
local function fields(out, list, known, where, optional_all, sub)
  for _, f in ipairs(list) do
    local lt, opt = M.luals_type(f[2], known, where .. "." .. f[1])
    if sub then lt = sub(f[1]) or lt end
    lt = M.callback_type(f[1], lt, f[3], known)
    out[#out + 1] = string.format("---@field %s%s %s %s", f[1], (opt or optional_all) and "?" or "",
      lt, (f[3]:gsub("\n", " ")))
  end
end

local function ident(name) return (name:gsub("[^%w]", "_")) end

-- types_options.lua: the options of every call. `used` gets the nested options classes named.
local function options_file(R, known, used)
  local out = header("The options tables of the calls (abx.client.options declarations).")
  for _, spec in ipairs(R.calls) do
    comment(out, spec.summary .. " (" .. spec.module .. ")")
    out[#out + 1] = "---@class " .. M.opts_class(spec.call)
    fields(out, spec.list, known, spec.call, true, function(key)
      if R.by_call[spec.call .. " " .. key] then
        used[spec.call .. " " .. key] = true
        return M.opts_class(spec.call .. " " .. key)
      end
      if R.by_call[spec.call .. " " .. key .. "[i]"] then
        used[spec.call .. " " .. key .. "[i]"] = true
        return M.opts_class(spec.call .. " " .. key .. "[i]") .. "[]"
      end
    end)
    out[#out + 1] = ""
  end
  return out
end

-- types_results.lua: the result tables.
local function results_file(R, known)
  local out = header("The result tables (abx.client.options shapes): an unknown field raises InvalidArgument.")
  for _, s in ipairs(R.shapes) do
    comment(out, s.summary .. " (" .. s.module .. ")")
    out[#out + 1] = "---@class abx." .. s.name
    fields(out, s.list, known, s.name, false)
    out[#out + 1] = ""
  end
  return out
end

-- Declares one method `m` ({ signature, description }) of class `c` into `out`; a problem when it
-- does not exist or names options nobody declared. Returns the options call it is linked to.
local function object_method(out, R, known, c, m, problems)
  local mname = m[1]:match("^([%w_]+)")
  local fn = c.class[mname]
  if type(fn) ~= "function" then
    problems[#problems + 1] = c.name .. ": declared method " .. mname .. " does not exist"
    return nil
  end
  local call = m[2]:match("%(options: ([^%)]+)%)")
  if not call and CLASS_PREFIX[c.name] and R.by_call[CLASS_PREFIX[c.name] .. ":" .. mname] then
    call = CLASS_PREFIX[c.name] .. ":" .. mname
  end
  if call and not R.by_call[call] then
    problems[#problems + 1] = c.name .. ":" .. mname .. " names options of " .. call
      .. ", which are not declared"
    call = nil
  end
  -- the first result table or object the declaration names, e.g. "SandboxInfo[]"
  local result
  for word, arr in m[2]:gmatch("(%u[%w_]*)(%[?%]?)") do
    if known[word] and not result then result = word .. arr end
  end
  return declare_function(out, ident(c.name), ":", mname, fn, m[1] .. ": " .. m[2], call, true,
    result)
end

-- types_objects.lua: the objects, their fields and methods.
local function objects_file(R, known, used, problems)
  local out = header("The objects (abx.client.options classes): Sandbox, Connection, Commands, Files, Pty, "
    .. "watches, the agent server.")
  for _, c in ipairs(R.classes) do
    comment(out, c.summary .. " (" .. c.module .. ")")
    out[#out + 1] = "---@class abx." .. c.name
    fields(out, c.list, known, c.name, false)
    out[#out + 1] = "local " .. ident(c.name) .. " = {}"
    out[#out + 1] = ""
    for _, m in ipairs(c.methods) do
      local linked = object_method(out, R, known, c, m, problems)
      if linked then used[linked] = true end
    end
  end
  return out
end

-- types_errors.lua: the error kinds and the error object.
local function errors_file()
  local out = header("The error kinds (core.KINDS, bindings/errors.c) and the error object.")
  out[#out + 1] = "---@alias abx.ErrorKind"
  for _, k in ipairs(core.KINDS) do
    out[#out + 1] = string.format("---| %q # %s", k, (tostring(core.KINDS[k]):gsub("\n", " ")))
  end
  out[#out + 1] = ""
  for _, l in ipairs({ "An error raised by abxlua (metatable abx.error; tostring gives \"Kind: METHOD path answered "
    .. "status: message\" with a request, else \"Kind (status): message\").",
    "Tell it from a Lua error with core.is_error(e); t.raises(kind, fn) returns it." }) do
    out[#out + 1] = "---" .. l
  end
  out[#out + 1] = "---@class abx.Error"
  out[#out + 1] = "---@field kind abx.ErrorKind what went wrong"
  out[#out + 1] = "---@field status integer the HTTP status, 0 when none"
  out[#out + 1] = "---@field message string what happened (secrets masked)"
  out[#out + 1] = "---@field code? string the server's error code, when it sent one"
  out[#out + 1] = "---@field request? string the request, e.g. \"GET /sandboxes/x\""
  out[#out + 1] = ""
  return out
end

-- types_ctx.lua: ctx, its fixtures.
local function ctx_file()
  local fixtures = require("abx.run.fixtures")
  local out = header("ctx, the argument of every test function (abx.run.fixtures).")
  out[#out + 1] = "---The per-test context: fixtures created on first access and torn down after the test;"
  out[#out + 1] = "---any other name raises an error naming the fixtures."
  out[#out + 1] = "---@class abx.Ctx"
  for _, f in ipairs(fixtures.FIXTURES) do
    out[#out + 1] = string.format("---@field %s %s %s", f[1], f[2], f[3])
  end
  out[#out + 1] = ""
  return out
end

-- The public names of module `mod` (require(public)) that its meta file declares, sorted.
local function public_keys(public, mod)
  local keys = {}
  for k, v in pairs(mod) do
    if type(k) == "string" and not k:match("^_") and k:match("^[%a_][%w_]*$") then keys[#keys + 1] = k end
    if public == "abx.test" and type(v) ~= "function" then keys[#keys] = nil end
  end
  table.sort(keys)
  return keys
end

-- The meta file of one module scenarios require (`public`, e.g. "abx.core"); the options of
-- t.test live in the registry too ("t.test"). `used` gets the options calls its functions take.
local function module_file(R, public, cdocs, used)
  local mod = require(public)
  local var = public:match("([%w_]+)$")
  if var == "test" then var = "t" end
  local out = header("require(\"" .. public .. "\")" .. (PUBLIC[public] and (" (" .. PUBLIC[public] .. ")") or "")
    .. ".", public)
  out[#out + 1] = "local " .. var .. " = {}"
  out[#out + 1] = ""
  local prefix = var == "t" and "t" or var
  for _, k in ipairs(public_keys(public, mod)) do
    local v = mod[k]
    if type(v) == "function" then
      local call = R.by_call[prefix .. "." .. k] and (prefix .. "." .. k) or nil
      local linked = declare_function(out, var, ".", k, v, nil, call, false, nil,
        public == "abx.core" and cdocs[k] or nil)
      if linked then used[linked] = true end
    else
      local lt = math.type(v) or type(v)
      if lt == "float" then lt = "number" end
      for _, c in ipairs(R.classes) do
        if c.class == v then lt = "abx." .. c.name .. " the class table" end
      end
      out[#out + 1] = "---@type " .. lt
      out[#out + 1] = var .. "." .. k .. " = nil"
      out[#out + 1] = ""
    end
  end
  out[#out + 1] = "return " .. var
  return out
end

-- Adds the meta file of every module scenarios require (PUBLIC, abx.test, abx.core) to `files`.
local function module_files(R, files, used)
  local names = {}
  for public in pairs(PUBLIC) do names[#names + 1] = public end
  names[#names + 1] = "abx.test"
  names[#names + 1] = "abx.core"
  table.sort(names)
  local cdocs = M.c_docs()
  for _, public in ipairs(names) do
    files[public:match("^abx%.(.+)$") .. ".lua"] = module_file(R, public, cdocs, used)
  end
end

-- An abx.* type a doc comment names that no declaration defines (an internal object such as
-- abx.EnvdClient) is declared opaque in types_objects.lua, so that a reference never dangles.
local function declare_opaque(files)
  local defined, missing = {}, {}
  for _, lines in pairs(files) do
    for _, l in ipairs(lines) do
      local d = l:match("^%-%-%-@class ([%w_%.]+)") or l:match("^%-%-%-@alias ([%w_%.]+)")
      if d then defined[d] = true end
    end
  end
  for _, lines in pairs(files) do
    for _, l in ipairs(lines) do
      if l:match("^%-%-%-@[prft][ae][rtiy]") then
        for ref in l:gmatch("abx%.[%w_%.]*[%w_]") do
          if not defined[ref] and ref:match("^abx%.[A-Z]") then missing[ref] = true end
        end
      end
    end
  end
  local opaque = {}
  for ref in pairs(missing) do opaque[#opaque + 1] = ref end
  table.sort(opaque)
  local out = files["types_objects.lua"]
  for _, ref in ipairs(opaque) do
    out[#out + 1] = "---An internal object that doc comments name; it has no declaration in abx.client.options."
    out[#out + 1] = "---@class " .. ref
    out[#out + 1] = ""
  end
end

--- Renders every meta file. Returns a table file name -> text, in which every declared call,
--- option, shape, field, class, method, fixture, t function and error kind appears, and the
--- problems found (a call no function takes, a declared method that does not exist).
---@return table<string, string> files, string[] problems
function M.render()
  for _, m in ipairs(require("abx.run.cmd.api").MODULES) do require(m) end
  local R = options.REGISTRY
  local known, problems, used = {}, {}, {}
  for _, s in ipairs(R.shapes) do known[s.name] = true end
  for _, c in ipairs(R.classes) do known[c.name] = true end
  local files = {}
  files["types_options.lua"] = options_file(R, known, used)
  files["types_results.lua"] = results_file(R, known)
  files["types_objects.lua"] = objects_file(R, known, used, problems)
  files["types_errors.lua"] = errors_file()
  files["types_ctx.lua"] = ctx_file()
  module_files(R, files, used)
  for _, spec in ipairs(R.calls) do
    if not used[spec.call] then
      problems[#problems + 1] = "options of " .. spec.call .. " are taken by no declared function "
        .. "(name them in the method's description as \"(options: " .. spec.call .. ")\")"
    end
  end
  declare_opaque(files)
  local texts = {}
  for name, lines in pairs(files) do texts[name] = table.concat(lines, "\n") .. "\n" end
  return texts, problems
end

return M
