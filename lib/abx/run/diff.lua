-- abx.run.diff: what assertion messages show for long or multi-line values: a unified line diff of
-- two texts (--- expected / +++ actual, @@ hunks with 3 lines of context), the first difference of
-- two long one-line strings with a caret under it, a bounded block of one text, and the stable
-- multi-line rendering of a table that tables are diffed through.
-- Bounded: at most MAX_LINES lines are shown (the rest is counted, never dropped silently) and each
-- shown line is cut at MAX_WIDTH bytes (on a UTF-8 boundary, the cut counted). The caller masks
-- the texts (core.mask) before anything is cut, so a cut never leaves half of a secret.
-- Control characters in shown lines are escaped (\r, \t, \ddd), so "a\r" and "a" visibly differ.
local M = {}

M.MAX_LINES = 60  -- diff lines shown, hunk headers included
M.MAX_WIDTH = 160 -- bytes of one shown line
M.CONTEXT = 3     -- unchanged lines around each change
M.DP_CELLS = 250000 -- above this many (changed lines of expected x of actual), no minimal diff

local ESC = { ["\n"] = "\\n", ["\t"] = "\\t", ["\r"] = "\\r", ['"'] = '\\"', ["\\"] = "\\\\" }

---Escapes control characters (and, when `quotes`, the quote and backslash) of one line.
---@param s string
---@param quotes boolean|nil
---@return string
function M.escape(s, quotes)
  local pat = quotes and '[%c"\\]' or "%c"
  return (s:gsub(pat, function(c) return ESC[c] or string.format("\\%03d", c:byte()) end))
end

