-- abx.run.cache: the cache of the last runs, `.abxlua_cache/` at the project root (the directory
-- holding config/; gitignored), as pytest's `.pytest_cache/`:
--   .abxlua_cache/v/cache/lastfailed   JSON { "<file>::<name>" | "<file>": true }: the tests
--                                      (and files that failed to collect) that failed when they
--                                      last ran; file paths relative to the project root
--   .abxlua_cache/v/cache/durations    JSON { "<file>::<name>": seconds }: how long each test
--                                      took (call and teardown, every attempt) when it last ran
--                                      and was not skipped (--slow-first orders files by it)
--   .abxlua_cache/.gitignore           "*": the directory never ends up in a commit
-- --lf / --ff / --lfnf select from it with pytest's semantics (its cacheprovider): --lf runs the
-- recorded failures among the selected tests, or every selected test when none of them is
-- recorded (saying why); --ff runs every selected test, the recorded failures first.
-- After `abxlua run`, a test that passed, xfailed or was skipped is forgotten, one that failed,
-- XPASSed (strict) or had a teardown error is recorded; tests that did not run keep their entry.
-- A run that skipped everything for missing credentials records nothing.
local core = require("abx.core")
local cjson = require("cjson")
local common = require("abx.run.report.common")

local M = {}

local LASTFAILED = "v/cache/lastfailed"
local DURATIONS = "v/cache/durations"

---The project root: the directory holding config/ when the config is <root>/config/abxlua.yaml,
---else the working directory (".").
---@param cfg table the loaded config (abx.run.config.load) { path, root? }
---@return string
function M.root(cfg)
  if cfg.root then return cfg.root end
  local p = cfg.path
  if p then
    if p == "config/abxlua.yaml" then return "." end
    local r = p:match("^(.*)/config/abxlua%.yaml$")
    if r and r ~= "" then return r end
  end
  return "."
end

---The cache directory of a project root.
function M.dir(root) return root .. "/.abxlua_cache" end

