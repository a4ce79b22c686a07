-- Editor case: the LuaLS meta files of types/abx/ cover the declarations (issue 13, item 6).
-- Debian 12 packages no lua-language-server, so instead of `lua-language-server --check` this
-- reads the committed files on their own (not through abx.run.luals) and checks that every call
-- and option, result table and field, object with its fields and methods, fixture of ctx,
-- function of t and of each public module, and error kind appears, and that every abx.* type a
-- `---@param`, `---@return`, `---@field` or `---@type` names is declared in them; and that the
-- root's .luarc.json gives LuaLS Lua 5.4 and types/ as its library.
-- Expected (-j 1): every test passes; exit code 0.
-- expect-no-line: ^(FAILED|ERROR)
local t = require("abx.test")
local core = require("abx.core")
local options = require("abx.client.options")

local DIR = "types/abx"

-- Every meta file: its module (---@meta NAME), classes (name -> {fields, methods}), functions
-- of the module table, aliases with their members, and the type names it references.
local function parse()
  local m = { classes = {}, modules = {}, aliases = {}, refs = {}, files = {} }
  for _, path in ipairs(core.list_files(DIR) or {}) do
    local text = core.read_file(path)
    m.files[#m.files + 1] = path
    local meta = text:match("^%-%-%-@meta ([%w_%.]+)")
    t.ok(meta, path .. " starts with ---@meta")
    local mod = meta ~= "_" and { functions = {}, fields = {} } or nil
    if mod then m.modules[meta] = mod end
    local class, var_class, alias = nil, {}, nil
    local modvar = text:match("\nreturn ([%w_]+)%s*$")
    for line in text:gmatch("[^\n]+") do
      local c = line:match("^%-%-%-@class ([%w_%.]+)")
      if c then
        class = c
        m.classes[c] = m.classes[c] or { fields = {}, methods = {} }
      end
      local f = line:match("^%-%-%-@field ([%w_]+)")
      if f and class then m.classes[class].fields[f] = true end
      local v = line:match("^local ([%w_]+) = {}$")
      if v and class then var_class[v] = class end
      local a = line:match("^%-%-%-@alias ([%w_%.]+)")
      if a then alias = a; m.aliases[a] = {} end
      local member = line:match('^%-%-%-| "([^"]+)"')
      if member and alias then m.aliases[alias][member] = true end
      local owner, meth = line:match("^function ([%w_]+):([%w_]+)%(")
      if owner and var_class[owner] then m.classes[var_class[owner]].methods[meth] = true end
      local mv, fn = line:match("^function ([%w_]+)%.([%w_]+)%(")
      if mv and mod and mv == modvar then mod.functions[fn] = true end
      local fv, fld = line:match("^([%w_]+)%.([%w_]+) = nil$")
      if fv and mod and fv == modvar then mod.fields[fld] = true end
      if line:match("^%-%-%-@[prft][ae][rtiy][a-z]* ") then
        for ref in line:gmatch("abx%.[%w_%.]*[%w_]") do
          if ref:match("^abx%.[A-Z]") or ref:match("^abx%.opts%.") then
            m.refs[ref] = (m.refs[ref] or path .. ": " .. line)
          end
        end
      end
    end
  end
  return m
end

local function load_all()
  for _, mod in ipairs(require("abx.run.cmd.api").MODULES) do require(mod) end
  return options.REGISTRY
end

local function missing_list(list)
  table.sort(list)
  return table.concat(list, "\n  ")
end

t.test("every call's options and every option are in the meta files", function()
  local R, m, missing = load_all(), parse(), {}
  t.ok(#R.calls > 30, "the registry holds the calls")
  for _, spec in ipairs(R.calls) do
    local cls = m.classes["abx.opts." .. spec.call:gsub("[^%w]+", "_"):gsub("_+$", "")]
    if not cls then
      missing[#missing + 1] = "options of " .. spec.call
    else
      for _, o in ipairs(spec.list) do
        if not cls.fields[o[1]] then missing[#missing + 1] = spec.call .. " option " .. o[1] end
      end
    end
  end
  t.eq(missing_list(missing), "", "declared but not in " .. DIR)
end)

t.test("every result table and object, with its fields and methods, is in the meta files", function()
  local R, m, missing = load_all(), parse(), {}
  for _, s in ipairs(R.shapes) do
    local cls = m.classes["abx." .. s.name]
    if not cls then missing[#missing + 1] = "result table " .. s.name end
    for _, f in ipairs(s.list) do
      if cls and not cls.fields[f[1]] then missing[#missing + 1] = s.name .. "." .. f[1] end
    end
  end
  local seen = {}
  for _, c in ipairs(R.classes) do
    seen[c.name] = true
    local cls = m.classes["abx." .. c.name]
    if not cls then missing[#missing + 1] = "object " .. c.name end
    for _, f in ipairs(c.list) do
      if cls and not cls.fields[f[1]] then missing[#missing + 1] = c.name .. "." .. f[1] end
    end
    for _, n in ipairs(c.method_names) do
      if cls and not cls.methods[n] then missing[#missing + 1] = c.name .. ":" .. n end
    end
    -- and every public function the object really has
    for k, v in pairs(c.class) do
      if type(v) == "function" and type(k) == "string" and not k:match("^_") and cls
          and not cls.methods[k] then
        missing[#missing + 1] = c.name .. ":" .. k .. " (a function of the class)"
      end
    end
  end
  for _, name in ipairs({ "Sandbox", "Connection", "Commands", "CommandHandle", "Files", "Pty",
      "PtyHandle", "WatchHandle", "Watcher", "CommandResult", "EntryInfo", "Execution" }) do
    t.ok(seen[name] or m.classes["abx." .. name], name .. " is declared")
  end
  t.eq(missing_list(missing), "", "declared but not in " .. DIR)
end)

t.test("ctx's fixtures, t's functions and options, and the error kinds are in the meta files", function()
  local m, missing = parse(), {}
  local ctx = m.classes["abx.Ctx"]
  t.ok(ctx, "abx.Ctx is declared")
  for _, f in ipairs(require("abx.run.fixtures").FIXTURES) do
    if not ctx.fields[f[1]] then missing[#missing + 1] = "ctx." .. f[1] end
  end
  local tm = m.modules["abx.test"]
  t.ok(tm, "abx.test has a meta file")
  for k, v in pairs(t) do
    if type(v) == "function" and not k:match("^_") and not tm.functions[k] then
      missing[#missing + 1] = "t." .. k
    end
  end
  for _, k in ipairs(core.KINDS) do
    if not m.aliases["abx.ErrorKind"][k] then missing[#missing + 1] = "error kind " .. k end
  end
  t.ok(m.classes["abx.Error"] and m.classes["abx.Error"].fields.kind, "abx.Error has kind")
  t.eq(missing_list(missing), "", "not in " .. DIR)
end)

t.test("every public module's functions are in its meta file", function()
  local m, missing = parse(), {}
  local public = { ["abx.test"] = true, ["abx.core"] = true }
  for name in pairs(require("abx.run.cli").PUBLIC) do public[name] = true end
  for name in pairs(public) do
    local mm = m.modules[name]
    if not mm then
      missing[#missing + 1] = "module " .. name
    else
      for k, v in pairs(require(name)) do
        if type(k) == "string" and not k:match("^_") and type(v) == "function" and not mm.functions[k] then
          missing[#missing + 1] = name .. "." .. k
        end
      end
    end
  end
  t.eq(missing_list(missing), "", "not in " .. DIR)
end)

t.test("every abx type the meta files name is declared in them", function()
  local m, dangling = parse(), {}
  local n = 0
  for ref, where in pairs(m.refs) do
    n = n + 1
    if not m.classes[ref] and not m.aliases[ref] then dangling[#dangling + 1] = ref .. " (" .. where .. ")" end
  end
  t.ok(n > 50, "the files reference the declared types")
  t.eq(missing_list(dangling), "", "named but not declared")
end)

t.test("the root's .luarc.json points LuaLS at types/ for Lua 5.4", function()
  local cjson = require("cjson")
  local rc = cjson.decode(core.read_file(".luarc.json"))
  t.eq(rc.runtime.version, "Lua 5.4")
  local lib = {}
  for _, d in ipairs(rc.workspace.library) do
    lib[d] = true
    t.ok(core.isdir(d), "library " .. d .. " exists")
  end
  t.ok(lib.types, "types/ is a library: require(\"abx.test\") finds types/abx/test.lua")
  t.ok(core.exists("types/abx/test.lua"), "types/abx/test.lua exists")
  -- lib/ declares the same classes inline (---@class abx.Sandbox): the editor sees one of them
  local ignored = {}
  for _, d in ipairs(rc.workspace.ignoreDir) do ignored[d] = true end
  t.ok(ignored.lib, "lib/ is ignored, so the classes are not declared twice")
  t.ok(not ignored.scenarios, "scenarios/ is checked")
  t.eq(#rc.diagnostics.globals, 0, "scenarios have no globals of the project's own")
end)

t.test("every meta file is Lua and every annotation is well-formed", function()
  local bad, tags = {}, { meta = true, class = true, field = true, param = true, ["return"] = true,
    alias = true, type = true, overload = true }
  local files = core.list_files(DIR) or {}
  t.ok(#files > 10, "the meta files are there")
  for _, path in ipairs(files) do
    local text = core.read_file(path)
    local chunk, err = load(text, "@" .. path, "t")
    if not chunk then bad[#bad + 1] = err end
    local n = 0
    for line in text:gmatch("[^\n]*") do
      n = n + 1
      local tag, rest = line:match("^%-%-%-@(%w+)%s*(.*)$")
      if tag and not tags[tag] then bad[#bad + 1] = path .. ":" .. n .. ": unknown annotation @" .. tag end
      if (tag == "param" or tag == "field") and not rest:match("^[%w_%.]+%??%s+%S") then
        bad[#bad + 1] = path .. ":" .. n .. ": @" .. tag .. " needs a name and a type: " .. line
      end
      -- a type's brackets close on its line (a type never spans lines in these files): read the
      -- type after the name up to a blank outside brackets, as LuaLS does
      if tag == "param" or tag == "field" or tag == "return" then
        local ty = tag == "return" and rest or rest:gsub("^[%w_%.]+%??%s+", "")
        local depth, i = 0, 1
        while i <= #ty do
          local c = ty:sub(i, i)
          if c:match("[%(%{%[<]") then depth = depth + 1
          elseif c:match("[%)%}%]>]") then depth = depth - 1
          elseif c:match("%s") and depth == 0 and not ty:sub(i - 1, i - 1):match("[:,|]") then break end
          if depth < 0 then break end
          i = i + 1
        end
        if depth ~= 0 then bad[#bad + 1] = path .. ":" .. n .. ": unbalanced type: " .. line end
      end
    end
  end
  t.eq(missing_list(bad), "", "malformed")
end)
