-- Runner case: tests annotated with an applicable known issue that fail are xfailed; with
-- `raises`, only the named kind counts (an assertion counts only when `raises` names it:
-- tests/runner/ki_script_error.lua).
-- Expected: 2 xfailed, 1 failed (the wrong kind), exit 1.
-- args: --config tests/runner/ki/abxlua.yaml -j 1
-- expect-line: ^XFAILED +tests/runner/ki_xfail\.lua::fails on an assertion .* - KI-900: Every provider fails this
-- expect-line: ^XFAILED +tests/runner/ki_xfail\.lua::fails with the expected kind
-- expect-line: ^FAILED +tests/runner/ki_xfail\.lua::fails with another kind
-- expect-line: known issue KI-900 expects NotFound, so this is a real failure
local t = require("abx.test")
local core = require("abx.core")

t.test("fails on an assertion", { known_issue = "KI-900", raises = "Assertion" }, function()
  t.eq(1, 2)
end)
-- the marker beside the option is allowed (the runner adds it anyway): tests/runner/ki_marker.lua
t.test("fails with the expected kind", { known_issue = "KI-900", raises = "NotFound",
  markers = { "known_issue" } }, function()
  core.error("NotFound", 404, "gone")
end)
t.test("fails with another kind", { known_issue = "KI-900", raises = "NotFound" }, function()
  core.error("Conflict", 409, "busy")
end)
