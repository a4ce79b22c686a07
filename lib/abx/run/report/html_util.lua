-- abx.run.report.html_util: the text helpers the HTML report's parts share (abx.run.report.html,
-- html_trace, html_timeline): the one escape function every text of the page goes through, the
-- reading of decoded JSON fields (null = absent), the bound on long texts, durations in words.
local core = require("abx.core")
local common = require("abx.run.report.common")
local NULL = require("cjson").null

local M = {}

---Bytes of one text field shown on the page while the page's budget lasts; the rest is counted.
M.TEXT_MAX = 32 * 1024
---Bytes of text (messages, tracebacks, output, bodies) a page shows at TEXT_MAX per field; once
---spent, a field shows SPENT_MAX bytes and an exchange no headers or bodies (the JSON report keeps
---everything). Captured output alone may be 1 MiB per stream and test (abx.run.capture.LIMIT).
M.PAGE_BUDGET = 1024 * 1024
M.SPENT_MAX = 1024

-- Bytes of the budget left on the page being rendered (M.begin_page). Rendering never yields,
-- so one page is rendered at a time.
local left = M.PAGE_BUDGET

---Starts a page: the whole budget is left.
function M.begin_page() left = M.PAGE_BUDGET end

---Whether the page's text budget is spent.
function M.spent() return left <= 0 end

local ENTITIES = { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&#39;" }

---A value as HTML text, safe in element content and in a quoted attribute: masked
---(abx.core.mask), invalid UTF-8 replaced by U+FFFD (common.utf8_clean), control characters
---other than tab, LF and CR dropped, and & < > " ' written as entities. nil and cjson.null
---give "". Raises: nothing.
---@param v any
---@return string
function M.escape(v)
  if v == nil or v == NULL then return "" end
  if math.type(v) == "float" and v == math.floor(v) and math.abs(v) < 2 ^ 53 then
    v = string.format("%d", v) -- a decoded JSON integer (cjson gives floats): 6, not 6.0
  end
  local s = common.utf8_clean(core.mask(tostring(v)))
  s = s:gsub("[%z\1-\8\11\12\14-\31\127]", "")
  return (s:gsub("[&<>\"']", ENTITIES))
end

---A field of a decoded report: nil for nil and for JSON null (cjson.null).
function M.get(v)
  if v == nil or v == NULL then return nil end
  return v
end

---`s` cut to TEXT_MAX bytes (SPENT_MAX once the page's budget is spent), the rest counted
---("... N more bytes not shown"); what is shown is taken from the budget.
---@param s any
---@return string
function M.bound(s)
  s = tostring(s)
  local cap = left > 0 and M.TEXT_MAX or M.SPENT_MAX
  left = left - math.min(#s, cap)
  if #s <= cap then return s end
  return s:sub(1, cap) .. string.format("\n... %d more bytes not shown (the JSON report has them)",
    #s - cap)
end

---Seconds in words: "850 ms" below one second, else "2.35 s".
function M.seconds(v)
  v = tonumber(M.get(v)) or 0
  if v < 1 then return string.format("%d ms", math.floor(v * 1000 + 0.5)) end
  return string.format("%.2f s", v)
end

---A <pre> of a bounded, escaped text, with class `cls` (optional).
function M.pre(s, cls)
  return "<pre" .. (cls and (' class="' .. cls .. '"') or "") .. ">" .. M.escape(M.bound(s)) .. "</pre>"
end

return M
