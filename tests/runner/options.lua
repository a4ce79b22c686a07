-- Runner case: the object model fails closed (issue 9, item 5). A misspelled or mistyped option
-- raises InvalidArgument naming the call, the key and the valid keys; a result table or a
-- Sandbox, Commands or Files object answers an unknown field or method with InvalidArgument
-- naming the valid ones, while a documented optional field that is absent reads as nil.
-- Expected (-j 1): every test passes; exit code 0.
-- expect-line: ^PASSED +tests/runner/options\.lua::sandbox_factory rejects misspelled options
-- expect-line: ^PASSED +tests/runner/options\.lua::commands:run rejects a misspelled or mistyped option
-- expect-line: ^PASSED +tests/runner/options\.lua::result tables reject unknown fields
-- expect-line: ^PASSED +tests/runner/options\.lua::objects reject unknown fields and methods
-- expect-line: ^PASSED +tests/runner/options\.lua::the options checker names call, key and valid keys
-- expect-no-line: ^(FAILED|ERROR)
local t = require("abx.test")

t.test("sandbox_factory rejects misspelled options", function(ctx)
  local err = t.raises("InvalidArgument", function()
    ctx.sandbox_factory({ templte = "x", timout = 5 })
  end)
  t.match(err.message, "^ctx%.sandbox_factory: unknown option '(t[ei][mt][po]l?[a-z]*)'")
  t.match(err.message, "valid: .*template.*timeout")
  err = t.raises("InvalidArgument", function() ctx.conn:create({ timeout = "5" }) end)
  t.match(err.message, "^conn:create: option 'timeout' must be a number, got string")
  t.raises("InvalidArgument", function() ctx.conn:list({ metdata = { e2e = ctx.run_id } }) end)
end)

t.test("commands:run rejects a misspelled or mistyped option", function(ctx)
  local sbx = ctx.base_sandbox
  local err = t.raises("InvalidArgument", function() sbx.commands:run("pwd", { cdw = "/tmp" }) end)
  t.match(err.message, "^commands:run: unknown option 'cdw'")
  t.match(err.message, "did you mean 'cwd'")
  t.match(err.message, "valid: background, cwd, envs")
  err = t.raises("InvalidArgument", function() sbx.commands:run("pwd", { cwd = 5 }) end)
  t.match(err.message, "^commands:run: option 'cwd' must be a string, got number")
  t.raises("InvalidArgument", function() sbx.commands:run("pwd", { envs = { A = 1 } }) end)
  t.raises("InvalidArgument", function() sbx.files:list("/tmp", { dept = 2 }) end)
  t.raises("InvalidArgument", function() sbx.files:make_dir("/tmp/x", { usr = "root" }) end)
  t.raises("InvalidArgument", function() sbx.pty:create({ col = 80 }) end)
  t.raises("InvalidArgument", function() sbx:http(8080, { methd = "GET" }) end)
  t.raises("InvalidArgument", function() sbx:connect({ timout = 60 }) end)
  t.raises("InvalidArgument", function() sbx:run_code("1", { langauge = "python" }) end)
  t.eq(sbx.commands:run("pwd", { cwd = "/tmp" }).stdout, "/tmp\n", "the right spelling works")
end)

t.test("result tables reject unknown fields", function(ctx)
  local sbx = ctx.base_sandbox
  local r = sbx.commands:run("true")
  t.eq(r.exit_code, 0)
  t.eq(r.error, nil, "a documented optional field reads as nil")
  local err = t.raises("InvalidArgument", function() return r.exitcode end)
  t.match(err.message, "CommandResult has no field 'exitcode'")
  t.match(err.message, "exit_code")
  local e = sbx.files:get_info("/tmp")
  t.eq(e.symlink_target, nil)
  t.raises("InvalidArgument", function() return e.sizee end)
  local info = sbx:get_info()
  t.eq(info.sandbox_id, sbx.id)
  t.raises("InvalidArgument", function() return info.sandboxid end)
end)

t.test("objects reject unknown fields and methods", function(ctx)
  local sbx = ctx.base_sandbox
  t.eq(sbx.resumed, nil, "documented, absent: nil")
  t.eq(sbx.traffic_access_token, nil, "documented, absent: nil")
  local err = t.raises("InvalidArgument", function() return sbx.kil end)
  t.match(err.message, "Sandbox has no field or method 'kil'")
  t.match(err.message, "kill")
  err = t.raises("InvalidArgument", function() return sbx.commands.rn end)
  t.match(err.message, "Commands has no field or method 'rn'.*run")
  err = t.raises("InvalidArgument", function() return sbx.files.raed end)
  t.match(err.message, "Files has no field or method 'raed'.*read")
end)

t.test("the options checker names call, key and valid keys", function()
  local options = require("abx.options")
  local spec = options.define("demo:call", "A demo call.", {
    { "alpha", "string", "first" }, { "beta", "integer", "second" },
    { "gamma", "string[]", "third" }, { "delta", "boolean|string", "fourth" },
  })
  t.eq(options.check(spec, nil), {})
  t.eq(options.check(spec, { alpha = "a", beta = 2, gamma = { "x" }, delta = true }).beta, 2)
  local err = t.raises("InvalidArgument", function() options.check(spec, { alfa = "a" }) end)
  t.eq(err.message, "demo:call: unknown option 'alfa', did you mean 'alpha'? "
    .. "(valid: alpha, beta, delta, gamma)")
  err = t.raises("InvalidArgument", function() options.check(spec, { beta = 1.5 }) end)
  t.eq(err.message, "demo:call: option 'beta' must be an integer, got number 1.5")
  t.raises("InvalidArgument", function() options.check(spec, { gamma = { 1 } }) end)
  t.raises("InvalidArgument", function() options.check(spec, { delta = 3 }) end)
  t.raises("InvalidArgument", function() options.check(spec, "alpha") end)
  t.raises("InvalidArgument", function() options.check(spec, { "positional" }) end)
end)
