-- Reports case: test names and messages full of markup, control characters and invalid UTF-8; the
-- JUnit, JSON and TAP reports must still parse (tests/reports/check_reports.py).
-- Expected: 1 passed, 2 failed, 1 skipped.
local t = require("abx.test")

local NASTY = "<a href=\"x\">&amp; 'q' ]]> \1\2\27[31m\127 tab\there\r\nnew line # not a directive \255\254 ok é 漢"

t.test("passes with <xml> & \"quotes\" 'too' # hash", function() end)

t.test("fails with a hostile message", function()
  t.eq(NASTY, "plain")
end)

t.test("raises a hostile string", function()
  error(NASTY, 0)
end)

t.test("skips with a hostile reason", function()
  t.skip(NASTY)
end)