-- Cuts s to at most `width` bytes on a UTF-8 boundary; says how many bytes were cut.
local function cut(s, width)
  width = width or M.MAX_WIDTH
  if #s <= width then return s end
  local n = width
  while n > 0 and s:byte(n + 1) and s:byte(n + 1) >= 0x80 and s:byte(n + 1) < 0xC0 do n = n - 1 end
  return s:sub(1, n) .. string.format("...(%d more bytes)", #s - n)
end
M.cut = cut

---The lines of a text (without their "\n"), and whether it ends with a newline.
---@param s string
---@return string[] lines, boolean ends_with_newline
function M.lines(s)
  if s == "" then return {}, false end
  local out = {}
  for line in (s .. "\n"):gmatch("(.-)\n") do out[#out + 1] = line end
  local nl = s:sub(-1) == "\n"
  if nl then out[#out] = nil end
  return out, nl
end

-- The edit script from a to b: { {op, text}, ... } with op " ", "-" or "+". The common head and
-- tail are matched first; the middle by a longest common subsequence when it is small enough,
-- otherwise as all removed then all added (still a correct diff, only not the shortest).
local function script(a, b)
  local n, m = #a, #b
  local lo = 1
  while lo <= n and lo <= m and a[lo] == b[lo] do lo = lo + 1 end
  local ha, hb = n, m
  while ha >= lo and hb >= lo and a[ha] == b[hb] do ha, hb = ha - 1, hb - 1 end
  local ops = {}
  for i = 1, lo - 1 do ops[#ops + 1] = { " ", a[i] } end
  local na, nb = ha - lo + 1, hb - lo + 1
  if na > 0 and nb > 0 and na * nb <= M.DP_CELLS then
    -- L[i][j]: length of the LCS of a[i..ha] and b[j..hb]
    local L = {}
    for i = na + 1, 1, -1 do
      local row, next_row = {}, L[i + 1]
      for j = nb + 1, 1, -1 do
        if i > na or j > nb then
          row[j] = 0
        elseif a[lo + i - 1] == b[lo + j - 1] then
          row[j] = next_row[j + 1] + 1
        else
          local x, y = next_row[j], row[j + 1]
          row[j] = x > y and x or y
        end
      end
      L[i] = row
    end
    local i, j = 1, 1
    while i <= na and j <= nb do
      if a[lo + i - 1] == b[lo + j - 1] then
        ops[#ops + 1] = { " ", a[lo + i - 1] }; i, j = i + 1, j + 1
      elseif L[i + 1][j] >= L[i][j + 1] then
        ops[#ops + 1] = { "-", a[lo + i - 1] }; i = i + 1
      else
        ops[#ops + 1] = { "+", b[lo + j - 1] }; j = j + 1
      end
    end
    for k = i, na do ops[#ops + 1] = { "-", a[lo + k - 1] } end
    for k = j, nb do ops[#ops + 1] = { "+", b[lo + k - 1] } end
  else
    for k = lo, ha do ops[#ops + 1] = { "-", a[k] } end
    for k = lo, hb do ops[#ops + 1] = { "+", b[k] } end
  end
  for k = ha + 1, n do ops[#ops + 1] = { " ", a[k] } end
  return ops
end

-- Appends `line` to out unless MAX_LINES are shown; counts what is left out.
local function emit(st, line)
  if #st.out < M.MAX_LINES then st.out[#st.out + 1] = line else st.hidden = st.hidden + 1 end
end

---A unified diff of two texts (already masked), bounded (see the file header).
---@param expected string
---@param actual string
---@return string[] lines: "--- expected", "+++ actual", "@@ -a,b +c,d @@", " x", "-x", "+x", notes
---@return integer changed lines removed plus lines added
function M.unified(expected, actual)
  local a, anl = M.lines(expected)
  local b, bnl = M.lines(actual)
  local ops = script(a, b)
  local st = { out = { "--- expected", "+++ actual" }, hidden = 0 }
  local changed = 0
  -- hunks: runs of ops within CONTEXT of a change
  local i, total = 1, #ops
  local ai, bi = 1, 1 -- line numbers in a and b at ops[i]
  local pos = {}      -- pos[k] = { line in a, line in b } before op k
  for k = 1, total do
    pos[k] = { ai, bi }
    local op = ops[k][1]
    if op ~= "+" then ai = ai + 1 end
    if op ~= "-" then bi = bi + 1 end
    if op ~= " " then changed = changed + 1 end
  end
  while i <= total do
    while i <= total and ops[i][1] == " " do i = i + 1 end
    if i > total then break end
    local first = math.max(1, i - M.CONTEXT)
    local last = i
    local k = i
    while k <= total do
      if ops[k][1] ~= " " then
        last = k
      elseif k - last > 2 * M.CONTEXT then
        break
      end
      k = k + 1
    end
    local stop = math.min(total, last + M.CONTEXT)
    local na, nb = 0, 0
    for x = first, stop do
      if ops[x][1] ~= "+" then na = na + 1 end
      if ops[x][1] ~= "-" then nb = nb + 1 end
    end
    local sa, sb = pos[first][1], pos[first][2]
    if na == 0 then sa = sa - 1 end
    if nb == 0 then sb = sb - 1 end
    emit(st, string.format("@@ -%d,%d +%d,%d @@", sa, na, sb, nb))
    for x = first, stop do emit(st, ops[x][1] .. cut(M.escape(ops[x][2]))) end
    i = stop + 1
  end
  if anl ~= bnl and #a > 0 and #b > 0 then
    emit(st, anl and "(expected ends with a newline, actual does not)"
      or "(actual ends with a newline, expected does not)")
  end
  if st.hidden > 0 then
    st.out[#st.out + 1] = string.format("... %d more diff lines not shown (%d lines changed in all)",
      st.hidden, changed)
  end
  return st.out, changed
end

---Two long one-line texts (masked): where they first differ, with an excerpt of each and a caret.
---@return string[] lines, integer the first differing byte (1-based)
function M.first_difference(expected, actual)
  local p = 1
  while p <= #expected and p <= #actual and expected:byte(p) == actual:byte(p) do p = p + 1 end
  local from = math.max(1, p - 30)
  local function excerpt(s)
    local before = M.escape(s:sub(from, p - 1), true)
    local rest = s:sub(p, p + 50)
    local text = (from > 1 and "..." or "") .. '"' .. before .. M.escape(rest, true) .. '"'
      .. (p + 50 < #s and "..." or "")
    return text, #(from > 1 and "..." or "") + 1 + #before
  end
  local e, col = excerpt(expected)
  local g = excerpt(actual)
  return { "expected: " .. e, "actual:   " .. g, string.rep(" ", 10 + col) .. "^" }, p
end

---A bounded block of one text (masked): its lines, each prefixed "| ".
---@return string[]
function M.block(text)
  local lines, nl = M.lines(text)
  local st = { out = {}, hidden = 0 }
  for _, l in ipairs(lines) do emit(st, "| " .. cut(M.escape(l))) end
  if not nl and #lines > 0 then emit(st, "(no newline at the end)") end
  if st.hidden > 0 then
    st.out[#st.out + 1] = string.format("... %d more lines not shown", st.hidden)
  end
  return st.out
end

-- Keys in a stable order: integers first (ascending), then the rest by type and text.
local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(x, y)
    local tx, ty = math.type(x) == "integer", math.type(y) == "integer"
    if tx ~= ty then return tx end
    if tx then return x < y end
    if type(x) ~= type(y) then return type(x) < type(y) end
    return tostring(x) < tostring(y)
  end)
  return keys
end

---A table as text, one entry per line, keys sorted, nested tables indented; what t.eq diffs.
---@param v any
---@param show function renders a value that is not a plain table (strings quoted)
---@return string
function M.render(v, show)
  local function walk(x, indent, seen, depth)
    local mt = type(x) == "table" and getmetatable(x)
    if type(x) ~= "table" or (type(mt) == "table" and rawget(mt, "__tostring")) then
      return show(x)
    end
    if seen[x] then return "<cycle>" end
    if next(x) == nil then return "{}" end
    if depth >= 10 then return "{...}" end
    seen[x] = true
    local parts = { "{" }
    for _, k in ipairs(sorted_keys(x)) do
      local key = type(k) == "string" and k:match("^[%a_][%w_]*$") and k or ("[" .. show(k) .. "]")
      parts[#parts + 1] = indent .. "  " .. key .. " = " .. walk(rawget(x, k), indent .. "  ", seen,
        depth + 1) .. ","
    end
    parts[#parts + 1] = indent .. "}"
    seen[x] = nil
    return table.concat(parts, "\n")
  end
  return walk(v, "", {}, 0)
end

return M
