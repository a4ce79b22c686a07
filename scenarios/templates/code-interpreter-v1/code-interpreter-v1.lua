-- code-interpreter-v1: the official template's own check (ctx.template_sandbox), as the suite
-- abxlua replaces checked its official templates: shell, files and code. 05_network_and_code.lua
-- covers run_code in depth (results, errors, PNG, contexts); this is the template's smoke test.
-- The three tests share one sandbox (a file fixture): each boot of this template starts Jupyter
-- (about a second of CPU), and none of the checks needs a fresh sandbox; the names they write
-- are their own.
local t = require("abx.test")

t.fixture("ci", { scope = "file" }, function(ctx) return ctx.template_sandbox end)

t.test("code-interpreter-v1 runs a shell command as user", function(ctx)
  local r = ctx.ci.commands:run("id -un && python3 -c 'print(6 * 7)'")
  t.eq(r.exit_code, 0, r.stderr)
  t.eq(r.stdout, "user\n42\n")
end)

t.test("code-interpreter-v1 writes and reads back a file", function(ctx)
  local sbx = ctx.ci
  sbx.files:write("/home/user/ci-roundtrip.txt", ctx.run_id)
  t.eq(sbx.files:read("/home/user/ci-roundtrip.txt"), ctx.run_id)
end)

t.test("code-interpreter-v1 runs Python code with state and reads the file envd wrote", function(ctx)
  local sbx = ctx.ci
  sbx.files:write("/home/user/ci-input.txt", "21")
  -- the only test here that runs code, so the default context's state is its own
  t.eq(sbx:run_code("n = int(open('/home/user/ci-input.txt').read())").error, nil)
  local ex = sbx:run_code("print('doubling')\nn * 2")
  t.eq(ex.error, nil)
  t.eq(ex.text, "42")
  t.eq(ex.logs.stdout, { "doubling\n" })
end)
