-- abx.run.collect: finds scenario files and loads each in its own environment, gathering its tests.
-- A file that does not load (syntax error, error at top level, unknown marker) becomes a
-- collection error naming the file and line; the other files are still collected.
local core = require("abx.core")
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

---Expands paths into sorted scenario files. A directory walk does not descend into template
---folders (scenarios/templates/<name>/, holding template.yaml) unless the directory named is the
---folder itself or the one holding it (`abxlua run scenarios/templates/`): a template folder runs
---only when named; from it only its script <name>.lua is a scenario (the rest is what it copies).
---@param paths string[] files or directories
---@return string[] files, string[] problems (paths that do not exist)
function M.files(paths)
  local out, seen, problems = {}, {}, {}
  for _, p in ipairs(paths) do
    if core.isdir(p) then
      local root = (p:gsub("/+$", ""))
      local list = core.list_files(root)
      for _, f in ipairs(list or {}) do
        local tf = M.template_folder(f, root)
        local take = f:match("%.lua$") and not seen[f]
        if take and tf then
          take = (tf == root or parent(tf) == root) and M.template_of(f) == tf
        end
        if take then seen[f] = true; out[#out + 1] = f end
      end
    elseif core.exists(p) then
      if not seen[p] then seen[p] = true; out[#out + 1] = p end
    else
      problems[#problems + 1] = p
    end
  end
  table.sort(out)
  return out, problems
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
local sealed = false
local function seal()
  if sealed then return end
  sealed = true
  os.exit = function()
    core.error("InvalidArgument", 0, "os.exit is not available to scenarios: a test ends by "
      .. "returning, failing (t.fail) or skipping (t.skip); the run's exit code is abxlua's")
  end
  debug.sethook = function()
    core.error("InvalidArgument", 0, "debug.sethook is not available to scenarios: the engine's "
      .. "hook enforces each test's deadline")
  end
end

-- The error kinds a known issue's `raises` may name: the engine's one list (engine/errors.c),
-- an array of names that also maps each name to its description.
local KINDS = core.KINDS

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
  local names = {}
  local function collector(spec)
    if names[spec.name] then
      error(string.format("duplicate test name %q (first at line %d)", spec.name, names[spec.name]), 3)
    end
    names[spec.name] = spec.line
    for _, m in ipairs(spec.opts.markers or {}) do
      if not markers[m] then
        error(string.format("test %q uses unknown marker %q; register it under `markers:` in "
          .. "config/abxlua.yaml", spec.name, tostring(m)), 3)
      end
    end
    for i, c in ipairs(spec.opts.requires or {}) do
      if type(c) ~= "string" or not config.CAPABILITY_SET[c] then
        error(string.format("test %q requires unknown capability %s (requires[%d]; known: %s)",
          spec.name, type(c) == "string" and string.format("%q", c) or tostring(c), i,
          table.concat(config.CAPABILITIES, ", ")), 3)
      end
    end
    spec.file = path
    spec.id = path .. "::" .. spec.name
    spec.recipe = file.recipe
    local ki = spec.opts.known_issue
    if ki and not (catalog and catalog.entries[ki]) then
      error(string.format("test %q references unknown known issue %q; add it to %s or fix the id",
        spec.name, ki, catalog and catalog.path or "config/known_issues.yaml"), 3)
    end
    if spec.opts.raises and not ki then
      error(string.format("test %q: `raises` only goes with `known_issue`", spec.name), 3)
    end
    if spec.opts.raises and (type(spec.opts.raises) ~= "string" or not KINDS[spec.opts.raises]) then
      error(string.format("test %q: raises = %q is not an error kind (valid: %s)",
        spec.name, tostring(spec.opts.raises), table.concat(KINDS, ", ")), 3)
    end
    spec.markers = { "e2e" }
    for _, m in ipairs(spec.opts.markers or {}) do spec.markers[#spec.markers + 1] = m end
    if ki then spec.markers[#spec.markers + 1] = "known_issue" end
    file.tests[#file.tests + 1] = spec
  end
  local chunk, err = loadfile(path, "t", scenario_env())
  if not chunk then
    file.error = err
    return file
  end
  test_api._set_collector(collector)
  local ok, lerr = xpcall(chunk, function(e)
    if core.is_error(e) then return (e.where and (e.where .. ": ") or "") .. tostring(e) end
    return tostring(e)
  end)
  test_api._set_collector(nil)
  if not ok then
    file.error = lerr
    file.tests = {}
  elseif #file.tests == 0 then
    file.error = path .. ": no tests (a scenario file calls t.test at least once)"
  end
  return file
end

return M
