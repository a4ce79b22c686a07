-- abx.run.report.tap: `--tap FILE`, TAP version 13 (https://testanything.org/tap-version-13-specification.html):
--   TAP version 13
--   1..N                                   N = tests run + collection errors
--   ok 1 - file::name
--   not ok 2 - file::name                  failed, xpassed, or a teardown error
--     ---                                  YAML diagnostics of a failure
--     kind: Assertion
--     message: '...'
--     ...
--   ok 3 - file::name # SKIP reason
--   not ok 4 - file::name # TODO KI-900: title     xfailed: a known issue still fails
--   not ok 5 - file (collection) ...       a collection error
-- An interrupted run ends with "Bail out! interrupted".
local common = require("abx.run.report.common")

local M = {}

-- A description may not hold '#' (it starts a directive) nor a newline.
local function desc(s)
  s = common.utf8_clean(common.mask(s)):gsub("[\r\n]", " "):gsub("[%z\1-\8\11\12\14-\31\127]", "")
  return (s:gsub("\\", "\\\\"):gsub("#", "\\#"))
end

-- A YAML single-quoted scalar on one line, or a literal block for multi-line text.
local function yaml_value(s, indent)
  s = common.utf8_clean(common.mask(s)):gsub("[%z\1-\8\11\12\14-\31\127]", "")
  if not s:find("[\r\n]") then return "'" .. s:gsub("'", "''") .. "'" end
  local lines = { "|-" }
  for line in (s:gsub("\r\n?", "\n") .. "\n"):gmatch("([^\n]*)\n") do
    lines[#lines + 1] = indent .. "  " .. line
  end
  return table.concat(lines, "\n")
end

local function diagnostics(out, fields)
  out[#out + 1] = "  ---"
  for _, kv in ipairs(fields) do
    if kv[2] ~= nil then out[#out + 1] = "  " .. kv[1] .. ": " .. yaml_value(tostring(kv[2]), "  ") end
  end
  out[#out + 1] = "  ..."
end

---Renders the TAP stream of a run record.
function M.render(record)
  local out, n = {}, 0
  local body = {}
  for _, ce in ipairs(record.collection_errors or {}) do
    n = n + 1
    body[#body + 1] = string.format("not ok %d - %s (collection error)", n, desc(ce.path))
    diagnostics(body, { { "kind", "collection" }, { "message", ce.error } })
  end
  for _, r in ipairs(record.results or {}) do
    n = n + 1
    local name = desc(r.test.id)
    local td = r.teardown_errors and #r.teardown_errors > 0
    local th, ms = common.threshold_lines(r)
    local function measured(fields)
      for i, l in ipairs(th) do fields[#fields + 1] = { "threshold_" .. i, l } end
      for i, l in ipairs(ms) do fields[#fields + 1] = { "measurement_" .. i, l } end
      return fields
    end
    if r.outcome == "passed" and not td then
      body[#body + 1] = string.format("ok %d - %s", n, name)
      if #th + #ms > 0 then diagnostics(body, measured({})) end -- TAP 13: YAML after any test line
    elseif r.outcome == "skipped" and not td then
      body[#body + 1] = string.format("ok %d - %s # SKIP %s", n, name, desc(r.reason or ""))
    elseif r.outcome == "xfailed" and not td then
      body[#body + 1] = string.format("not ok %d - %s # TODO %s", n, name, desc(r.reason or ""))
    else
      body[#body + 1] = string.format("not ok %d - %s", n, name)
      local fields = { { "outcome", r.outcome }, { "file", r.test.file }, { "line", r.test.line },
        { "duration", string.format("%.3f", r.duration or 0) } }
      local f = common.failure(r)
      if r.outcome == "failed" and f then
        fields[#fields + 1] = { "kind", f.kind }
        fields[#fields + 1] = { "status", f.status }
        fields[#fields + 1] = { "message", f.message }
        fields[#fields + 1] = { "traceback", f.traceback }
      elseif r.outcome == "xpassed" then
        fields[#fields + 1] = { "kind", "XPASS" }
        fields[#fields + 1] = { "message", r.reason }
      end
      for i, e in ipairs(r.teardown_errors or {}) do
        fields[#fields + 1] = { "teardown_error_" .. i, "(" .. tostring(e.phase) .. ") " .. e.message }
      end
      diagnostics(body, measured(fields))
    end
  end
  out[1] = "TAP version 13"
  out[2] = "1.." .. n
  for _, line in ipairs(body) do out[#out + 1] = line end
  if record.interrupted then out[#out + 1] = "Bail out! the run was interrupted" end
  if record.skip_reason then out[#out + 1] = "# " .. desc(record.skip_reason) end
  out[#out + 1] = string.format("# run %s, provider %s", desc(record.run_id or "?"),
    desc(record.provider or "?"))
  return table.concat(out, "\n") .. "\n"
end

---Writes the TAP report of `record` to `path`.
---Raises: InvalidArgument when the file cannot be written.
function M.write(path, record)
  common.write_file("TAP report", path, M.render(record))
end

return M
