-- Runner case: fixtures. base_sandbox is created once per test (the same object on every access),
-- tagged e2e=<run id>, and killed after the test: a later test finds it gone (SandboxNotFound).
-- workdir exists in the sandbox and differs per test. sandbox_factory keeps caller metadata.
-- Every sandbox is killed by the test's own teardown, none is left for the final cleanup.
-- Expected (-j 1): every test passes; 3 sandboxes created, 0 killed at the end; exit code 0.
-- Prints "sandbox-id: <id>" for each sandbox (tests/runner/cleanup.sh runs it with -s to see them).
-- expect-line: ^PASSED +tests/runner/fixtures\.lua::base_sandbox is one tagged sandbox per test
-- expect-line: ^PASSED +tests/runner/fixtures\.lua::the previous test's sandbox is gone
-- expect-line: ^PASSED +tests/runner/fixtures\.lua::sandbox_factory keeps metadata and tags
-- expect-line: ^cleanup: 3 sandboxes created, 0 killed at the end \(tracked\), 0 found by tag
-- expect-no-line: ^(FAILED|ERROR)
local t = require("abx.test")
local first = {}

t.test("base_sandbox is one tagged sandbox per test", function(ctx)
  local sbx = ctx.base_sandbox
  print("sandbox-id: " .. sbx.id)
  t.ok(rawequal(sbx, ctx.base_sandbox), "base_sandbox is created once per test")
  t.match(ctx.run_id, "^[%w%-_]+$")
  local info = ctx.conn:get_info(sbx.id)
  t.eq(info.sandbox_id, sbx.id)
  t.eq(info.state, "running")
  t.eq(info.metadata.e2e, ctx.run_id)
  t.ok(sbx.files:exists(ctx.workdir), "workdir exists")
  t.eq(sbx.files:get_info(ctx.workdir).type, "dir")
  first.id, first.workdir, first.run_id = sbx.id, ctx.workdir, ctx.run_id
end)

t.test("the previous test's sandbox is gone", function(ctx)
  t.ok(first.id, "the first test ran before this one")
  t.raises("SandboxNotFound", function() ctx.conn:get_info(first.id) end)
  local sbx = ctx.base_sandbox
  print("sandbox-id: " .. sbx.id)
  t.neq(sbx.id, first.id)
  t.eq(ctx.run_id, first.run_id)
  t.neq(ctx.workdir, first.workdir, "workdir differs per test")
  local r = sbx.commands:run("test -d '" .. ctx.workdir .. "' && echo present")
  t.eq(r.stdout, "present\n")
  t.eq(sbx.files:exists(first.workdir), false)
end)

t.test("sandbox_factory keeps metadata and tags", function(ctx)
  local sbx = ctx.sandbox_factory({ metadata = { owner = "runner-case" } })
  print("sandbox-id: " .. sbx.id)
  local info = sbx:get_info()
  t.eq(info.metadata.owner, "runner-case")
  t.eq(info.metadata.e2e, ctx.run_id)
  local listed = ctx.conn:list({ metadata = { e2e = ctx.run_id } })
  local ids = {}
  for _, s in ipairs(listed) do ids[#ids + 1] = s.sandbox_id end
  t.eq(ids, { sbx.id }, "only this test's sandbox is alive under the run's tag")
end)
