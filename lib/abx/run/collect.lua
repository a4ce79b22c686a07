-- abx.run.collect: finds scenario files and loads each in its own environment, gathering its tests.
-- A file that does not load (syntax error, error at top level, unknown marker) becomes a
-- collection error naming the file and line; the other files are still collected.
local core = require("abx.core")
local suggest = require("abx.suggest")
local config = require("abx.run.config")
local output = require("abx.run.output")
local test_api = require("abx.test")

local M = {}

local function parent(p) return p:match("^(.*)/[^/]*$") end

---The template folder (a directory holding template.yaml) that `f` lies in, the nearest one,
---looking no higher than `root` (a directory; "" for no bound), or nil.
---@param f string
---@param root string
---@return string|nil
function M.template_folder(f, root)
  local dir = parent(f)
  while dir and dir ~= "" and #dir >= #root do
    if core.exists(dir .. "/template.yaml") then return dir end
    dir = parent(dir)
  end
  return nil
end

---The template folder whose scenario script `f` is (<folder>/<folder name>.lua), or nil.
---@param f string
---@return string|nil
function M.template_of(f)
  local dir = M.template_folder(f, "")
  if dir and f == dir .. "/" .. dir:match("([^/]+)$") .. ".lua" then return dir end
  return nil
end

---The normal form of a path as ids print it: no "./" segments, no repeated or trailing "/",
---and relative to the working directory when it lies below it (pytest's node ids are relative
---too), so `./scenarios/`, `scenarios//x.lua` and an absolute path give the same ids.
---@param p string
---@return string
function M.normalize(p)
  local abs = p:sub(1, 1) == "/"
  local parts = {}
  for seg in p:gmatch("[^/]+") do
    if seg ~= "." then parts[#parts + 1] = seg end
  end
  local out = (abs and "/" or "") .. table.concat(parts, "/")
  if out == "" then return abs and "/" or "." end
  if abs then
    local cwd = core.realpath(".")
    if cwd and cwd ~= "/" and out:sub(1, #cwd + 1) == cwd .. "/" then out = out:sub(#cwd + 2) end
  end
  return out
end

-- The project root as an absolute path (M.set_root), or nil: helper paths are judged below it.
local project_root = nil

-- Why `p` is a helper module and not a scenario (nil when it is a scenario): named _*.lua, or
-- lying in a directory named lib (scenarios/lib/, scenarios/**/lib/). Only the part of the path
-- below `base` counts (a walk's directory, or the project root for an absolute path).
local function helper_reason(p, base)
  local rel = p
  if base and base ~= "" and p:sub(1, #base + 1) == base .. "/" then rel = p:sub(#base + 2) end
  local leaf = rel:match("([^/]+)$") or ""
  if leaf:match("^_") then return "it is named _*" .. (leaf:match("%.%w+$") or "") end
  local dir = rel:match("^(.*)/[^/]*$") or ""
  for part in dir:gmatch("[^/]+") do
    if part == "lib" then return "it lies in a lib/ directory" end
  end
  return nil
end
M.helper_reason = helper_reason

-- helper_reason for a path named on the command line: judged below the project root when it
-- lies there (so `abxlua run mylib.lua` inside scenarios/lib/ is caught too), else as given.
-- `leaf` is appended to a directory (judged as a file in it).
local function judge(p, leaf)
  local r = core.realpath(p)
  if project_root and r and r:sub(1, #project_root + 1) == project_root .. "/" then
    return helper_reason(r .. (leaf or ""), project_root)
  end
  return helper_reason(p .. (leaf or ""), nil)
end

---Whether `path` is a YAML scenario (`*.yaml` or `*.yml`, compiled by abx.run.declarative), not a
---Lua one.
---@param path string
---@return boolean
function M.is_yaml(path)
  return path:match("%.yaml$") ~= nil or path:match("%.yml$") ~= nil
end

---Whether a walk takes `f` as a scenario: a Lua file (`*.lua`) or a YAML scenario (`*.yaml` or
---`*.yml`, abx.run.declarative). Inside a template folder only its script <name>.lua is one (its
---template.yaml is the recipe), whatever this says.
---@param f string
---@return boolean
function M.is_scenario_name(f)
  return f:match("%.lua$") ~= nil or M.is_yaml(f)
end

---Expands paths into sorted scenario files (`*.lua`, `*.yaml` and `*.yml`). A directory walk does
---not descend into template folders (scenarios/templates/<name>/, holding template.yaml) unless the
---directory named is the folder itself or the one holding it (`abxlua run scenarios/templates/`):
---a template folder runs only when named; from it only its script <name>.lua is a scenario (the
---rest is what it copies). A walk skips helper modules: files named _*.lua or _*.yaml and files
---under a directory named lib (below the directory walked). A helper named explicitly (a file,
---or a directory that is itself a lib/ directory) is a usage error, returned in `helpers`.
---@param paths string[] files or directories
---@return string[] files, string[] problems (paths that do not exist), string[] helpers (named
---  helper modules: "PATH is a helper module, not a scenario (...)")
function M.files(paths)
  local out, seen, problems, helpers = {}, {}, {}, {}
  local function helper(p, why, what)
    helpers[#helpers + 1] = string.format("%s is a %s, not a scenario (%s; files under a lib/ "
      .. "directory or named _*.lua / _*.yaml are modules and data that scenarios require, never "
      .. "run themselves); "
      .. "run the scenarios that require it", p, what or "helper module", why)
  end
  for _, p in ipairs(paths) do
    p = M.normalize(p)
    if core.isdir(p) then
      local root = (p:gsub("/+$", ""))
      local why = judge(root, "/x")
      if why then
        helper(p, (why:gsub("^it lies", "it is or lies")), "directory of helper modules")
      else
        local list = core.list_files(root)
        for _, f in ipairs(list or {}) do
          local tf = M.template_folder(f, root)
          local take = M.is_scenario_name(f) and not seen[f] and not helper_reason(f, root)
          if take and tf then
            take = (tf == root or parent(tf) == root) and M.template_of(f) == tf
          end
          f = M.normalize(f)
          if take and not seen[f] then seen[f] = true; out[#out + 1] = f end
        end
      end
    elseif core.exists(p) then
      local why = judge(p)
      if why then helper(p, why)
      elseif not seen[p] then seen[p] = true; out[#out + 1] = p end
    else
      problems[#problems + 1] = p
    end
  end
  table.sort(out)
  return out, problems, helpers
end

---Puts the project's scenarios/?.lua and scenarios/lib/?.lua first on package.path, as absolute
---paths, so a scenario's require("lib.mylib") or require("mylib") finds
---scenarios/lib/mylib.lua from any working directory. Idempotent.
---@param root string the project root (abx.run.config.root)
function M.set_root(root)
  local abs = core.realpath(root) or root
  project_root = abs
  local add = abs .. "/scenarios/?.lua;" .. abs .. "/scenarios/lib/?.lua;"
  if package.path:sub(1, #add) ~= add then package.path = add .. package.path end
end

-- A scenario's globals: the standard library, read-only, with print and io masked (abx.run.output);
-- reading an unknown name is an error so a typo fails loudly instead of yielding nil.
local function scenario_env()
  local env = {}
  return setmetatable(env, {
    __index = function(_, k)
      local v = output.GLOBALS[k]
      if v == nil then v = _G[k] end
      if v == nil then
        error(string.format("unknown global variable %q (declare it `local`)", tostring(k)), 2)
      end
      return v
    end,
  })
end

-- Ways out of the run that a scenario must not reach (issue 9, item 6): os.exit would end the
-- run with the scenario's code and no summary, reports or cleanup (a false green), and
-- debug.sethook would remove the hook that enforces deadlines. Both are replaced, for the whole
-- process, before the first scenario file is loaded; the engine itself uses neither.
--
-- `require` is wrapped for the same whole process (before the first file): what a helper module
-- declares at its top level (t.fixture, t.before_each, t.after_each) is recorded when it is first
-- loaded, and declared again for every later file that requires it (a module is loaded once), so
-- each file that requires it gets its fixtures; the module itself, its state included, is shared.
local declared_by = {} -- module name -> the declarations made while it loaded (nested ones too)
local loading = {}     -- the declaration lists of the modules loading now
local current_declare = nil -- the collector of the file being loaded

local function declare(d)
  for _, list in ipairs(loading) do list[#list + 1] = d end
  if current_declare then current_declare(d, true) end
end

local real_require = require
local function tracked_require(name)
  if package.loaded[name] ~= nil then
    if current_declare then
      for _, d in ipairs(declared_by[name] or {}) do declare(d) end
    end
    return package.loaded[name]
  end
  local list = {}
  loading[#loading + 1] = list
  local res = table.pack(pcall(real_require, name))
  table.remove(loading)
  if not res[1] then error(res[2], 2) end
  declared_by[name] = list
  return table.unpack(res, 2, res.n)
end

local sealed = false
local function seal()
  if sealed then return end
  sealed = true
  _G.require = tracked_require
  os.exit = function()
    core.error("InvalidArgument", 0, "os.exit is not available to scenarios: a test ends by "
      .. "returning, failing (t.fail) or skipping (t.skip); the run's exit code is abxlua's")
  end
  debug.sethook = function()
    core.error("InvalidArgument", 0, "debug.sethook is not available to scenarios: the engine's "
      .. "hook enforces each test's deadline")
  end
end

-- The error kinds a known issue's `raises` may name: the engine's one list (bindings/errors.c),
-- an array of names that also maps each name to its description.
local KINDS = core.KINDS

-- The declarations of one file: its fixtures (name -> declaration), its hooks ({ before_each,
-- after_each } lists of functions), and `declaration(d)`, which adds a fixture or hook declared
-- by the file or by a helper module it requires (once each).
local function declarations()
  local fixtures, hooks = {}, { before_each = {}, after_each = {} }
  local seen = {}
  local function declaration(d)
    if seen[d] then return end
    seen[d] = true
    if d.kind == "fixture" then
      local other = fixtures[d.name]
      if other then
        error(string.format("fixture %q is declared twice (%s and %s)", d.name, other.where,
          d.where), 0)
      end
      fixtures[d.name] = d
    else
      local list = hooks[d.kind]
      list[#list + 1] = d.fn
    end
  end
  return fixtures, hooks, declaration
end

-- The known-issues catalog's path, for messages.
local function catalog_path(catalog)
  return catalog and catalog.path or "config/known_issues.yaml"
end

-- Checks a test's markers: each registered, and not "known_issue" written by hand. Called by the
-- collector: its errors (level 4) point at the scenario's t.test call.
local function check_markers(spec, markers, catalog)
  for _, m in ipairs(spec.opts.markers or {}) do
    -- the marker is the runner's: written by hand it would select the test under
    -- -m known_issue while pinning nothing (no catalog entry, no strict XPASS)
    if m == "known_issue" and not spec.opts.known_issue then
      error(string.format("test %q uses the marker \"known_issue\" without the option: write "
        .. "known_issue = \"KI-NNN\" (an entry of %s) instead; the runner adds the marker itself",
        spec.name, catalog_path(catalog)), 4)
    end
    if not markers[m] then
      local known = {}
      for n in pairs(markers) do known[#known + 1] = n end
      table.sort(known)
      error(string.format("test %q uses unknown marker %q%s; register it under `markers:` in "
        .. "config/abxlua.yaml (registered: %s)", spec.name, tostring(m), suggest.hint(m, known),
        table.concat(known, ", ")), 4)
    end
  end
end

-- Checks a test's `requires` (known capabilities), `known_issue` (in the catalog) and `raises`
-- (an error kind, with a known issue). Called by the collector: errors at the t.test call.
local function check_options(spec, catalog)
  for i, c in ipairs(spec.opts.requires or {}) do
    if type(c) ~= "string" or not config.CAPABILITY_SET[c] then
      error(string.format("test %q requires unknown capability %s (requires[%d]; known: %s)",
        spec.name, type(c) == "string" and string.format("%q", c) or tostring(c), i,
        table.concat(config.CAPABILITIES, ", ")), 4)
    end
  end
  local ki = spec.opts.known_issue
  if ki and not (catalog and catalog.entries[ki]) then
    error(string.format("test %q references unknown known issue %q; add it to %s or fix the id",
      spec.name, ki, catalog_path(catalog)), 4)
  end
  if spec.opts.raises and not ki then
    error(string.format("test %q: `raises` only goes with `known_issue`", spec.name), 4)
  end
  if spec.opts.raises and (type(spec.opts.raises) ~= "string" or not KINDS[spec.opts.raises]) then
    error(string.format("test %q: raises = %q is not an error kind (valid: %s)",
      spec.name, tostring(spec.opts.raises), table.concat(KINDS, ", ")), 4)
  end
end

-- A test's markers: "e2e", its own (but "known_issue"), then "known_issue" when it has one.
local function markers_of(spec)
  local list = { "e2e" }
  for _, m in ipairs(spec.opts.markers or {}) do
    if m ~= "known_issue" then list[#list + 1] = m end
  end
  if spec.opts.known_issue then list[#list + 1] = "known_issue" end
  return list
end

-- The collector of one file (abx.test's t.test and t.fixture/hook declarations land here): checks
-- each test and adds it to file.tests with its node id, markers and template recipe.
local function collector_for(file, markers, catalog, declaration)
  local path, names = file.path, {}
  return function(spec, replayed)
    if spec.kind then
      if replayed then return declaration(spec) end
      return declare(spec)
    end
    if names[spec.name] then
      error(string.format("duplicate test name %q (first at line %d)", spec.name, names[spec.name]), 3)
    end
    names[spec.name] = spec.line
    check_markers(spec, markers, catalog)
    check_options(spec, catalog)
    spec.file = path
    spec.id = path .. "::" .. spec.name
    spec.recipe = file.recipe
    spec.markers = markers_of(spec)
    file.tests[#file.tests + 1] = spec
  end
end

-- The chunk that declares a file's tests: a Lua scenario loaded in its own environment, or a YAML
-- scenario compiled into test functions registered as t.test registers a Lua test's (the same
-- collector: markers, known issues, capabilities, node ids). Returns nil and the file's
-- collection error when it cannot load (a YAML file of a template folder is not a scenario).
local function scenario_chunk(path, tdir)
  local in_folder = not tdir and M.is_yaml(path) and M.template_folder(path, "")
  if in_folder then
    -- template.yaml (or a YAML file it copies) named on the command line: not a scenario
    return nil, string.format("%s: a YAML file of the template folder %s is not a scenario (its "
      .. "template.yaml is the recipe); run the folder or its script %s/%s.lua", path, in_folder,
      in_folder, in_folder:match("([^/]+)$"))
  end
  if M.is_yaml(path) and not tdir then
    return function()
      local ok, e = pcall(require("abx.run.declarative").compile, path, test_api._register)
      -- its message names the YAML file and line already (not the compiler's Lua line)
      if not ok then error(core.is_error(e) and e.message or tostring(e), 0) end
    end
  end
  return loadfile(path, "t", scenario_env())
end

-- Runs a scenario's chunk with `collector` collecting. Returns ok, or false and the message.
local function collect_chunk(chunk, collector)
  test_api._set_collector(collector)
  current_declare = collector
  local ok, lerr = xpcall(chunk, function(e)
    if core.is_error(e) then return (e.where and (e.where .. ": ") or "") .. tostring(e) end
    return tostring(e)
  end)
  current_declare = nil
  test_api._set_collector(nil)
  return ok, lerr
end

---Loads one scenario file.
---@param path string

---@param markers table registered marker names
---@param catalog table|nil the known-issues catalog (abx.run.known_issues)
---@return table { path =, tests = {...}, error = "file:line: message" | nil, recipe = the
---  template's recipe (abx.run.recipe) when the file is a template folder's script }
function M.load(path, markers, catalog)
  seal()
  local file = { path = path, tests = {} }
  -- a template folder's script: its recipe is checked now (a malformed one is this file's
  -- collection error) and its tests run after the run deploys it (abx.run.templates)
  local tdir = M.template_of(path)
  if tdir then
    local ok, r = pcall(require("abx.run.recipe").load, tdir)
    if not ok then
      file.error = core.is_error(r) and r.message or tostring(r)
      return file
    end
    file.recipe = r
  end
  local fixtures, hooks, declaration = declarations()
  local chunk, err = scenario_chunk(path, tdir)
  if not chunk then
    file.error = err
    return file
  end
  local ok, lerr = collect_chunk(chunk, collector_for(file, markers, catalog, declaration))
  if not ok then
    file.error = lerr
    file.tests = {}
    return file
  end
  -- the file's fixtures and hooks apply to all its tests, wherever they are declared
  for _, spec in ipairs(file.tests) do
    spec.fixtures, spec.before_each, spec.after_each = fixtures, hooks.before_each,
      hooks.after_each
  end
  if #file.tests == 0 then
    file.error = path .. ": no tests (a scenario file calls t.test at least once)"
  end
  return file
end

return M
