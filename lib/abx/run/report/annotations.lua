-- abx.run.report.annotations: failures as GitHub Actions workflow commands, printed by `abxlua run`
-- when GITHUB_ACTIONS is "true" (GitHub sets it on its runners), so that each failure shows on
-- the file and line in the pull request and the run's summary:
--   ::error file=<path>,line=<n>,title=<node id>::<first line of the message>
-- one per failed or XPASS(strict) test, per teardown error and per file that failed to collect.
-- The line is the scenario line the message names first ("<file>:<n>: ..." of the test's own
-- file), else the test's declaration line.
-- Escaping (GitHub's actions/toolkit, packages/core/src/command.ts: escapeData, escapeProperty):
-- in the message % \r \n become %25 %0D %0A; in a property value also : and , become %3A %2C.
-- Input: the JSON report's table (abx.run.report.json.document), whose strings are masked; the
-- lines are masked once more on the way out (core.write).
local json = require("abx.json")

local M = {}

local NULL = json.null
local function val(v) if v == NULL then return nil end return v end

---Escapes a command's message: % \r \n.
---@param s string
---@return string
function M.escape_data(s)
  return (tostring(s):gsub("%%", "%%25"):gsub("\r", "%%0D"):gsub("\n", "%%0A"))
end

---Escapes a command's property value: as M.escape_data, and : and ,.
---@param s string
---@return string
function M.escape_property(s)
  return (M.escape_data(s):gsub(":", "%%3A"):gsub(",", "%%2C"))
end

local function first_line(s) return (tostring(s or ""):match("^[^\r\n]*")) end

local function command(file, line, title, message)
  local props = { "file=" .. M.escape_property(file) }
  if line then props[#props + 1] = "line=" .. M.escape_property(tostring(line)) end
  props[#props + 1] = "title=" .. M.escape_property(title)
  return "::error " .. table.concat(props, ",") .. "::" .. M.escape_data(first_line(message))
end

-- The scenario line of `t`'s own file that `message` names first, else the declaration line.
local function line_of(t, message)
  local file = tostring(t.file)
  local at = 1
  while true do
    local s, e = tostring(message or ""):find(file, at, true)
    if not s then break end
    local n = message:match("^:(%d+):", e + 1)
    if n then return tonumber(n) end
    at = e + 1
  end
  return val(t.line)
end

---The workflow command lines of a report's failures, in report order.
---@param doc table the JSON report (abx.run.report.json.document)
---@return string[]
function M.lines(doc)
  local out = {}
  for _, ce in ipairs(val(doc.collection_errors) or {}) do
    local n = tostring(ce.error):match("^" .. ce.path:gsub("%p", "%%%0") .. ":(%d+):")
    out[#out + 1] = command(ce.path, n, ce.path .. " (collection)", ce.error)
  end
  for _, t in ipairs(doc.tests or {}) do
    local err = val(t.error)
    if t.outcome == "failed" then
      local msg = type(err) == "table" and err.message or "failed"
      out[#out + 1] = command(t.file, line_of(t, msg), t.id, msg)
    elseif t.outcome == "xpassed" then
      out[#out + 1] = command(t.file, val(t.line), t.id, val(t.reason) or "XPASS(strict)")
    end
    for _, e in ipairs(val(t.teardown_errors) or {}) do
      out[#out + 1] = command(t.file, line_of(t, e.message), t.id .. " (teardown)",
        "teardown (" .. tostring(e.phase) .. "): " .. tostring(e.message))
    end
  end
  return out
end

---Whether annotations are printed: GITHUB_ACTIONS is "true".
---@param getenv fun(name: string): string|nil
---@return boolean
function M.enabled(getenv)
  return getenv("GITHUB_ACTIONS") == "true"
end

return M
