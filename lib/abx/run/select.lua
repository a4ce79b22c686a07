-- abx.run.select: pytest-style selection expressions for -k (test names and file paths) and -m
-- (markers).
--
--   expr := or;  or := and ("or" and)*;  and := not ("and" not)*;  not := "not" not | atom
--   atom := "(" expr ")" | PHRASE
--   PHRASE := (WORD | QUOTED)+     (-m: exactly one WORD)
--   WORD   := a run of characters other than whitespace, parentheses and quotes, not and/or/not
--   QUOTED := "..." or '...'       (any characters but that quote; -k only)
--
-- -k: a PHRASE (its words joined by one space) is true when it is a case-insensitive substring
--     of the test name or of its file's path (runs of whitespace count as one space), so test
--     names, which are sentences, select as typed: -k "SIGKILL ends a process", and a file by its
--     name: -k 03_commands. A phrase holding and, or, not or a parenthesis is quoted:
--     -k '"does not exist" and not pty'.
-- -m: a WORD is true when the test has that marker; the marker must be registered in the config.
-- An empty (or all-blank) expression is no filter at all: abx.run.suite does not compile it.
local M = {}

local KEYWORDS = { ["and"] = true, ["or"] = true, ["not"] = true }

local function fail(kind, text, col, msg, hint)
  error(string.format("-%s: %s at column %d in '%s'%s", kind, msg, col, text, hint or ""), 0)
end

---Splits the expression into tokens { kind = "(" | ")" | "and" | "or" | "not" | "word" |
---"quoted" | "end", value, col }.
local function tokenize(text, kind)
  local toks, i, n = {}, 1, #text
  while i <= n do
    local c = text:sub(i, i)
    if c:match("%s") then
      i = i + 1
    elseif c == "(" or c == ")" then
      toks[#toks + 1] = { kind = c, value = c, col = i }
      i = i + 1
    elseif c == '"' or c == "'" then
      if kind ~= "k" then
        fail(kind, text, i, "a marker is one word; quotes are for -k phrases")
      end
      local close = text:find(c, i + 1, true)
      if not close then fail(kind, text, i, "unterminated quote") end
      local v = text:sub(i + 1, close - 1)
      if not v:find("%S") then fail(kind, text, i, "empty quoted phrase") end
      toks[#toks + 1] = { kind = "quoted", value = v, col = i }
      i = close + 1
    else
      local s, e = text:find("^[^%s()\"']+", i)
      local w = text:sub(s, e)
      toks[#toks + 1] = { kind = KEYWORDS[w] and w or "word", value = w, col = s }
      i = e + 1
    end
  end
  toks[#toks + 1] = { kind = "end", value = "end of expression", col = n + 1 }
  return toks
end

-- Lower case, whitespace runs as one space, no blanks at the ends.
local function fold(s)
  return (s:lower():gsub("%s+", " "):gsub("^ ", ""):gsub(" $", ""))
end

-- The -k predicate of one phrase: a substring of the name or of the file's path.
local function phrase_pred(phrase)
  local p = fold(phrase)
  return function(test)
    if fold(test.name):find(p, 1, true) then return true end
    return test.file ~= nil and fold(test.file):find(p, 1, true) ~= nil
  end
end

---Compiles a selection expression into a predicate.
---@param text string the expression (not blank: a blank one is no filter, see abx.run.suite)
---@param kind string "k" (names and paths) or "m" (markers)
---@param markers table|nil for "m": the registered markers (name -> description)
---@return fun(test: table): boolean predicate over a collected test { name, file, markers }
---Raises: a string error naming the option, the column and the expression
function M.compile(text, kind, markers)
  assert(kind == "k" or kind == "m", "select.compile: kind must be 'k' or 'm'")
  if type(text) ~= "string" or not text:find("%S") then
    error(string.format("-%s: empty expression", kind), 0)
  end
  local toks, pos = tokenize(text, kind), 1
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
    elseif t.kind == "word" or t.kind == "quoted" then
      if kind == "k" then
        local words = { t.value }
        while peek().kind == "word" or peek().kind == "quoted" do words[#words + 1] = take().value end
        return phrase_pred(table.concat(words, " "))
      end
      local w = t.value
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
    local hint = ""
    if kind == "k" and rest.kind ~= ")" then
      -- most often a sentence holding and/or/not/parentheses: say how to match it whole
      hint = string.format(" (to match a phrase holding and, or, not or parentheses, quote it: "
        .. "-k '\"%s\"')", (text:gsub('"', "")))
    end
    fail(kind, text, rest.col, "unexpected '" .. rest.value .. "'", hint)
  end
  return pred
end

return M
