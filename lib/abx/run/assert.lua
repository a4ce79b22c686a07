-- abx.run.assert: the assertions scenarios use through abx.test (t.eq, t.ok, t.match, t.raises, ...).
-- A failed assertion raises an abx.error of kind "Assertion" whose `where` is the line that
-- called the assertion (the runner then points it at the test's own line: abx.run.runner), and
-- whose message shows expected vs actual. Long or multi-line values are not printed whole: strings
-- and tables are shown as a bounded unified line diff (abx.run.diff), two long one-line strings by
-- their first difference; the first line of the message stays a short headline (what the short
-- test summary shows). Values are masked (core.mask) before anything is cut.
local core = require("abx.core")
local diff = require("abx.run.diff")

local M = {}

local LONG = 120 -- strings longer than this are summarised in one-line messages, diffed in t.eq

-- Quotes a string on one line: control characters as \n, \t or \ddd (unlike %q, which keeps
-- a backslash-newline that splits the failure message).
local function quote(s)
  return '"' .. diff.escape(s, true) .. '"'
end

---Renders a value for a failure message: short strings quoted, long ones summarised.
---@param v any
---@return string
function M.show(v)
  if type(v) == "string" then
    local m = core.mask(v) -- masked before it is cut: a cut never leaves half of a secret
    if #m > LONG then
      return string.format("<%d bytes, sha256 %s..., starts %s>", #v, core.sha256(m):sub(1, 12),
        quote(m:sub(1, 40)))
    end
    return quote(m)
  elseif type(v) == "table" and not core.is_error(v) then
    local parts, n = {}, 0
    for k, x in pairs(v) do
      n = n + 1
      if n > 12 then parts[#parts + 1] = "..."; break end
      parts[#parts + 1] = tostring(k) .. "=" .. M.show(x)
    end
    table.sort(parts)
    return "{" .. table.concat(parts, ", ") .. "}"
  end
  return tostring(v)
end

-- A value of a table rendering (abx.run.diff.render): strings quoted whole (the diff cuts lines).
local function show_full(v)
  if type(v) == "string" then return quote(v) end
  return tostring(v)
end

local function plural(n, word) return n .. " " .. word .. (n == 1 and "" or "s") end

local function count_lines(s)
  local lines = diff.lines(s)
  return #lines
end

-- The message of a failed t.eq on two values that are worth a diff, or nil (then the one-line
-- "expected X, got Y" is used): two strings of which one is long or has a newline, or two tables
-- whose one-line forms are long or cut.
local function eq_diff(actual, expected)
  local what, e, a
  if type(actual) == "string" and type(expected) == "string" then
    if not (#actual > LONG or #expected > LONG or actual:find("\n", 1, true)
        or expected:find("\n", 1, true)) then
      return nil
    end
    what, e, a = "strings", core.mask(expected), core.mask(actual)
  elseif type(actual) == "table" and type(expected) == "table" and not core.is_error(actual)
      and not core.is_error(expected) then
    local se, sa = M.show(expected), M.show(actual)
    if #se + #sa <= 80 and not se:find("...", 1, true) and not sa:find("...", 1, true) then
      return nil
    end
    what = "tables"
    e = core.mask(diff.render(expected, show_full))
    a = core.mask(diff.render(actual, show_full))
  else
    return nil
  end
  if e == a then
    return what .. " differ only inside a masked secret"
  end
  if what == "strings" and not e:find("\n", 1, true) and not a:find("\n", 1, true) then
    local lines, p = diff.first_difference(e, a)
    return string.format("strings differ at byte %d (expected %d bytes, got %d bytes)\n%s", p, #expected,
      #actual, table.concat(lines, "\n"))
  end
  local lines, changed = diff.unified(e, a)
  local head
  if what == "strings" then
    head = string.format("strings differ in %s (expected %s, %d bytes; got %s, %d bytes)",
      plural(changed, "line"), plural(count_lines(expected), "line"), #expected,
      plural(count_lines(actual), "line"), #actual)
  else
    head = string.format("tables differ (%s of their rendering)", plural(changed, "line"))
  end
  return head .. "\n" .. table.concat(lines, "\n")
end

local function where(level)
  local info = debug.getinfo(level + 1, "Sl")
  if info and info.currentline and info.currentline > 0 then
    return info.short_src .. ":" .. info.currentline
  end
  return "?"
end

---Raises an Assertion error located `level` frames above the caller.
---@param message string
---@param level integer|nil 1 = the function calling fail
function M.fail(message, level)
  core.error("Assertion", 0, message, { where = where((level or 1) + 1) })
end

local function deep_equal(a, b, seen)
  if a == b then return true end
  if type(a) ~= "table" or type(b) ~= "table" then return false end
  seen = seen or {}
  if seen[a] == b then return true end
  seen[a] = b
  -- raw reads: a strict result table (abx.client.options) raises for a name it does not declare, and
  -- comparing with a table that has more keys must fail as an assertion, not as that error
  for k, v in pairs(a) do
    if not deep_equal(v, rawget(b, k), seen) then return false end
  end
  for k in pairs(b) do
    if rawget(a, k) == nil then return false end
  end
  return true
end
M.deep_equal = deep_equal

---Fails unless actual equals expected (deep for tables).
---@param actual any
---@param expected any
---@param msg string|nil what is being compared
---Raises: Assertion
function M.eq(actual, expected, msg)
  if not deep_equal(actual, expected) then
    local d = eq_diff(actual, expected)
    M.fail((msg and (msg .. ": ") or "") .. (d or ("expected " .. M.show(expected) .. ", got "
      .. M.show(actual))), 2)
  end
end

---Fails when actual equals unexpected.
---Raises: Assertion
function M.neq(actual, unexpected, msg)
  if deep_equal(actual, unexpected) then
    M.fail((msg and (msg .. ": ") or "") .. "expected anything but " .. M.show(unexpected), 2)
  end
end

---Fails unless value is truthy. Returns the value.
---Raises: Assertion
function M.ok(value, msg)
  if not value then
    M.fail((msg or "expected a true value") .. ", got " .. M.show(value), 2)
  end
  return value
end

---Fails unless the string matches the Lua pattern. Returns the captures.
---Raises: Assertion
function M.match(s, pattern, msg)
  if type(s) ~= "string" then
    M.fail((msg and (msg .. ": ") or "") .. "expected a string matching " .. M.show(pattern)
      .. ", got " .. M.show(s), 2)
  end
  local caps = { s:match(pattern) }
  if #caps == 0 then
    if #s > LONG or s:find("\n", 1, true) then
      -- the text as a block of lines, not one long escaped string
      M.fail((msg and (msg .. ": ") or "") .. string.format("expected the text (%s, %d bytes) "
        .. "to match %s\n%s", plural(count_lines(s), "line"), #s, M.show(pattern),
        table.concat(diff.block(core.mask(s)), "\n")), 2)
    end
    M.fail((msg and (msg .. ": ") or "") .. "expected " .. M.show(s) .. " to match "
      .. M.show(pattern), 2)
  end
  return table.unpack(caps)
end

---Fails unless fn raises an abx.error of the given kind. Returns the error.
---@param kind string an error kind (DESIGN.md), e.g. "NotFound"
---@param fn function
---@return table err
---Raises: Assertion; InvalidArgument (naming the valid kinds) when `kind` is not one of core.KINDS
function M.raises(kind, fn, ...)
  if type(kind) ~= "string" or not core.KINDS[kind] then
    core.error("InvalidArgument", 0, "t.raises: unknown error kind " .. M.show(kind) .. " (valid: "
      .. table.concat(core.KINDS, ", ") .. ")")
  end
  local ok, err = pcall(fn, ...)
  if ok then
    M.fail("expected a " .. kind .. " error, but nothing was raised", 2)
  end
  if not core.is_error(err) then
    M.fail("expected a " .. kind .. " error, got a plain Lua error: " .. tostring(err), 2)
  end
  if err.kind == "Assertion" and kind ~= "Assertion" then
    error(err, 0) -- an assertion inside fn failed: report that one
  end
  if err.kind ~= kind then
    M.fail("expected a " .. kind .. " error, got " .. tostring(err), 2)
  end
  return err
end

return M
