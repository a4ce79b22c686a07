-- Runner case: abx.run.diff's unified diff (hunks, their line numbers, context, merging, an
-- insertion, escapes, the bound) and abx.run.capture's bound, without a platform.
-- Expected: 4 passed, exit 0.
-- expect-no-line: ^(FAILED|ERROR)
local t = require("abx.test")
local core = require("abx.core")
local diff = require("abx.run.diff")
local capture = require("abx.run.capture")

local function lines(n, change)
  local out = {}
  for i = 1, n do out[i] = (change and change[i]) or ("l" .. i) end
  return table.concat(out, "\n") .. "\n"
end

t.test("two changes far apart are two hunks with 3 lines of context", function()
  local d, changed = diff.unified(lines(20), lines(20, { [3] = "X3", [17] = "X17" }))
  t.eq(changed, 4)
  t.eq(d, { "--- expected", "+++ actual",
    "@@ -1,6 +1,6 @@", " l1", " l2", "-l3", "+X3", " l4", " l5", " l6",
    "@@ -14,7 +14,7 @@", " l14", " l15", " l16", "-l17", "+X17", " l18", " l19", " l20" })
  -- changes 6 lines apart share one hunk
  local near = diff.unified(lines(20), lines(20, { [5] = "X5", [11] = "X11" }))
  t.eq(near[3], "@@ -2,13 +2,13 @@")
end)

t.test("an insertion, escapes and the bound", function()
  local d = diff.unified("a\nb\n", "a\nnew\nb\n")
  t.eq(d, { "--- expected", "+++ actual", "@@ -1,2 +1,3 @@", " a", "+new", " b" })
  d = diff.unified("", "x\n")
  t.eq(d[3], "@@ -0,0 +1,1 @@")
  d = diff.unified("ok\n", "ok\r\n")
  t.eq(d, { "--- expected", "+++ actual", "@@ -1,1 +1,1 @@", "-ok", "+ok\\r" })
  d = diff.unified(lines(300), lines(300, setmetatable({}, { __index = function(_, i) return "c" .. i end })))
  t.eq(#d, diff.MAX_LINES + 1)
  t.match(d[#d], "^%.%.%. 543 more diff lines not shown %(600 lines changed in all%)$")
  -- cut on a UTF-8 boundary: 11 bytes keep 5 two-byte characters
  t.eq(diff.cut(string.rep("é", 100), 11), string.rep("é", 5) .. "...(190 more bytes)")
end)

t.test("tables render with sorted keys, one entry a line", function()
  t.eq(diff.render({ b = 1, a = { 2, "x" } }, function(v) return type(v) == "string"
    and ("%q"):format(v) or tostring(v) end),
    '{\n  a = {\n    [1] = 2,\n    [2] = "x",\n  },\n  b = 1,\n}')
end)

t.test("the capture keeps LIMIT bytes a stream, cut at a line end, and counts the rest", function()
  local saved = capture.LIMIT
  local cap
  local me = core.current()
  core.spawn(function()
    capture.LIMIT = 20
    capture.begin(core.current())
    print("0123456789")
    print("abcdefghij")
    print("tail")
    cap = capture.finish(core.current())
    capture.LIMIT = saved
    core.unpark(me)
  end)
  core.park()
  t.eq(cap.stdout, "0123456789\n")
  t.eq(cap.dropped_stdout, 16)
  t.match(capture.text(cap, "stdout"), "%[abxlua: 16 more bytes of stdout not kept")
end)
