-- abx.suggest: "did you mean" for every fail-closed name check (options, objects, abx.test's
-- functions, t.test and fixture options, fixture names, markers). One place decides what counts
-- as a likely misspelling, so every message suggests alike.
--
--   suggest.nearest("cdw", { "cwd", "envs" })             --> "cwd"
--   suggest.nearest("equal", names, { equal = "eq" })     --> "eq" (a known alias wins)
--   suggest.hint("cdw", { "cwd" })                        --> ", did you mean 'cwd'?"
--   suggest.snake("runCode")                              --> "run_code"
local M = {}

--- Damerau-Levenshtein distance (optimal string alignment) of two strings.
---@param a string
---@param b string
---@return integer
function M.distance(a, b)
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

--- "runCode" -> "run_code", "getInfo" -> "get_info" (camelCase, as the JS SDK spells names, to
--- the snake_case abxlua uses). Returns `name` unchanged when it has no capital.
---@param name string
---@return string
function M.snake(name)
  return (name:gsub("(%l)(%u)", "%1_%2"):gsub("(%u)(%u%l)", "%1_%2"):lower())
end

--- The name of `names` that `key` most likely meant, or nil: a known alias (`aliases[key]`), the
--- snake_case of a camelCase key when it is one of `names`, else the closest name when it is a
--- likely misspelling (distance <= 2 and less than the key's length; case ignored).
---@param key any
---@param names string[]
---@param aliases? table<string,string> wrong name -> right name
---@return string|nil
function M.nearest(key, names, aliases)
  if type(key) ~= "string" then return nil end
  if aliases and aliases[key] then return aliases[key] end
  local snake = M.snake(key)
  local best, bd
  for _, n in ipairs(names) do
    if snake ~= key and n == snake then return n end
    local dd = M.distance(key:lower(), n:lower())
    if (not bd or dd < bd) and dd <= 2 and dd < math.max(#key, 2) then best, bd = n, dd end
  end
  return best
end

--- ", did you mean 'x'?" (with `fmt` "'%s'" by default: the quoting of the suggestion), or ""
--- when nothing is near.
---@param key any
---@param names string[]
---@param aliases? table<string,string>
---@param fmt? string how to show the suggestion, e.g. "t.%s"
---@return string
function M.hint(key, names, aliases, fmt)
  local n = M.nearest(key, names, aliases)
  if not n then return "" end
  return ", did you mean " .. string.format(fmt or "'%s'", n) .. "?"
end

return M
