-- abx.run.mutate_report: the result of `abxlua mutate` (abx.run.cmd.mutate) as a console table, a
-- JSON document (format "abxlua-mutate/1") and one self-contained HTML page.
--
-- A result: { provider, flavor, paths, started_at, seconds, clean = { seconds, exit_code, counts,
-- failing }, mutants = { row... }, score = M.score(mutants) }; a row: { name, arg, source, wire,
-- layer, status = "killed"|"survived"|"error"|"n/a", tests = {first failing test ids}, caught,
-- seconds, reason (n/a), error (error) }.
local core = require("abx.core")
local json = require("abx.json")
local util = require("abx.run.report.html_util")

local M = {}

M.FORMAT = "abxlua-mutate/1"

---The mutation score of rows: killed / applicable (rows that ran: every status but n/a).
---@param rows table[]
---@return {killed: integer, survived: integer, errors: integer, applicable: integer,
---  not_applicable: integer, ratio: number}
function M.score(rows)
  local s = { killed = 0, survived = 0, errors = 0, applicable = 0, not_applicable = 0 }
  for _, r in ipairs(rows) do
    if r.status == "n/a" then
      s.not_applicable = s.not_applicable + 1
    else
      s.applicable = s.applicable + 1
      if r.status == "killed" then s.killed = s.killed + 1
      elseif r.status == "survived" then s.survived = s.survived + 1
      else s.errors = s.errors + 1 end
    end
  end
  s.ratio = s.applicable > 0 and s.killed / s.applicable or 0
  return s
end

local function pad(s, n) return s .. string.rep(" ", math.max(0, n - #s)) end

local function minutes(sec)
  sec = sec or 0
  if sec < 60 then return string.format("%.1f s", sec) end
  return string.format("%dm%02ds", math.floor(sec / 60), math.floor(sec % 60))
end

-- What the row's third column says.
local function detail(r)
  if r.status == "killed" then return table.concat(r.tests, ", ") end
  if r.status == "survived" then
    return "no test failed: the suite misses this lie (" .. r.wire .. "; docs/mutants.md, " .. r.name .. ")"
  end
  if r.status == "n/a" then return r.reason end
  return r.error or "the run broke"
end

---The console table and the score line.
---@param result table
---@return string[]
function M.table_lines(result)
  local w = 8
  for _, r in ipairs(result.mutants) do w = math.max(w, #r.arg) end
  local lines = { pad("mutant", w) .. "  result    time      caught by" }
  for _, r in ipairs(result.mutants) do
    local status = r.status == "survived" and "SURVIVED" or r.status
    lines[#lines + 1] = string.format("%s  %s  %s  %s", pad(r.arg, w), pad(status, 8),
      pad(r.seconds and string.format("%.1f s", r.seconds) or "-", 8), detail(r))
  end
  local s = result.score
  lines[#lines + 1] = string.format("mutation score: %d of %d applicable mutants killed (%.0f%%)%s%s; "
    .. "%d not applicable; clean run %s, total %s", s.killed, s.applicable, 100 * s.ratio,
    s.survived > 0 and string.format(", %d survived", s.survived) or "",
    s.errors > 0 and string.format(", %d broke", s.errors) or "", s.not_applicable,
    minutes(result.clean and result.clean.seconds), minutes(result.seconds))
  return lines
end

---The JSON document of a result.
---@param result table
---@return string
function M.document(result)
  local doc = { format = M.FORMAT, provider = result.provider, flavor = result.flavor,
    paths = json.array(result.paths), started_at = result.started_at, seconds = result.seconds,
    clean = result.clean, score = result.score, mutants = result.mutants }
  return json.encode(doc)
end

---One self-contained HTML page of a result (no script, no network).
---@param result table
---@return string
function M.page(result)
  local e = util.escape
  local s = result.score or M.score(result.mutants)
  local out = { "<!doctype html><html><head><meta charset=\"utf-8\"><title>abxlua mutate</title>",
    "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}",
    "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}",
    ".killed{color:#1a7f37}.survived{color:#cf222e;font-weight:bold}.error{color:#9a6700}",
    ".na{color:#777}</style></head><body>",
    string.format("<h1>Mutation score: %d of %d killed (%.0f%%)</h1>", s.killed, s.applicable,
      100 * s.ratio),
    string.format("<p>provider %s, flavour %s, paths %s; clean run %s; total %s</p>",
      e(result.provider or ""), e(result.flavor or ""), e(table.concat(result.paths or {}, " ")),
      e(minutes(result.clean and result.clean.seconds)), e(minutes(result.seconds))),
    "<table><tr><th>mutant</th><th>result</th><th>time</th><th>caught by / why</th>"
      .. "<th>what it changes on the wire</th><th>source</th></tr>" }
  for _, r in ipairs(result.mutants) do
    local cls = r.status == "n/a" and "na" or r.status
    out[#out + 1] = string.format("<tr><td>%s</td><td class=\"%s\">%s</td><td>%s</td><td>%s</td>"
      .. "<td>%s</td><td>%s</td></tr>", e(r.arg), cls, e(r.status),
      r.seconds and string.format("%.1f s", r.seconds) or "-", e(detail(r)), e(r.wire), e(r.source))
  end
  out[#out + 1] = "</table></body></html>\n"
  return table.concat(out, "\n")
end

---Writes --json and --html of `o` when asked. Returns false (after naming it on stderr) when a
---file cannot be written.
---@param o table the options (json, html: paths or nil)
---@param result table
---@return boolean
function M.write(o, result)
  result.score = result.score or M.score(result.mutants)
  for _, w in ipairs({ { "json", function() return M.document(result) .. "\n" end },
    { "html", function() return M.page(result) end } }) do
    local path = o[w[1]]
    if path then
      local f, ferr = io.open(path, "wb")
      if not f then
        core.ewrite("abxlua: error: --" .. w[1] .. " " .. path .. ": " .. tostring(ferr) .. "\n")
        return false
      end
      f:write(w[2]())
      f:close()
      core.ewrite("mutate: " .. w[1] .. " written to " .. path .. "\n")
    end
  end
  return true
end

return M
