-- python-hello: the template's own check, run by `abxlua run scenarios/templates/` once the
-- recipe is built (scenarios/06_server_sdk.lua covers the server's whole API). Fixture:
-- ctx.template_sandbox (a sandbox of this folder's template). Markers: none.
-- What it proves: start_cmd started agent-sandbox-server as `user`, the
-- ready_cmd (GET /health on 8080) held before the create answered, and a client outside reaches
-- the server at the sandbox's port URL with the token the server wrote.
local t = require("abx.test")

t.test("python-hello serves agent-sandbox-server on port 8080 at its port URL", function(ctx)
  local sbx = ctx.template_sandbox
  local srv = sbx:server()
  t.eq(srv:health().status, "ok", "ready at once: the create waited for ready_cmd")
  t.eq(srv:hello().message, "hello from python-hello")
  local caps = srv:capabilities()
  t.eq(caps.name, "agent-sandbox-server")
  t.eq(caps.port, 8080)
  t.eq(caps.user, "user")
  t.raises("Authentication", function() srv:with({ token = false }):hello() end)
  local r = srv:run("id -un; python3 --version")
  t.eq(r.exit_code, 0)
  t.match(r.stdout, "^user\nPython 3%.")
  -- the server process itself runs as user, started by start_cmd from /opt/agent-server
  local ps = sbx.commands:run("ps -o user=,args= -C python3")
  t.match(ps.stdout, "user +python3 /opt/agent%-server/server%.py")
  t.eq(sbx.commands:run("stat -c '%a %U' /var/lib/agent-server /var/lib/agent-server/token",
    { user = "root" }).stdout, "700 user\n600 user\n", "the token file is the server user's alone")
end)
