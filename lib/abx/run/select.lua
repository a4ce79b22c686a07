-- abx.run.select: pytest-style selection expressions for -k (test names) and -m (markers).
--
--   expr := or;  or := and ("or" and)*;  and := not ("and" not)*;  not := "not" not | atom
--   atom := "(" expr ")" | WORD       (WORD: a run of characters other than whitespace and parens)
--
-- -k: a WORD is true when it is a case-insensitive substring of the test name.
-- -m: a WORD is true when the test has that marker; the marker must be registered in the config.
local M = {}

local function fail(kind, text, col, msg)
  error(string.format("-%s: %s at column %d in '%s'", kind, msg, col, text), 0)
end

---Splits the expression into tokens { kind = "(" | ")" | "and" | "or" | "not" | "word" | "end",
---value, col }.
local function tokenize(text)
  local toks, i, n = {}, 1, #text
  while i <= n do
    local c = text:sub(i, i)
    if c:match("%s") then
      i = i + 1
    elseif c == "(" or c == ")" then
      toks[#toks + 1] = { kind = c, value = c, col = i }
      i = i + 1
    else
      local s, e = text:find("^[^%s()]+", i)
      local w = text:sub(s, e)
      local kw = (w == "and" or w == "or" or w == "not") and w or "word"
      toks[#toks + 1] = { kind = kw, value = w, col = s }
      i = e + 1
    end
  end
  toks[#toks + 1] = { kind = "end", value = "end of expression", col = n + 1 }
  return toks
end

---Compiles a selection expression into a predicate.
---@param text string the expression
---@param kind string "k" (names) or "m" (markers)
---@param markers table|nil for "m": the registered markers (name -> description)
---@return fun(test: table): boolean
---Raises: a string error naming the option, the column and the expression
function M.compile(text, kind, markers)
  assert(kind == "k" or kind == "m", "select.compile: kind must be 'k' or 'm'")
  if type(text) ~= "string" or not text:find("%S") then
    error(string.format("-%s: empty expression", kind), 0)
  end
  local toks, pos = tokenize(text), 1
  local function peek() return toks[pos] end
  local function take() pos = pos + 1; return toks[pos - 1] end

  local parse_or
  local function parse_atom()
    local t = take()
    if t.kind == "(" then
      local inner = parse_or()
      local close = peek()
      if close.kind ~= ")" then fail(kind, text, close.col, "expected ')'") end
      take()
      return inner
    elseif t.kind == "word" then
      local w = t.value
      if kind == "k" then
        local lw = w:lower()
        return function(test) return test.name:lower():find(lw, 1, true) ~= nil end
      end
      if markers and markers[w] == nil then
        fail(kind, text, t.col, string.format("unknown marker %q (register it under `markers:` in "
          .. "config/abxlua.yaml)", w))
      end
      return function(test)
        for _, m in ipairs(test.markers or {}) do
          if m == w then return true end
        end
        return false
      end
    end
    local what = t.kind == "end" and "end of expression" or ("'" .. t.value .. "'")
    fail(kind, text, t.col, "expected a word or '(' but got " .. what)
  end
  local function parse_not()
    if peek().kind == "not" then
      take()
      local inner = parse_not()
      return function(test) return not inner(test) end
    end
    return parse_atom()
  end
  local function parse_and()
    local left = parse_not()
    while peek().kind == "and" do
      take()
      local l, r = left, parse_not()
      left = function(test) return l(test) and r(test) end
    end
    return left
  end
  parse_or = function()
    local left = parse_and()
    while peek().kind == "or" do
      take()
      local l, r = left, parse_and()
      left = function(test) return l(test) or r(test) end
    end
    return left
  end

  local pred = parse_or()
  local rest = peek()
  if rest.kind ~= "end" then
    fail(kind, text, rest.col, "unexpected '" .. rest.value .. "'")
  end
  return pred
end

return M
