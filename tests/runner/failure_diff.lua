-- Runner case: readable failures of long and multi-line values (abx.run.diff). t.eq on two
-- multi-line strings shows a unified line diff (--- expected, +++ actual, @@ hunks, 3 lines of
-- context) under a one-line headline, which is what the short summary repeats (not the two values
-- escaped); a diff of 400 changed lines is cut at 60 lines and says how many are not shown; a
-- secret is masked before a line is cut, so not even half of it shows; two long one-line strings
-- are shown by their first difference; tables are diffed through their rendering; t.match shows a
-- long text as a block of lines.
-- Expected: 5 failed; exit 1.
-- expect-line: ^    tests/runner/failure_diff\.lua:36: Assertion: config file: strings differ in 2 lines \(expected 5 lines, 56 bytes; got 5 lines, 55 bytes\)$
-- expect-line: ^    --- expected$
-- expect-line: ^    \+\+\+ actual$
-- expect-line: ^    @@ -1,5 \+1,5 @@$
-- expect-line: ^     name = web$
-- expect-line: ^    -port = 8080$
-- expect-line: ^    \+port = 9090$
-- expect-line: ^    \(expected ends with a newline, actual does not\)$
-- expect-line: ^FAILED tests/runner/failure_diff\.lua::a multi-line value - Assertion: config file: strings differ in 2 lines
-- expect-line: ^    \.\.\. [0-9]+ more diff lines not shown \(800 lines changed in all\)$
-- expect-line: ^    -x{150}\*\*\*$
-- expect-no-line: hunter2
-- expect-line: ^    tests/runner/failure_diff\.lua:55: Assertion: strings differ at byte 201 \(expected 300 bytes, got 300 bytes\)$
-- expect-line: ^    expected: \.\.\."a{30}bbbbb
-- expect-line: ^    actual:   \.\.\."a{30}Xbbbb
-- expect-line: ^ {48}\^$
-- expect-line: ^    tests/runner/failure_diff\.lua:61: Assertion: tables differ \(2 lines of their rendering\)$
-- expect-line: ^    -  state = "running",$
-- expect-line: ^    \+  state = "paused",$
-- expect-line: ^    tests/runner/failure_diff\.lua:65: Assertion: expected the text \(3 lines, [0-9]+ bytes\) to match "\^ready"$
-- expect-line: ^    \| booting$
-- expect-no-line: expected ".*\\n.*", got
local t = require("abx.test")

t.test("a multi-line value", function()
  local want = "name = web\nport = 8080\nworkers = 4\nlog = info\ntls = off\n"
  local got = "name = web\nport = 9090\nworkers = 4\nlog = info\ntls = off"
  t.eq(got, want, "config file")
end)

t.test("a long diff is bounded and masks secrets before cutting a line", function()
  local core = require("abx.core")
  local secret = "hunter2-secret-value"
  core.add_secret(secret)
  local a, b = {}, {}
  for i = 1, 400 do
    a[i] = "line " .. i
    b[i] = "LINE " .. i
  end
  a[1] = string.rep("x", 150) .. secret -- a cut at 160 bytes would fall inside the secret
  t.eq(table.concat(b, "\n"), table.concat(a, "\n"))
end)

t.test("two long one-line strings", function()
  local want = string.rep("a", 200) .. string.rep("b", 100)
  local got = string.rep("a", 200) .. "X" .. string.rep("b", 99)
  t.eq(got, want)
end)

t.test("two tables", function()
  local want = { id = "sbx-1", metadata = { owner = "qa", team = "e2e" }, state = "running", cpus = 2 }
  local got = { id = "sbx-1", metadata = { owner = "qa", team = "e2e" }, state = "paused", cpus = 2 }
  t.eq(got, want)
end)

t.test("t.match on a long text", function()
  t.match("booting\nloading modules\nstill waiting for the database to answer", "^ready")
end)
