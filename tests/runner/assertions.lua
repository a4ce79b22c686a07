-- Runner case: the assertion library, each assertion shown to pass and to fail.
-- Expected: every test passes; exit code 0.
-- expect-line: ^PASSED +tests/runner/assertions\.lua::t\.eq compares deeply
-- expect-line: ^PASSED +tests/runner/assertions\.lua::t\.raises checks the kind
-- expect-no-line: ^(FAILED|ERROR)
local t = require("abx.test")

t.test("t.eq compares deeply", function()
  t.eq({ 1, { x = "y" } }, { 1, { x = "y" } })
  t.raises("Assertion", function() t.eq({ 1, 2 }, { 1, 3 }) end)
  t.raises("Assertion", function() t.eq({ 1 }, { 1, 2 }) end)
  t.raises("Assertion", function() t.eq("1", 1) end)
  local err = t.raises("Assertion", function() t.eq("got", "want", "greeting") end)
  t.match(err.message, 'greeting: expected "want", got "got"')
end)

t.test("t.neq, t.ok and t.fail", function()
  t.neq(1, 2)
  t.raises("Assertion", function() t.neq({ 1 }, { 1 }) end)
  t.eq(t.ok("value"), "value")
  t.raises("Assertion", function() t.ok(false) end)
  t.raises("Assertion", function() t.ok(nil, "must be set") end)
  local err = t.raises("Assertion", function() t.fail("custom message") end)
  t.match(err.message, "custom message")
end)

t.test("t.match returns captures", function()
  local a, b = t.match("id=abc-42", "id=(%a+)%-(%d+)")
  t.eq(a, "abc")
  t.eq(b, "42")
  t.raises("Assertion", function() t.match("abc", "^%d+$") end)
  t.raises("Assertion", function() t.match(nil, ".") end)
end)

t.test("t.raises checks the kind", function()
  local core = require("abx.core")
  local err = t.raises("NotFound", function() core.error("NotFound", 404, "no such file") end)
  t.eq(err.kind, "NotFound")
  t.eq(err.status, 404)
  -- nothing raised, a different kind, a plain Lua error: all are assertion failures
  t.raises("Assertion", function() t.raises("NotFound", function() end) end)
  t.raises("Assertion", function()
    t.raises("NotFound", function() core.error("Conflict", 409, "busy") end)
  end)
  t.raises("Assertion", function() t.raises("NotFound", function() error("plain") end) end)
end)
