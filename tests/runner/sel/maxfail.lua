-- Selection fixture for tests/runner/selection.py (--maxfail): six tests, three of them failing.
local t = require("abx.test")

t.test("first passes", function() t.ok(true) end)
t.test("second fails", function() t.eq("a", "b") end)
t.test("third fails", function() t.eq(1, 2) end)
t.test("fourth passes", function() t.ok(true) end)
t.test("fifth fails", function() t.fail("fifth") end)
t.test("sixth passes", function() t.ok(true) end)
