-- HTML report case (tests/html/check_html.py): one test of each outcome the page filters on,
-- no sandbox needed. The failing assertion has a multi-line diff and captured output; one name
-- is hostile markup, which the page must show as text.
-- Expected: 2 passed, 2 failed, 1 skipped, 1 xfailed; exit 1.
-- args: --config tests/runner/ki/abxlua.yaml -j 2 --html FILE
local t = require("abx.test")

t.test("adds numbers", { markers = { "flaky" } }, function()
  t.eq(1 + 1, 2)
end)

t.test("<script>alert('name')</script> & \"quoted\" name passes", function() end)

t.test("config file matches", function()
  print("reading the config file")
  io.write("port is 9090 <b>not bold</b>\n")
  t.eq("name = web\nport = 8080\nmode = prod\n", "name = web\nport = 9090\nmode = prod\n",
    "config file")
end)

t.test("raises a plain error", function()
  error("boom </script><script>alert(2)</script>", 0)
end)

t.test("not on this platform", function()
  t.skip("needs a GPU")
end)

t.test("known issue still fails", { known_issue = "KI-900", raises = "Assertion" }, function()
  t.eq(1, 2)
end)
