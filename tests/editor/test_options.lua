-- Editor case: t.test's options are declared (options.define "t.test", so docs/API.md and
-- types/abx list them as abx.opts.t_test) and checked against the declaration: an unknown option
-- names the known ones, a value of the wrong type names the type (markers and requires are
-- arrays of strings, sandboxes an integer). t.test checks its options before it asks for the
-- collector, so a call inside a running test shows the check's message.
-- Expected (-j 1): every test passes; exit code 0.
-- expect-no-line: ^(FAILED|ERROR)
local t = require("abx.test")
local options = require("abx.client.options")

local function declare(opts)
  local ok, err = pcall(t.test, "x", opts, function() end)
  t.eq(ok, false)
  return tostring(err)
end

t.test("t.test's options are declared for the reference and the editor types", function()
  local spec = options.spec("t.test")
  t.ok(spec, "t.test is a declared call")
  t.eq(table.concat(spec.names, ", "), "known_issue, markers, raises, requires, sandboxes, skip, thresholds, timeout")
end)

t.test("an unknown option names the known ones", function()
  t.match(declare({ timout = 5 }), 't%.test%("x"%): unknown option "timout", did you mean '
    .. "'timeout'%? %(known: known_issue, markers, raises, requires, sandboxes, skip, thresholds, timeout%)")
end)

t.test("markers and requires must be arrays of strings, sandboxes an integer", function()
  t.match(declare({ markers = "e2e_slow" }), 'option "markers" must be an array of strings')
  t.match(declare({ markers = { 1 } }), 'option "markers" must be an array of strings')
  t.match(declare({ requires = { pause = true } }), 'option "requires" must be an array of strings')
  t.match(declare({ sandboxes = 1.5 }), 'option "sandboxes" must be an integer')
  t.match(declare({ timeout = "60" }), 'option "timeout" must be a number')
end)

t.test("valid options pass the check", function()
  t.match(declare({ markers = { "e2e" }, timeout = 5, sandboxes = 2, requires = { "pause" } }),
    "t%.test must be called while abxlua collects a scenario file")
end)
