-- Runner case: code_sandbox and server_sandbox create their sandbox from E2E_CODE_TEMPLATE
-- (default code-interpreter-v1) and E2E_SERVER_TEMPLATE (default python-hello). The local platform
-- may not have these templates (python-hello exists only once a run or `abxlua template deploy`
-- built it): then the fixture skips the test (kind Skipped) naming the template. Either way the
-- fixture asked for the right template, once per test.
-- Expected (-j 1): 2 passed; exit code 0.
-- expect-line: ^PASSED +tests/runner/fixture_templates\.lua::code_sandbox uses the code template
-- expect-line: ^PASSED +tests/runner/fixture_templates\.lua::server_sandbox uses the server template
local t = require("abx.test")
local fixtures = require("abx.fixtures")

local function check(ctx, fixture)
  local template = fixtures.template(fixture)
  local ok, res = pcall(function() return ctx[fixture] end)
  if ok then
    t.ok(rawequal(res, ctx[fixture]), fixture .. " is created once per test")
    local info = ctx.conn:get_info(res.id)
    t.eq(info.metadata.e2e, ctx.run_id)
  else
    t.eq(res.kind, "Skipped")
    t.ok(res.message:find("template " .. template .. " is not on provider", 1, true),
      "the skip names template " .. template)
  end
end

t.test("code_sandbox uses the code template", function(ctx)
  t.eq(fixtures.template("code_sandbox"), "code-interpreter-v1")
  check(ctx, "code_sandbox")
end)

t.test("server_sandbox uses the server template", function(ctx)
  t.eq(fixtures.template("server_sandbox"), "python-hello")
  check(ctx, "server_sandbox")
end)
