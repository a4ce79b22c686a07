-- Scenario of tests/runner/credentials.sh, copied into a temporary project whose .env holds a fake
-- API key for provider remote-fake (nothing listens at its api_url). No test creates a sandbox.
local t = require("abx.test")
local fixtures = require("abx.fixtures")

t.test("the key from .env reached the connection", function(ctx)
  t.match(ctx.conn.api_key, "^e2b_")
  t.eq(ctx.conn.api_url:match("^http://127%.0%.0%.1:%d+$") ~= nil, true)
end)

t.test("fixture templates come from .env or their defaults", function()
  t.eq(fixtures.template("server_sandbox"), "srv-from-dotenv")
  t.eq(fixtures.template("code_sandbox"), "code-interpreter-v1")
end)

t.test("a skip reason holding the key is masked", function(ctx)
  t.skip("the key is " .. ctx.conn.api_key)
end)

t.test("needs a template build", { requires = { "templates_build" } }, function()
  error("must not run: remote-fake lacks templates_build")
end)
