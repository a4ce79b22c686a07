-- abx.run.report.html_trace: a test's trace and reproducer in the HTML report
-- (abx.run.report.html). Input shapes are the JSON report's (tests/reports/report.schema.json):
--   trace = [{start, duration (s), method, url, sandbox, attempt, request {headers, body},
--             status (integer|null), response {headers, body}|null, error (kind)|null}]
--   BODY  = {length (bytes), text (excerpt, valid UTF-8)|null, sha256|null, truncated}|null
--   reproducer = a curl command line (secrets as $VARIABLE references), or null.
-- Each exchange is a <details> that opens on a click; texts go through html_util.escape.
local util = require("abx.run.report.html_util")

local M = {}

local esc, get = util.escape, util.get

---Exchanges a trace shows (its last ones) once the page's size budget is spent (html_util).
M.SPENT_EXCHANGES = 5

local function headers_table(h)
  h = get(h)
  if not h or next(h) == nil then return '<p class="meta">no headers</p>' end
  local names = {}
  for k in pairs(h) do names[#names + 1] = k end
  table.sort(names)
  local rows = { '<table class="headers">' }
  for _, k in ipairs(names) do
    rows[#rows + 1] = "<tr><th>" .. esc(k) .. "</th><td>" .. esc(h[k]) .. "</td></tr>"
  end
  rows[#rows + 1] = "</table>"
  return table.concat(rows)
end

local function body_html(b)
  b = get(b)
  if not b then return '<p class="meta">no body</p>' end
  local note = { esc(b.length or 0) .. " bytes" }
  if b.truncated == true then note[#note + 1] = "truncated" end
  if get(b.sha256) then note[#note + 1] = "sha256 " .. esc(b.sha256) end
  local h = '<p class="meta">' .. table.concat(note, ", ") .. "</p>"
  if get(b.text) then return h .. util.pre(b.text, "body") end
  return h .. '<p class="meta">binary: not shown</p>'
end

local function status_class(x)
  local s = get(x.status)
  if get(x.error) or not s then return "serr" end
  return "s" .. tostring(s):sub(1, 1)
end

local function exchange(x, n, i)
  local status = get(x.status) and esc(x.status) or "no answer"
  local head = string.format('<details class="exchange" id="t%d-x%d"><summary>'
    .. '<span class="%s">%s</span> %s %s <span class="meta">%s at +%s%s%s</span>%s</summary>',
    n, i, status_class(x), status, esc(x.method), esc(x.url), util.seconds(x.duration),
    string.format("%.3f s", tonumber(get(x.start)) or 0),
    get(x.sandbox) and (", sandbox " .. esc(x.sandbox)) or "",
    (tonumber(get(x.attempt)) or 1) > 1 and (", attempt " .. esc(x.attempt)) or "",
    get(x.error) and (' <b class="serr">' .. esc(x.error) .. "</b>") or "")
  if util.spent() then
    return head .. '<p class="meta">headers and bodies not shown: the page\'s size budget is '
      .. "spent (the JSON report has them)</p></details>"
  end
  local req = get(x.request) or {}
  local resp = get(x.response)
  local h = { head, "<h4>request headers</h4>", headers_table(req.headers),
    "<h4>request body</h4>", body_html(req.body) }
  if resp then
    h[#h + 1] = "<h4>response headers</h4>" .. headers_table(resp.headers)
    h[#h + 1] = "<h4>response body</h4>" .. body_html(resp.body)
  else
    h[#h + 1] = '<p class="meta">no response</p>'
  end
  h[#h + 1] = "</details>"
  return table.concat(h)
end

---The "trace" section of test number `n` (anchors t<n>-x<i>), or nil when it has no trace.
---At most `max` exchanges are shown, the last ones (the failing call is near the end); at most
---SPENT_EXCHANGES once the page's size budget is spent.
---@param trace table|nil
---@param n integer
---@param max integer
---@return string|nil
function M.section(trace, n, max)
  if not trace or #trace == 0 then return nil end
  local h = { string.format('<h4>trace (%d exchange%s)</h4><div class="trace">', #trace,
    #trace == 1 and "" or "s") }
  if util.spent() then max = math.min(max, M.SPENT_EXCHANGES) end
  local first = math.max(1, #trace - max + 1)
  if first > 1 then
    h[#h + 1] = string.format('<p class="meta">%d earlier exchanges not shown</p>', first - 1)
  end
  for i = first, #trace do h[#h + 1] = exchange(trace[i], n, i) end
  h[#h + 1] = "</div>"
  return table.concat(h)
end

---The reproducer of test number `n` with a copy button (the text is in #t<n>-repro).
---@param text string
---@param n integer
---@return string
function M.reproducer(text, n)
  local id = "t" .. n .. "-repro"
  return string.format('<h4>reproducer</h4><div class="repro"><button type="button" class="copy" '
    .. 'data-target="%s">copy</button><pre id="%s">%s</pre></div>', id, id, esc(util.bound(text)))
end

return M
