-- Runner case: abx.run.report.annotations, failures as GitHub Actions ::error commands: the
-- escapes of GitHub's actions/toolkit (command.ts: escapeData % \r \n; escapeProperty also : ,),
-- the line a failure's message names, and what gets no command.
-- Expected: 3 passed, exit 0.
-- expect-no-line: ^(FAILED|ERROR)
local t = require("abx.test")
local json = require("abx.json")
local ann = require("abx.run.report.annotations")

t.test("escapes: % \\r \\n in data; also : and , in properties", function()
  t.eq(ann.escape_data("100% a:b,c\r\nd"), "100%25 a:b,c%0D%0Ad")
  t.eq(ann.escape_property("f.lua::x, y%\n"), "f.lua%3A%3Ax%2C y%25%0A")
end)

local function entry(over)
  local e = { id = "s/a.lua::t, 1", file = "s/a.lua", name = "t, 1", line = 3, outcome = "failed",
    reason = json.null, teardown_errors = {},
    error = { kind = "Assertion", status = json.null, message = "s/a.lua:7: expected 1\nmore",
      traceback = json.null } }
  for k, v in pairs(over or {}) do e[k] = v end
  return e
end

t.test("a failure: the file, the line its message names, the node id; the first line only", function()
  local lines = ann.lines({ collection_errors = {}, tests = { entry() } })
  t.eq(#lines, 1)
  t.eq(lines[1], "::error file=s/a.lua,line=7,title=s/a.lua%3A%3At%2C 1::s/a.lua:7: expected 1")
  -- a message naming another file: the declaration line
  lines = ann.lines({ tests = { entry({ error = { kind = "LuaError", message = "lib/x.lua:9: boom" } }) } })
  t.eq(lines[1], "::error file=s/a.lua,line=3,title=s/a.lua%3A%3At%2C 1::lib/x.lua:9: boom")
end)

t.test("passed, skipped and xfailed tests get none; XPASS, teardown and collection errors do", function()
  local doc = { collection_errors = { { path = "s/b.lua", error = "s/b.lua:5: syntax" } }, tests = {
    entry({ outcome = "passed", error = json.null }), entry({ outcome = "skipped", error = json.null }),
    entry({ outcome = "xfailed" }),
    entry({ outcome = "xpassed", error = json.null, reason = "[XPASS(strict)] KI-1: x" }),
    entry({ outcome = "passed", error = json.null,
      teardown_errors = { { phase = "finally", message = "s/a.lua:9: exploded" } } }) } }
  local lines = ann.lines(doc)
  t.eq(#lines, 3)
  t.eq(lines[1], "::error file=s/b.lua,line=5,title=s/b.lua (collection)::s/b.lua:5: syntax")
  t.eq(lines[2], "::error file=s/a.lua,line=3,title=s/a.lua%3A%3At%2C 1::[XPASS(strict)] KI-1: x")
  t.eq(lines[3], "::error file=s/a.lua,line=9,title=s/a.lua%3A%3At%2C 1 (teardown)::teardown (finally): "
    .. "s/a.lua:9: exploded")
end)
