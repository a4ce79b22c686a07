-- The scenario of tests/templates/local/author-loop (tests/templates/test_author_loop.py builds
-- it with `abxlua template` and opens it with `abxlua sandbox`): the built file and the run
-- steps' users.
local t = require("abx.test")

t.test("the copied file and each run step's user", function(ctx)
  local sbx = ctx.template_sandbox
  local r = sbx.commands:run("cat /home/user/built-by-run.txt /opt/loop/root-step.txt")
  t.eq(r.stdout, "hello from the author loop\nuser\nroot\n")
end)
