-- Selection fixture for tests/runner/selection.py (--durations): known call and teardown times.
local t = require("abx.test")
local core = require("abx.core")

t.test("sleeps 0.3 s", function() core.sleep(0.3) end)
t.test("sleeps 0.1 s", function() core.sleep(0.1) end)
t.test("returns at once", function() t.ok(true) end)
t.test("tears down in 0.2 s", function(ctx) ctx.finally(function() core.sleep(0.2) end) end)
