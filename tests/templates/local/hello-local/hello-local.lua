-- hello-local.lua: scenario of the hello-local fixture template (tests/templates/local): the
-- copied page is served by the start command, and the recipe's env reaches commands.
local t = require("abx.test")

t.test("hello-local serves its copied page on port 8000", function(ctx)
  local r = ctx.template_sandbox:http(8000, { path = "/index.html" })
  t.eq(r.status, 200)
  t.eq(r.body, "<h1>hello-local</h1>\n")
end)

t.test("hello-local's env and workdir reach a command", function(ctx)
  local r = ctx.template_sandbox.commands:run("echo $HELLO_LOCAL; ls")
  t.eq(r.stdout, "1\nindex.html\n")
end)
