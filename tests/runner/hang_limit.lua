-- Runner case: a hung test's Timeout names its limit, the limit's source and how to change it
-- (issue 22, item 3). The limits are short (tests/runner/hang/abxlua.yaml: test_timeout 2,
-- teardown_timeout 2) so that the hung tests end soon; nothing here bounds the wall time.
-- Expected: "waits forever, timeout = 2" (its own timeout) and "busy loop, timeout = 1" fail with
-- the test's `timeout =` as the source; "waits forever, the config's limit" (no timeout of its
-- own) names defaults.test_timeout in the config file; a finalizer that waits forever is ended by
-- defaults.teardown_timeout and reported as a teardown error naming it, and so is a file fixture's
-- teardown that waits forever (reported on the file's last test: -j 1 keeps that one the last);
-- the key phrases other tests match ("deadline passed while it was waiting / running Lua code")
-- stay.
-- Expected: 2 passed, 3 failed, 2 errors; exit code 1.
-- args: --config tests/runner/hang/abxlua.yaml -j 1
-- expect-line: ^FAILED +tests/runner/hang_limit\.lua::waits forever, timeout = 2 \([0-9.]+s\) - Timeout$
-- expect-line: hang_limit\.lua:[0-9]+: Timeout: the test ran 2 s, its limit \(timeout = 2 on the test; change it there\): the deadline passed while it was waiting$
-- expect-line: hang_limit\.lua:[0-9]+: Timeout: the test ran 1 s, its limit \(timeout = 1 on the test; change it there\): the deadline passed while it was running Lua code \(busy loop\?\)$
-- expect-line: hang_limit\.lua:[0-9]+: Timeout: the test ran 2 s, its limit \(defaults\.test_timeout in tests/runner/hang/abxlua\.yaml; set timeout = N on the test or --timeout S\): the deadline passed while it was waiting$
-- expect-line: ^ERROR +tests/runner/hang_limit\.lua::a finalizer waits forever \(teardown, [^)]*\): .*Timeout: the teardown ran 2 s, its limit \(defaults\.teardown_timeout in tests/runner/hang/abxlua\.yaml\): the deadline passed while it was waiting$
-- expect-line: ^ERROR +tests/runner/hang_limit\.lua::uses a fixture whose teardown waits forever \(teardown, fixture stuck\): the fixture teardown ran 2 s, its limit \(defaults\.teardown_timeout in tests/runner/hang/abxlua\.yaml\): the deadline passed while it was waiting$
-- expect-line: ^FAILED tests/runner/hang_limit\.lua::waits forever, the config's limit - Timeout: the test ran 2 s, its limit \(defaults\.test_timeout in
local t = require("abx.test")
local core = require("abx.core")

t.test("waits forever, timeout = 2", { timeout = 2 }, function()
  core.sleep(1e9)
end)

t.test("busy loop, timeout = 1", { timeout = 1 }, function()
  local n = 0
  while true do n = n + 1 end
end)

t.test("waits forever, the config's limit", function()
  core.sleep(1e9)
end)

t.test("a finalizer waits forever", function(ctx)
  ctx.finally(function() core.sleep(1e9) end)
end)

t.fixture("stuck", { scope = "file" }, function()
  return "made", function() core.sleep(1e9) end
end)

t.test("uses a fixture whose teardown waits forever", function(ctx)
  t.eq(ctx.stuck, "made")
end)
