-- HTML report case: the escape function and the rendering of abx.run.report.html on hostile and
-- on partial reports, with no browser (tests/html/check_html.py runs it; html:unit).
-- Expected: 8 tests, 7 passed and 1 skipped (the last one, unless ABX_HTML_RENDER=IN.json:OUT.html
-- is set: then it renders that JSON report to OUT.html, as merge-reports would).
local t = require("abx.test")
local core = require("abx.core")
local json = require("abx.json")
local html = require("abx.run.report.html")

local NASTY = "<script>alert(\"x\")</script> 'q' & \1\27[31m\127 tab\there\r\n\255\254 ok é 漢 </"

-- a full report with every field of the shared contract, hostile in every text
local function full_report()
  local body = { length = 40, text = NASTY, sha256 = json.null, truncated = false }
  return {
    format = "abxlua-report/1", run_id = "r<1>", provider = "local", endpoint = NASTY,
    duration = 3.5, total = 2, jobs = 2, interrupted = false,
    selection = { k = NASTY, paths = { "tests/<x>.lua" } },
    counts = { passed = 1, failed = 1, skipped = 0, xfailed = 0, xpassed = 0, errors = 0 },
    cleanup = { created = 2, tracked = 2, swept = 0, errors = { NASTY } },
    collection_errors = { { path = "<bad>.lua", error = NASTY } },
    sandboxes = {
      { id = "sbx<1>", template = NASTY, test = "f.lua::" .. NASTY, created = 0.5, killed = 2.5 },
      { id = "sbx2", template = "base", test = json.null, created = 0.1, killed = json.null },
    },
    tests = {
      { id = "f.lua::ok", file = "f.lua", name = "ok", outcome = "passed", duration = 0.2,
        markers = {}, sandboxes = {}, teardown_errors = {}, reruns = {}, started = 0, worker = 2 },
      { id = "f.lua::" .. NASTY, file = "<f>.lua", name = NASTY, line = 3, outcome = "failed",
        duration = 2.5, markers = { NASTY }, known_issue = NASTY, sandboxes = { "sbx<1>" },
        teardown_errors = { { phase = NASTY, message = NASTY } }, reruns = {},
        error = { kind = "NotFound", status = 404, message = NASTY .. "\n--- expected\n+++ actual\n-a\n+b",
          traceback = NASTY },
        output = NASTY, started = 0.3, worker = 1, reproducer = "curl -H 'X-API-Key: $E2B_API_KEY' " .. NASTY,
        trace = { { start = 0.4, duration = 0.01, method = "GET", url = "http://127.0.0.1:1/files?path=" .. NASTY,
          sandbox = "sbx<1>", attempt = 2, status = 404, error = "NotFound",
          request = { headers = { [NASTY] = NASTY }, body = body },
          response = { headers = { ["content-type"] = "text/plain" }, body = body } },
          { start = 1, duration = 5, method = "POST", url = "http://x/", sandbox = json.null, attempt = 1,
            status = json.null, error = "Timeout", request = { headers = {}, body = json.null },
            response = json.null } } },
    },
  }
end

t.test("escape writes markup, quotes and bad UTF-8 as text", function()
  t.eq(html.escape("<script>alert('x')</script>"), "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;")
  t.eq(html.escape("a \"b\" & c"), "a &quot;b&quot; &amp; c")
  t.eq(html.escape("bad \255\254 ok é"), "bad \239\191\189\239\191\189 ok é")
  t.eq(html.escape("ctl\1\27[31m\127 tab\tLF\nCR\r"), "ctl[31m tab\tLF\nCR\r")
  t.eq(html.escape(nil), "")
  t.eq(html.escape(json.null), "")
  t.eq(html.escape(42), "42")
  t.eq(html.escape(6.0), "6", "a decoded JSON integer")
  t.eq(html.escape(0.25), "0.25")
end)

t.test("a hostile report renders as text: one script element, no raw markup", function()
  local page = html.render(full_report())
  local _, scripts = page:gsub("<script", "")
  t.eq(scripts, 1, "the page's own inline script is the only <script")
  t.eq(page:find("alert(\"x\")", 1, true), nil, "no raw quote from the data")
  t.eq(page:find("\255", 1, true), nil, "no invalid UTF-8")
  t.eq(page:find("\27", 1, true), nil, "no control character")
  t.ok(utf8.len(page) ~= nil, "the page is valid UTF-8")
  t.ok(page:find("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;", 1, true), "the name shows as text")
end)

t.test("every field of the contract is shown", function()
  local page = html.render(full_report())
  for _, want in ipairs({ 'id="t2"', 'id="t2-x1"', 'id="t2-repro"', "$E2B_API_KEY",
    "/files?path=&lt;script&gt;", 'class="copy"', 'id="timeline"', "worker 1<", "worker 2<", "fixtures",
    'class="sbx alive"', 'id="templates"', "no answer", "Timeout", "attempt 2", 'id="cleanup"',
    'class="del"', 'class="ins"', "collection errors", "exit status 1" }) do
    t.ok(page:find(want, 1, true), "the page has " .. want)
  end
end)

t.test("numbers of a decoded JSON report show as integers", function()
  local text = json.encode(full_report(), { clean = require("abx.run.report.common").utf8_clean })
  local page = html.render(assert(json.decode(text)))
  t.ok(page:find(">worker 1<", 1, true), "the timeline's lane label")
  t.ok(page:find(">worker 2</span>", 1, true), "the test's worker tag")
  t.eq(page:find("worker 1.0", 1, true), nil)
end)

t.test("a report without the new fields renders with notes", function()
  local r = full_report()
  r.sandboxes = nil
  for _, x in ipairs(r.tests) do x.started, x.worker, x.trace, x.reproducer, x.output = nil, nil, nil, nil, nil end
  r.cleanup = json.null
  local page = html.render(r)
  t.ok(page:find("no timeline", 1, true), "no timeline note")
  t.ok(page:find("no sandbox list", 1, true), "no templates note")
  t.eq(page:find("-repro", 1, true), nil, "no reproducer")
end)

t.test("big texts are bounded: per field, then by the page's budget", function()
  local r = full_report()
  local base = r.tests[2]
  r.tests = {}
  for i = 1, 100 do
    local x = {}
    for k, v in pairs(base) do x[k] = v end
    x.id, x.output = "f.lua::t" .. i, string.rep("o", 200 * 1024)
    r.tests[i] = x
  end
  local page = html.render(r)
  t.ok(#page < 2 * 1024 * 1024, "100 tests of 200 KiB output each: " .. #page .. " bytes, under 2 MiB")
  t.ok(page:find("more bytes not shown", 1, true), "a cut text says so")
  t.ok(page:find("size budget is spent", 1, true), "late exchanges show no bodies")
end)

t.test("a table that is not a report is refused", function()
  local ok, err = pcall(html.render, { format = "other" })
  t.eq(ok, false)
  t.eq(err.kind, "InvalidArgument")
  t.match(err.message, "abxlua%-report/1")
end)

t.test("renders a JSON report given by ABX_HTML_RENDER", function()
  local spec = core.getenv("ABX_HTML_RENDER")
  if not spec then t.skip("ABX_HTML_RENDER=IN.json:OUT.html not set") end
  local src, dst = spec:match("^(.-):(.+)$")
  local f = assert(io.open(src, "rb"))
  local doc = assert(json.decode(f:read("a")))
  f:close()
  html.write(dst, doc)
end)
