-- abx.bench.html: `abxlua bench --html FILE`, one self-contained page (no script, no external
-- file) of a bench result: the time-to-interactive table, a chart per mode (an inline SVG: every
-- successful sample a dot at its place in the mode's order and its time, p50 and p95 as lines,
-- every failed sample a cross on the top edge), the operations as bars (p50, with p95 as a
-- whisker) and the thresholds with their values. Every text goes through
-- abx.run.report.html_util.escape (the HTML report's one escape function).
local util = require("abx.run.report.html_util")
local stats = require("abx.bench.stats")
local threshold = require("abx.bench.threshold")

local M = {}

local esc = util.escape
local W, H, PAD = 640, 200, 40 -- a mode's chart, px

local STYLE = [[
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin:8px 0 16px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}svg{background:#fafafa;border:1px solid #ddd;margin:4px 0 16px}
.ok{color:#1a7f37}.crossed{color:#cf222e;font-weight:bold}.dot{fill:#0969da}.fail{stroke:#cf222e;stroke-width:2}
.p50{stroke:#1a7f37;stroke-dasharray:4 3}.p95{stroke:#bf8700;stroke-dasharray:4 3}.axis{stroke:#888}
.bar{fill:#0969da}.whisker{stroke:#bf8700;stroke-width:2}text{font-size:11px;fill:#444}
]]

local function ms(v)
  if v == nil then return "-" end
  if v >= 1000 then return string.format("%.2f s", v / 1000) end
  return string.format("%.1f ms", v)
end

-- One mode's chart: samples in their order, y linear from 0 to the slowest sample.
local function mode_chart(out, mode, s)
  local top = 0
  for _, x in ipairs(s.samples) do if x.ok and x.ms > top then top = x.ms end end
  top = top > 0 and top * 1.1 or 1
  local n = math.max(#s.samples, 1)
  local function px(i) return PAD + (W - 2 * PAD) * (n == 1 and 0.5 or (i - 1) / (n - 1)) end
  local function py(v) return H - PAD + 10 - (H - PAD) * v / top end
  out[#out + 1] = string.format('<h3>%s</h3><svg class="mode" width="%d" height="%d" viewBox="0 0 %d %d">',
    esc(mode), W, H, W, H)
  out[#out + 1] = string.format('<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>', PAD, H - PAD + 10,
    W - PAD, H - PAD + 10)
  for _, q in ipairs({ { "p50", s.p50 }, { "p95", s.p95 } }) do
    if q[2] then
      out[#out + 1] = string.format('<line class="%s" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>'
        .. '<text x="%d" y="%.1f">%s %s</text>', q[1], PAD, py(q[2]), W - PAD, py(q[2]), W - PAD + 2,
        py(q[2]) + 4, q[1], esc(ms(q[2])))
    end
  end
  for i, x in ipairs(s.samples) do
    if x.ok then
      out[#out + 1] = string.format('<circle class="dot" cx="%.1f" cy="%.1f" r="3"><title>sample %d: '
        .. '%s</title></circle>', px(i), py(x.ms), i, esc(ms(x.ms)))
    else
      local cx = px(i)
      out[#out + 1] = string.format('<path class="fail" d="M%.1f 6l6 6m0 -6l-6 6"><title>sample %d '
        .. 'failed: %s</title></path>', cx - 3, i, esc(x.error))
    end
  end
  out[#out + 1] = string.format('<text x="%d" y="%d">0</text><text x="%d" y="%d">%s</text></svg>',
    PAD - 12, H - PAD + 14, 2, 14, esc(ms(top)))
end

local function tti_table(out, r)
  out[#out + 1] = "<table><tr><th>mode</th><th>min</th><th>p50</th><th>p95</th><th>p99</th><th>max</th>"
    .. "<th>success</th><th>score</th><th>wall</th></tr>"
  for _, mode in ipairs(r.modes) do
    local s = r.tti[mode]
    out[#out + 1] = string.format("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
      .. "<td>%.0f%%</td><td>%.1f</td><td>%s</td></tr>", esc(mode), esc(ms(s.min)), esc(ms(s.p50)),
      esc(ms(s.p95)), esc(ms(s.p99)), esc(ms(s.max)), s.success * 100, s.score or stats.score(s),
      esc(ms(s.wall)))
  end
  out[#out + 1] = "</table>"
end

-- The operations as horizontal bars (p50), each with its p95 as a whisker.
local function ops_chart(out, r)
  local names, top = {}, 0
  for _, n in ipairs(r.op_names) do
    local s = r.ops[n]
    if s and not s.skipped and s.p50 then
      names[#names + 1] = n
      top = math.max(top, s.p95 or s.p50)
    end
  end
  out[#out + 1] = string.format("<h2>operations (%d samples each)</h2>", r.iterations or 0)
  if #names == 0 then
    out[#out + 1] = "<p>no operation succeeded</p>"
    return
  end
  local rowh, left = 22, 90
  local h = #names * rowh + 10
  out[#out + 1] = string.format('<svg class="ops" width="%d" height="%d" viewBox="0 0 %d %d">', W, h, W, h)
  for i, n in ipairs(names) do
    local s, y = r.ops[n], (i - 1) * rowh + 6
    local function x(v) return left + (W - left - 110) * v / top end
    out[#out + 1] = string.format('<text x="4" y="%d">%s</text><rect class="bar" x="%d" y="%d" width="%.1f" '
      .. 'height="%d"><title>%s p50 %s</title></rect><line class="whisker" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>'
      .. '<text x="%.1f" y="%d">%s / %s</text>', y + 12, esc(n), left, y, x(s.p50) - left, rowh - 8,
      esc(n), esc(ms(s.p50)), x(s.p95 or s.p50), y, x(s.p95 or s.p50), y + rowh - 8,
      x(s.p95 or s.p50) + 6, y + 12, esc(ms(s.p50)), esc(ms(s.p95)))
  end
  out[#out + 1] = "</svg>"
  for _, n in ipairs(r.op_names) do
    local s = r.ops[n]
    if s and s.skipped then
      out[#out + 1] = string.format("<p>%s: skipped: %s</p>", esc(n), esc(s.skipped))
    end
  end
end

---The page of a bench result (abx.run.cmd.bench's, or abx.bench.merge's).
---@param r table
---@return string html
function M.page(r)
  util.begin_page()
  local out = { "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>abxlua bench: ",
    esc(r.provider), " ", esc(r.template), "</title><style>", STYLE, "</style></head><body>",
    string.format("<h1>abxlua bench: provider %s%s, template %s</h1>", esc(r.provider),
      r.flavor and (" (flavour " .. esc(r.flavor) .. ")") or "", esc(r.template)),
    string.format("<p>%s; time to interactive = create until <code>%s</code> succeeded; %d samples "
      .. "a mode; success over every mode %.0f%%.</p>", esc(r.started_at), esc(r.command), r.n,
      (r.success or 0) * 100),
    "<h2>time to interactive</h2>" }
  tti_table(out, r)
  for _, mode in ipairs(r.modes) do mode_chart(out, mode, r.tti[mode]) end
  if r.ops then ops_chart(out, r) end
  if r.thresholds and #r.thresholds > 0 then
    out[#out + 1] = "<h2>thresholds</h2><ul>"
    for _, e in ipairs(r.thresholds) do
      out[#out + 1] = string.format('<li class="%s">%s</li>', e.ok and "ok" or "crossed", esc(threshold.line(e)))
    end
    out[#out + 1] = "</ul>"
  end
  out[#out + 1] = "</body></html>\n"
  return table.concat(out)
end

return M
