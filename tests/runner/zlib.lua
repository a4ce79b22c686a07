-- Runner case: core.gzip / core.gunzip round-trip any bytes, accept concatenated members, and end
-- corrupt, truncated or oversized input in a Protocol error.
-- Expected: 4 passed, exit 0.
local t = require("abx.test")
local core = require("abx.core")

local function all_bytes(n)
  local parts = {}
  for i = 0, n - 1 do parts[#parts + 1] = string.char(i % 256) end
  return table.concat(parts)
end

t.test("gzip then gunzip returns the same bytes", function()
  for _, data in ipairs({ "", "hello", all_bytes(256), string.rep("abc", 100000) }) do
    local z = core.gzip(data)
    t.eq(z:sub(1, 2), "\31\139", "gzip magic")
    t.eq(core.gunzip(z), data)
  end
  t.ok(#core.gzip(string.rep("a", 100000)) < 1000, "repetitive data compresses")
end)

t.test("concatenated gzip members decode to the concatenation", function()
  t.eq(core.gunzip(core.gzip("one ") .. core.gzip("two")), "one two")
end)

t.test("corrupt and truncated gzip are Protocol errors", function()
  local z = core.gzip(string.rep("x", 1000))
  t.raises("Protocol", function() core.gunzip("not gzip at all") end)
  t.raises("Protocol", function() core.gunzip(z:sub(1, #z - 10)) end)
end)

t.test("output over the limit is a Protocol error", function()
  local z = core.gzip(string.rep("y", 1000000))
  t.raises("Protocol", function() core.gunzip(z, 1000) end)
  t.eq(#core.gunzip(z, 1000000), 1000000)
end)
