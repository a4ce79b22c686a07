-- abx.run.nodeid: node ids on the command line, as in pytest: `FILE::NAME` names one test of a
-- scenario file, exactly as every report prints it (console lines, the short summary, `list`,
-- JSON `id`, TAP). Several ids and plain paths may be mixed: a file named by a plain path runs
-- whole; a file named only by ids runs those tests. An id splits at its first "::" (a test name
-- may hold "::"); an argument that exists as a path is a path even when it holds "::".
local core = require("abx.core")

local M = {}

---Splits command-line paths into plain paths and node ids.
---@param paths string[] the arguments
---@param normalize fun(p: string): string the path normal form (abx.run.collect.normalize)
---@return table|nil { plain = string[], files = string[] (plain paths and the files of ids),
---  ids = { [normalized file] = { names = { [name] = true }, order = { name, ... } } } }
---@return string|nil usage error: a missing file (the whole id is named), a directory
function M.split(paths, normalize)
  local plain, files, ids, missing = {}, {}, {}, {}
  for _, p in ipairs(paths) do
    local file, name = p:match("^(.-)::(.*)$")
    if file and file ~= "" and not core.exists(p) then
      if not core.exists(file) then
        missing[#missing + 1] = p
      elseif core.isdir(file) then
        return nil, string.format("%s: %s is a directory; a node id is FILE::NAME (a test of a "
          .. "scenario file, as the reports print it)", p, file)
      else
        local key = normalize(file)
        local e = ids[key]
        if not e then
          e = { names = {}, order = {} }
          ids[key] = e
          files[#files + 1] = file
        end
        if not e.names[name] then
          e.names[name] = true
          e.order[#e.order + 1] = name
        end
      end
    else
      plain[#plain + 1] = p
      files[#files + 1] = p
    end
  end
  if #missing > 0 then return nil, "no such file or directory: " .. table.concat(missing, ", ") end
  return { plain = plain, files = files, ids = ids }
end

-- The length of the longest common subsequence of two strings, by bytes.
local function lcs(a, b)
  local prev = {}
  for j = 0, #b do prev[j] = 0 end
  for i = 1, #a do
    local cur = { [0] = 0 }
    local ca = a:byte(i)
    for j = 1, #b do
      if ca == b:byte(j) then
        cur[j] = prev[j - 1] + 1
      else
        cur[j] = math.max(prev[j], cur[j - 1])
      end
    end
    prev = cur
  end
  return prev[#b]
end

---The names of `tests` closest to `name` (case-insensitive), best first: those whose similarity
---2*M/T (M: characters in common, in order; T: both lengths) is at least 0.6, the measure and
---cutoff of Python's difflib.get_close_matches, which pytest-like tools use for suggestions, and
---those that contain `name` (3 characters at least).
---@param name string
---@param tests table[] collected tests { name }
---@param n? integer at most this many (default 3)
---@return string[]
function M.close_matches(name, tests, n)
  local want = name:lower()
  local scored = {}
  for _, t in ipairs(tests) do
    local cand = t.name:lower()
    local ratio = 2 * lcs(want, cand) / math.max(#want + #cand, 1)
    -- part of a name (an id typed from memory): a match too
    if #want >= 3 and cand:find(want, 1, true) then ratio = math.max(ratio, 0.6) end
    if ratio >= 0.6 then scored[#scored + 1] = { name = t.name, ratio = ratio } end
  end
  table.sort(scored, function(a, b)
    if a.ratio ~= b.ratio then return a.ratio > b.ratio end
    return a.name < b.name
  end)
  local out = {}
  for i = 1, math.min(n or 3, #scored) do out[i] = scored[i].name end
  return out
end

---Keeps, in a file named only by ids, the tests those ids name (in place).
---@param file table a collected file (abx.run.collect.load) { path, tests, error }
---@param e table the file's entry of M.split's ids
---@return string|nil usage error for a name no test has, with close matches
function M.keep(file, e)
  if file.error then return nil end -- its collection error is reported as it is
  local have = {}
  for _, t in ipairs(file.tests) do have[t.name] = true end
  for _, name in ipairs(e.order) do
    if not have[name] then
      local close = M.close_matches(name, file.tests)
      local quoted = {}
      for i, c in ipairs(close) do quoted[i] = string.format("%q", c) end
      return string.format("no test named %q in %s; %s (`abxlua list %s` lists its %d tests; "
        .. "-k selects by part of a name)",
        name, file.path, #close > 0 and ("close matches: " .. table.concat(quoted, ", "))
          or "no close match", file.path, #file.tests)
    end
  end
  local kept = {}
  for _, t in ipairs(file.tests) do
    if e.names[t.name] then kept[#kept + 1] = t end
  end
  file.tests = kept
  return nil
end

return M
