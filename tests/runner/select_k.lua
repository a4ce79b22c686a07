-- Runner case: -k keeps only the tests whose name contains the text (plain text, not a pattern).
-- Expected (-k "keep.me"): 2 passed; the others are not run nor reported; exit code 0.
-- args: -k keep.me -j 1
-- expect-line: ^PASSED +tests/runner/select_k\.lua::keep\.me one
-- expect-line: ^PASSED +tests/runner/select_k\.lua::also keep\.me
-- expect-no-line: select_k\.lua::(drop|keepXme)
local t = require("abx.test")

t.test("keep.me one", function() t.ok(true) end)
t.test("drop this one", function() t.fail("not selected, must not run") end)
t.test("keepXme is not a match for the plain text", function() t.fail("must not run") end)
t.test("also keep.me", function() t.ok(true) end)
