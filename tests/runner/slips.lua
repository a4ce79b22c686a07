-- Runner case (issue 23 item 6): the slips a newcomer makes fail closed with a pointer to the
-- right thing, at the scenario's line (not inside lib/abx/): a method called with '.' instead of
-- ':', an E2B SDK name on a Sandbox, Files or Commands, an unknown abx.test function (another
-- framework's name or a typo), an unknown t.test or t.fixture option, an unknown ctx fixture.
-- The last two tests make a slip uncaught, so that the console shows where it points.
-- Expected (-j 1): 5 passed, 2 failed; exit code 1.
-- expect-line: ^    tests/runner/slips\.lua:90: InvalidArgument: files\.read called with '\.'; use sbx\.files:read\(\.\.\.\)$
-- expect-line: ^    tests/runner/slips\.lua:94: abx\.test has no 'equal'; did you mean t\.eq\? \(it has: 
-- expect-line: ^PASSED +tests/runner/slips\.lua::a method called with a dot names the colon form \(
-- expect-line: ^PASSED +tests/runner/slips\.lua::SDK names point to abxlua names \(
-- expect-line: ^PASSED +tests/runner/slips\.lua::abx\.test names the function meant \(
-- expect-line: ^PASSED +tests/runner/slips\.lua::t\.test and t\.fixture options suggest the option meant \(
-- expect-line: ^PASSED +tests/runner/slips\.lua::an unknown fixture suggests the fixture meant \(
-- expect-no-line: ^    lib/abx/
-- expect-no-line: ^ERROR
local t = require("abx.test")

-- "tests/runner/slips.lua:<line>" of the caller: where a slip on that line must point
local function here() return "tests/runner/slips.lua:" .. debug.getinfo(2, "l").currentline end

-- the InvalidArgument `fn` raises, with its message equal to `msg` and its place to `at`
local function slip(msg, at, fn)
  local err = t.raises("InvalidArgument", fn)
  t.eq(err.message, msg)
  t.eq(err.where, at, "the slip points at the scenario's line")
end

t.test("a method called with a dot names the colon form", function(ctx)
  local sbx = ctx.base_sandbox
  slip("files.read called with '.'; use sbx.files:read(...)", here(), function() sbx.files.read("/x") end)
  slip("commands.run called with '.'; use sbx.commands:run(...)", here(), function() sbx.commands.run("ls") end)
  slip("sbx.kill called with '.'; use sbx:kill(...)", here(), function() sbx.kill() end)
  slip("sbx.set_timeout called with '.'; use sbx:set_timeout(...)", here(), function() sbx.set_timeout(60) end)
  slip("pty.create called with '.'; use sbx.pty:create(...)", here(), function() sbx.pty.create({}) end)
  slip("conn.list called with '.'; use conn:list(...)", here(), function() ctx.conn.list() end)
  local h = sbx.commands:run("sleep 30", { background = true })
  slip("handle.kill called with '.'; use handle:kill(...)", here(), function() h.kill() end)
  t.eq(h:kill(), true, "the colon form works")
  sbx.files:write("/tmp/slips", "x")
  t.eq(sbx.files:read("/tmp/slips"), "x", "and the colon form of files works")
end)

t.test("SDK names point to abxlua names", function(ctx)
  local sbx = ctx.base_sandbox
  slip("Sandbox has no 'exec'; use sbx.commands:run(...)", here(), function() return sbx:exec("ls") end)
  slip("Sandbox has no 'runCode'; use sbx:run_code(...)", here(), function() return sbx.runCode end)
  slip("Sandbox has no 'filesystem'; use sbx.files", here(), function() return sbx.filesystem end)
  slip("Sandbox has no 'setTimeout'; use sbx:set_timeout(...)", here(), function() return sbx.setTimeout end)
  slip("Sandbox has no 'sandboxId'; use sbx.id", here(), function() return sbx.sandboxId end)
  slip("Files has no 'makeDir'; use sbx.files:make_dir(...)", here(), function() return sbx.files.makeDir end)
  slip("Files has no 'mkdir'; use sbx.files:make_dir(...)", here(), function() return sbx.files.mkdir end)
  slip("Commands has no 'exec'; use sbx.commands:run(...)", here(), function() return sbx.commands.exec end)
end)

t.test("abx.test names the function meant", function()
  local function lua_slip(want, at, fn)
    local ok, err = pcall(fn)
    t.eq(ok, false)
    t.eq(type(err), "string")
    t.eq(err:sub(1, #at + #want + 2), at .. ": " .. want)
  end
  lua_slip("abx.test has no 'equal'; did you mean t.eq?", here(), function() t.equal(1, 1) end)
  lua_slip("abx.test has no 'assertEqual'; did you mean t.eq?", here(), function() t.assertEqual(1, 1) end)
  lua_slip("abx.test has no 'truthy'; did you mean t.ok?", here(), function() t.truthy(true) end)
  lua_slip("abx.test has no 'throws'; did you mean t.raises?", here(), function() t.throws(print) end)
  lua_slip("abx.test has no 'it'; did you mean t.test?", here(), function() t.it("x", print) end)
  lua_slip("abx.test has no 'eventualy'; did you mean t.eventually?", here(), function() t.eventualy(print) end)
  lua_slip("abx.test has no 'frobnicate' (it has: ", here(), function() t.frobnicate() end)
end)

t.test("t.test and t.fixture options suggest the option meant", function()
  local ok, err = pcall(t.test, "x", { marker = { "e2e" } }, print)
  t.eq(ok, false)
  t.match(err, "unknown option \"marker\", did you mean 'markers'%?")
  ok, err = pcall(t.test, "x", { timout = 5 }, print)
  t.match(err, "unknown option \"timout\", did you mean 'timeout'%?")
  ok, err = pcall(t.fixture, "fx", { scop = "file" }, print)
  t.match(err, "unknown option \"scop\", did you mean 'scope'%?")
end)

t.test("an unknown fixture suggests the fixture meant", function(ctx)
  local ok, err = pcall(function() return ctx.base_sandbx end)
  t.eq(ok, false)
  t.match(err, "ctx has no fixture base_sandbx, did you mean ctx%.base_sandbox%?")
  ok, err = pcall(function() return ctx.sandbox end)
  t.match(err, "ctx has no fixture sandbox, did you mean ctx%.base_sandbox%?")
end)

t.test("an uncaught dot call fails at the scenario line", function(ctx)
  ctx.base_sandbox.files.read("/x")
end)

t.test("an uncaught t.equal fails at the scenario line", function()
  t.equal(1, 1)
end)
