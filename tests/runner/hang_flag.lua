-- Runner case: `abxlua run --timeout S` is named as the limit's source of a test without a
-- `timeout` of its own; a test's own `timeout` still wins over the flag (issue 22, item 3).
-- Expected: both tests wait forever and fail with Timeout; exit code 1.
-- args: -j 2 --timeout 2
-- expect-line: hang_flag\.lua:[0-9]+: Timeout: the test ran 2 s, its limit \(--timeout 2 on the command line; set timeout = N on the test or another --timeout S\): the deadline passed while it was waiting$
-- expect-line: hang_flag\.lua:[0-9]+: Timeout: the test ran 1 s, its limit \(timeout = 1 on the test; change it there\): the deadline passed while it was waiting$
local t = require("abx.test")
local core = require("abx.core")

t.test("waits forever, no timeout of its own", function()
  core.sleep(1e9)
end)

t.test("waits forever, timeout = 1 beside --timeout", { timeout = 1 }, function()
  core.sleep(1e9)
end)
