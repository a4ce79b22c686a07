-- Runner case: core.sink (bindings/core_sink.c), the accumulator commands collect output in,
-- without a platform: add/len/tostring/take keep every byte in order, take empties it, a large
-- sink (past the 4 MiB prefault step and several doublings) holds exactly what was added.
-- Expected: 3 passed, exit 0.
-- expect-no-line: ^(FAILED|ERROR)
local t = require("abx.test")
local core = require("abx.core")

t.test("a sink keeps bytes in order, tostring copies, take empties", function()
  local s = core.sink()
  t.eq(s:len(), 0)
  t.eq(s:tostring(), "")
  s:add("ab")
  s:add("")
  s:add("c\0d")
  t.eq(s:len(), 5)
  t.eq(s:tostring(), "abc\0d")
  t.eq(s:tostring(), "abc\0d", "tostring leaves the bytes")
  t.eq(s:take(), "abc\0d")
  t.eq(s:len(), 0, "take empties the sink")
  t.eq(s:take(), "")
  s:add("again")
  t.eq(s:take(), "again", "an emptied sink takes bytes again")
end)

t.test("a 20 MiB sink holds exactly what was added", function()
  local s = core.sink()
  local piece = string.rep("0123456789abcdef", 2048) -- 32 KiB
  local n = 0
  for i = 1, 640 do
    s:add(piece:sub(1, 32768 - (i % 7)))
    n = n + 32768 - (i % 7)
  end
  t.eq(s:len(), n)
  local all = s:take()
  t.eq(#all, n)
  t.eq(all:sub(1, 16), "0123456789abcdef")
  t.eq(core.sha256(all), core.sha256((function()
    local parts = {}
    for i = 1, 640 do parts[i] = piece:sub(1, 32768 - (i % 7)) end
    return table.concat(parts)
  end)()))
end)

t.test("sink:add takes only strings", function()
  local s = core.sink()
  t.ok(not pcall(s.add, s, {}), "a table is refused")
  t.ok(not pcall(s.add, s), "nothing is refused")
end)
