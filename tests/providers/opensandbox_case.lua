-- OpenSandbox adapter case, run by test_opensandbox.py against its scripted OpenSandbox (provider
-- `osb`, protocol opensandbox): the same Sandbox objects as the E2B client's, over the /v1
-- lifecycle API and execd.
local t = require("abx.test")

t.test("round trip: create (202, poll), commands over SSE, files, kill", function(ctx)
  local sbx = ctx.sandbox_factory({ template = "base", timeout = 120, envs = { A = "1" }, secure = true })
  t.match(sbx.id, "^sb%-%d+$")
  t.eq({ sbx.template_id, sbx.secure, sbx.timeout }, { "base", true, 120 })
  local r = sbx.commands:run("echo hi")
  t.eq({ r.stdout, r.stderr, r.exit_code, r.error }, { "hi\n", "", 0, nil })
  local chunks = {}
  r = sbx.commands:run("exit 3", { on_stderr = function(c) chunks[#chunks + 1] = c end })
  t.eq({ r.stdout, r.stderr, r.exit_code, r.error }, { "", "bad\n", 3, "exit status 3" })
  t.eq(chunks, { "bad\n" })
  t.match(t.raises("Protocol", sbx.commands.run, sbx.commands, "corrupt").message, "not a JSON object")
  t.match(t.raises("Protocol", sbx.commands.run, sbx.commands, "noend").message,
    "without execution_complete")
  t.eq(sbx.files:write("/home/user/new/a.txt", "x\0y\n"), { path = "/home/user/new/a.txt",
    name = "a.txt", type = "file" })
  t.eq(sbx.files:read("/home/user/new/a.txt"), "x\0y\n")
  t.eq(sbx.files:exists("/home/user/new/a.txt"), true)
  local info = sbx.files:get_info("/home/user/new/a.txt")
  t.eq({ info.name, info.type, info.size, info.mode }, { "a.txt", "file", 4, 420 })
  local names = {}
  for _, e in ipairs(sbx.files:list("/home/user/new")) do names[#names + 1] = e.name .. ":" .. e.type end
  t.eq(names, { "a.txt:file" })
  t.eq(sbx.files:make_dir("/home/user/d/e"), true)
  t.eq(sbx.files:make_dir("/home/user/d/e"), false)
  t.eq(sbx.files:rename("/home/user/new/a.txt", "/home/user/moved/b.txt").path, "/home/user/moved/b.txt")
  t.raises("NotFound", sbx.files.read, sbx.files, "/home/user/new/a.txt")
  sbx.files:remove("/home/user/moved/b.txt")
  sbx.files:remove("/home/user/d")
  sbx.files:remove("/home/user/never")
  t.eq({ sbx.files:exists("/home/user/moved/b.txt"), sbx.files:exists("/home/user/d/e") }, { false, false })
  t.eq(sbx:is_running(), true)
  t.eq(sbx:kill(), true)
  t.eq(sbx:kill(), false)
  t.raises("SandboxNotFound", sbx.get_info, sbx)
  t.eq(sbx:is_running(), false)
end)

t.test("background command: init id, status polling, combined logs, on_stdout as it grows", function(ctx)
  local sbx = ctx.sandbox_factory({ template = "base", timeout = 120 })
  local h = sbx.commands:run("sleep 1; echo bg-out; echo bg-err >&2", { background = true })
  t.match(h.pid, "^cmd%-%d+$")
  local r = h:wait()
  t.eq({ r.stdout, r.stderr, r.exit_code, r.error }, { "bg-out\nbg-err\n", "", 0, nil })
  t.eq(h:done(), true)
  t.eq(h:kill(), true)
  t.eq(sbx.commands:kill("cmd-none"), false)
  t.raises("InvalidArgument", h.send_stdin, h, "x")
  local seen = {}
  local h2 = sbx.commands:run("tail", { background = true,
    on_stdout = function(c) seen[#seen + 1] = c end })
  t.eq(h2:wait().stdout, "bg-out\nbg-err\n")
  t.eq(table.concat(seen), "bg-out\nbg-err\n")
  t.raises("Skipped", sbx.commands.run, sbx.commands, "x", { background = true,
    on_stderr = function() end })
end)

t.test("user: a name is looked up with id once, root is uid 0, none is execd's user", function(ctx)
  local sbx = ctx.sandbox_factory({ template = "base", timeout = 120 })
  t.eq(sbx.commands:run("whoami", { user = "user" }).stdout, "user\n")
  t.eq(sbx.commands:run("whoami", { user = "user" }).stdout, "user\n")
  t.eq(sbx.commands:run("whoami", { user = "root" }).stdout, "root\n")
  t.eq(sbx.commands:run("whoami").stdout, "execd\n")
  t.match(t.raises("InvalidArgument", sbx.commands.run, sbx.commands, "whoami", { user = "ghost" }).message,
    "user ghost does not exist in sandbox .*no such user")
  t.raises("InvalidArgument", sbx.commands.run, sbx.commands, "whoami", { user = "a b" })
end)

t.test("lifecycle: set_timeout (renew-expiration), pause, connect resumes, info, list pages", function(ctx)
  local sbx = ctx.sandbox_factory({ template = "base", timeout = 120 })
  sbx:set_timeout(600)
  local info = sbx:get_info()
  t.eq({ info.sandbox_id, info.state, info.template_id }, { sbx.id, "running", "base" })
  t.eq(info.metadata.e2e, ctx.run_id)
  t.eq(sbx:pause(), true)
  t.eq(sbx:get_info().state, "paused")
  t.eq(sbx:pause(), false)
  t.eq(sbx:connect(), sbx)
  t.eq(sbx.resumed, true)
  t.eq(sbx.commands:run("echo hi").stdout, "hi\n")
  local other = ctx.sandbox_factory({ template = "base", timeout = 120 })
  local items, token = ctx.conn:list_page({ limit = 1, metadata = { e2e = ctx.run_id } })
  t.eq({ #items, token }, { 1, "2" })
  local ids = {}
  for _, it in ipairs(ctx.conn:list({ limit = 1, metadata = { e2e = ctx.run_id }, state = { "running" } })) do
    ids[it.sandbox_id] = true
  end
  t.ok(ids[sbx.id] and ids[other.id], "both listed across pages")
  t.raises("InvalidArgument", ctx.conn.list_page, ctx.conn, { state = { "sleeping" } })
  t.raises("InvalidArgument", sbx.set_timeout, sbx, 30) -- below ttl.min, before any request
end)

t.test("a wrong key is refused with Authentication; unknown sandbox is SandboxNotFound", function(ctx)
  local bad = ctx.conn:with({ api_key = "wrong_key_0123456789" })
  local e = t.raises("Authentication", bad.list, bad)
  t.eq({ e.status, e.code }, { 401, "UNAUTHORIZED" })
  t.raises("Authentication", function() return ctx.conn:with({ api_key = false }):get_info("sb-1") end)
  e = t.raises("SandboxNotFound", ctx.conn.get_info, ctx.conn, "sb-nope")
  t.eq(e.code, "NOT_FOUND")
  t.eq(ctx.conn:kill("sb-nope"), false)
end)

t.test("a sandbox that fails to start: Sandbox error with the status reason", function(ctx)
  local e = t.raises("Sandbox", ctx.sandbox_factory, { template = "broken", timeout = 60 })
  t.match(e.message, "is Failed %(reason: image_pull_failed; cannot pull image broken%)")
end)

t.test("execd token: from the endpoint's headers; a wrong one is Authentication; unsecured by default", function(ctx)
  local sbx = ctx.sandbox_factory({ template = "base", timeout = 120, secure = true })
  local e = t.raises("Authentication", function() return sbx:with({ access_token = "bad" }).commands:run("echo hi") end)
  t.eq(e.status, 401)
  t.raises("Authentication", function() return sbx:with({ access_token = false }).files:read("/x") end)
  local open = ctx.sandbox_factory({ template = "base", timeout = 120 })
  t.eq(open.secure, false)
  t.eq(open.commands:run("echo hi").exit_code, 0)
  t.match(open:port_url(8080), "^http://127%.0%.0%.1:%d+/sandboxes/" .. open.id:gsub("%p", "%%%0")
    .. "/port/8080$")
  t.raises("Skipped", open.get_metrics, open)
end)