---A keyer: turns a test (or a file path) into its cache key, the id with the file relative to the
---project root, so the cache holds whatever the working directory was.
---@param root string
---@return fun(file: string, name?: string): string
function M.keyer(root)
  local rabs = core.realpath(root) or root
  local memo = {}
  return function(file, name)
    local rel = memo[file]
    if not rel then
      local abs = core.realpath(file)
      rel = file
      if abs and abs:sub(1, #rabs + 1) == rabs .. "/" then rel = abs:sub(#rabs + 2) end
      memo[file] = rel
    end
    if name then return rel .. "::" .. name end
    return rel
  end
end

-- The JSON object in the cache file `name`, or nil (none yet, or not an object: a warning).
local function read_object(root, name)
  local path = M.dir(root) .. "/" .. name
  local f = io.open(path, "rb")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  local ok, doc = pcall(cjson.decode, text)
  if not ok or type(doc) ~= "table" then
    core.ewrite("abxlua: warning: ignoring " .. path .. ": not a JSON object (delete it or use "
      .. "--cache-clear)\n")
    return nil
  end
  return doc
end

---Reads the recorded failures; entries whose file no longer exists are dropped.
---@param root string
---@return table { [key] = true }
function M.lastfailed(root)
  local doc = read_object(root, LASTFAILED)
  if not doc then return {} end
  local out = {}
  for k, v in pairs(doc) do
    if type(k) == "string" and v == true then
      local file = k:match("^(.-)::") or k
      if core.exists(root .. "/" .. file) or core.exists(file) then out[k] = true end
    end
  end
  return out
end

---Reads the recorded durations (seconds, by key); entries that are not a number >= 0 are left out.
---@param root string
---@return table { [key] = seconds }
function M.durations(root)
  local out = {}
  for k, v in pairs(read_object(root, DURATIONS) or {}) do
    if type(k) == "string" and type(v) == "number" and v >= 0 then out[k] = v end
  end
  return out
end

---Deletes the cache's contents (--cache-clear). A directory that cannot be cleared is a warning.
function M.clear(root)
  for _, name in ipairs({ LASTFAILED, DURATIONS }) do
    local path = M.dir(root) .. "/" .. name
    if core.exists(path) then
      local ok, err = os.remove(path)
      if not ok then core.ewrite("abxlua: warning: --cache-clear: " .. tostring(err) .. "\n") end
    end
  end
end

-- Writes `text` to `path` through a temporary file and a rename, so a reader never sees half.
local function write_atomic(path, text)
  local tmp = path .. ".tmp" .. core.random_hex(4)
  local f, err = io.open(tmp, "wb")
  if not f then return nil, err end
  local ok, werr = f:write(text)
  f:close()
  if not ok then os.remove(tmp); return nil, werr end
  local rok, rerr = os.rename(tmp, path)
  if not rok then os.remove(tmp); return nil, rerr end
  return true
end

-- A JSON object, one sorted key a line (a diff of two runs reads well); value(v) writes a value.
local function object_text(obj, value)
  local keys = {}
  for k in pairs(obj) do keys[#keys + 1] = k end
  table.sort(keys)
  local lines = {}
  for i, k in ipairs(keys) do
    -- cjson escapes "/" as "\/" (valid JSON); the plain form reads better in a diff
    lines[i] = "  " .. cjson.encode(common.utf8_clean(k)):gsub("\\/", "/") .. ": " .. value(obj[k])
  end
  return #keys == 0 and "{}\n" or ("{\n" .. table.concat(lines, ",\n") .. "\n}\n")
end

---Records the outcome of a run (see the header). A cache that cannot be written is a warning on
---stderr: the run's result stands.
---@param root string
---@param record table the run record (abx.run.runner)
---@param collected table { [file path] = true (collected) | false (collection error) }
function M.update(root, record, collected)
  if record.skip_reason then return end -- nothing ran: the failures stay what they were
  local lf = M.lastfailed(root)
  local durations = M.durations(root)
  local key = M.keyer(root)
  for path, ok in pairs(collected) do
    lf[key(path)] = (not ok) or nil
  end
  for _, r in ipairs(record.results or {}) do
    local k = key(r.test.file, r.test.name)
    if r.outcome == "failed" or r.outcome == "xpassed" or r.teardown_errors then
      lf[k] = true
    else
      lf[k] = nil
    end
    -- a skip says nothing of how long the test takes: its last real duration stays
    if r.outcome ~= "skipped" and type(r.duration) == "number" then durations[k] = r.duration end
  end
  for k in pairs(durations) do -- the tests of files that are gone are forgotten
    local file = k:match("^(.-)::") or k
    if not (core.exists(root .. "/" .. file) or core.exists(file)) then durations[k] = nil end
  end
  local dir = M.dir(root)
  local ok, err = pcall(common.mkdir_p, dir .. "/v/cache")
  if ok then
    if not core.exists(dir .. "/.gitignore") then
      write_atomic(dir .. "/.gitignore", "# Created by abxlua automatically.\n*\n")
    end
    if not core.exists(dir .. "/CACHEDIR.TAG") then
      write_atomic(dir .. "/CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n"
        .. "# This file is a cache directory tag created by abxlua.\n")
    end
    ok, err = write_atomic(dir .. "/" .. LASTFAILED, object_text(lf, function() return "true" end))
    if ok then
      ok, err = write_atomic(dir .. "/" .. DURATIONS, object_text(durations, function(v)
        return string.format("%.3f", v)
      end))
    end
  else
    err = core.is_error(err) and err.message or tostring(err)
  end
  if not ok then
    core.ewrite("abxlua: warning: cannot write the cache " .. dir .. ": " .. tostring(err) .. "\n")
  end
end

---Applies --lf / --ff to the selected files (in place), with pytest's messages.
---Items are the selected tests and the files that failed to collect (a collection error is a
---failure too); collection errors are always kept.
---@param files table[] collected and selected files
---@param root string the project root
---@param mode string "lf" or "ff"
---@param lfnf string "all" or "none" (--lfnf: what --lf does when no failure is recorded)
---@return string status line ("run-last-failure: ..."), table first (ff: { [test] = true })
function M.select(files, root, mode, lfnf)
  local lf = M.lastfailed(root)
  local key = M.keyer(root)
  local first = {}
  if next(lf) == nil then
    if mode == "lf" and lfnf == "none" then
      for _, f in ipairs(files) do f.tests = {} end
      return "run-last-failure: no previously failed tests, deselecting all items.", first
    end
    return "run-last-failure: no previously failed tests, not deselecting items.", first
  end
  local nfailed, nknown = 0, 0
  for _ in pairs(lf) do nknown = nknown + 1 end
  for _, f in ipairs(files) do
    if f.error and lf[key(f.path)] then nfailed = nfailed + 1 end
    for _, t in ipairs(f.tests) do
      if lf[key(t.file, t.name)] then
        nfailed = nfailed + 1
        first[t] = true
      end
    end
  end
  if nfailed == 0 then
    return string.format("run-last-failure: %d known failures not in selected tests", nknown), {}
  end
  if mode == "lf" then
    for _, f in ipairs(files) do
      local kept = {}
      for _, t in ipairs(f.tests) do
        if first[t] then kept[#kept + 1] = t end
      end
      f.tests = kept
    end
    first = {}
  end
  return string.format("run-last-failure: rerun previous %d %s%s", nfailed,
    nfailed == 1 and "failure" or "failures", mode == "ff" and " first" or ""), first
end

---Orders `files` (in place) for --slow-first: the files whose longest test took longest at the
---last run first, so the run's longest chain starts at once instead of after everything
---collected before it; files without a recorded duration follow in collection order. Only
---whole files move (a file's tests stay together and in their order, so its file-scoped
---fixtures live as long as before); the sort is stable.
---@param files table[] collected and selected files
---@param root string the project root
---@return string status line ("slow-first: ...")
function M.slow_first(files, root)
  local durations = M.durations(root)
  local key = M.keyer(root)
  local longest, pos, known = {}, {}, 0
  for i, f in ipairs(files) do
    pos[f] = i
    for _, t in ipairs(f.tests) do
      local d = durations[key(t.file, t.name)]
      if d and d > (longest[f] or -1) then longest[f] = d end
    end
    if longest[f] then known = known + 1 end
  end
  table.sort(files, function(a, b)
    local da, db = longest[a] or -1, longest[b] or -1
    if da ~= db then return da > db end
    return pos[a] < pos[b]
  end)
  if known == 0 then return "slow-first: no recorded durations, collection order" end
  return string.format("slow-first: %d of %d files ordered by their longest test at the last run",
    known, #files)
end

return M
