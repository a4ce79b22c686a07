-- Runner case: a test that requires a capability outside the known set is a collection error of
-- its file (like an unregistered marker): nothing of the file runs.
-- Expected: 0 tests run, 1 collection error naming the capability; exit code 1.
-- expect-line: ^ERROR +tests/runner/cap_unknown\.lua.*requires unknown capability "nosuchcap"
-- expect-line: known: pause, snapshot, volume, file_metadata, network_update, code_interpreter, code_display, metrics, templates_build, pty, watch
-- expect-no-line: ^(PASSED|FAILED|SKIPPED)
local t = require("abx.test")

t.test("needs a capability nobody has", { requires = { "pause", "nosuchcap" } }, function()
  error("must not run: the file is a collection error")
end)

t.test("an ordinary test of the same file", function() end)
