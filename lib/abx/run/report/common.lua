-- abx.run.report.common: what the report writers (abx.run.report.junit, json, tap, evidence) share:
-- masking, file writing, timestamps, the host name, and the flattening of a run record
-- (abx.run.runner) into plain per-test rows.
-- Every string a report takes from the record goes through core.mask before it is formatted.
local core = require("abx.core")

local M = {}

---Masks a value for a report: nil stays nil, anything else becomes a masked string.
---@param v any
---@return string|nil
function M.mask(v)
  if v == nil then return nil end
  return core.mask(tostring(v))
end

---Writes `text` to `path` whole (masked once more as a last guard).
---Raises: InvalidArgument naming the report, the path and the OS error when it cannot be written.
---@param what string "JUnit report", ...
---@param path string
---@param text string
function M.write_file(what, path, text)
  local f, err = io.open(path, "wb")
  if not f then core.error("InvalidArgument", 0, "cannot write the " .. what .. ": " .. err) end
  local ok, werr = f:write(core.mask(text))
  local cok, cerr = f:close()
  if not ok or not cok then
    core.error("InvalidArgument", 0, "cannot write the " .. what .. " " .. path .. ": "
      .. tostring(werr or cerr))
  end
end

---Creates directory `dir` (and its parents) when missing.
---Raises: InvalidArgument when it cannot be created.
function M.mkdir_p(dir)
  if core.isdir(dir) then return end
  local quoted = "'" .. dir:gsub("'", "'\\''") .. "'"
  local ok = os.execute("mkdir -p -- " .. quoted .. " 2>/dev/null")
  if not ok or not core.isdir(dir) then
    core.error("InvalidArgument", 0, "cannot create the directory " .. dir)
  end
end

---ISO-8601 UTC time of a Unix timestamp: 2026-10-12T08:30:00Z.
function M.iso_utc(t) return os.date("!%Y-%m-%dT%H:%M:%SZ", math.floor(t or 0)) end

---The host name (HOSTNAME, /proc, /etc/hostname; "localhost" when none is found).
function M.hostname()
  local h = core.getenv("HOSTNAME")
  if h and h ~= "" then return h end
  for _, path in ipairs({ "/proc/sys/kernel/hostname", "/etc/hostname" }) do
    local f = io.open(path, "r")
    if f then
      local line = f:read("l")
      f:close()
      if line and line:match("%S") then return (line:gsub("%s+$", "")) end
    end
  end
  return "localhost"
end

---`s` with every byte that does not start a valid UTF-8 sequence replaced by U+FFFD.
function M.utf8_clean(s)
  if utf8.len(s) then return s end
  local out, i = {}, 1
  while i <= #s do
    local ok, cp = pcall(utf8.codepoint, s, i) -- strict: no overlong forms, no surrogates
    if ok then
      local ch = utf8.char(cp)
      out[#out + 1] = ch
      i = i + #ch
    else
      out[#out + 1] = "\239\191\189"
      i = i + 1
    end
  end
  return table.concat(out)
end

---The first line of a message.
function M.first_line(s)
  if not s then return "" end
  return (tostring(s):match("^[^\n]*"))
end

---The failure of a result as { kind, status, message, traceback } (masked), or nil.
function M.failure(r)
  local f = r.failure
  if not f then return nil end
  local status = nil
  if type(f.error) == "table" and math.type(f.error.status) == "integer" and f.error.status ~= 0 then
    status = f.error.status
  end
  return { kind = f.kind or "Error", status = status, message = M.mask(f.message or "?"),
    traceback = M.mask(f.traceback) }
end

---"Kind: message" for one-line summaries (the kind is left out when the message names it).
function M.failure_line(fail)
  local msg = M.first_line(fail.message)
  if msg:find(fail.kind, 1, true) then return msg end
  return fail.kind .. ": " .. msg
end

---The selection of a record in words: `-k "..." -m "..." --profile P --shard K/N paths`.
function M.selection_text(sel)
  sel = sel or {}
  local parts = {}
  if sel.k then parts[#parts + 1] = string.format("-k %q", sel.k) end
  if sel.m then parts[#parts + 1] = string.format("-m %q", sel.m) end
  if sel.profile then parts[#parts + 1] = "--profile " .. sel.profile end
  if sel.shard then parts[#parts + 1] = "--shard " .. sel.shard end
  if sel.paths and #sel.paths > 0 then parts[#parts + 1] = table.concat(sel.paths, " ") end
  if #parts == 0 then return "everything" end
  return M.mask(table.concat(parts, " "))
end

---The trace of a result (abx.run.trace) in a compact form, one exchange a line:
---"  +1.234s GET URL -> 404 NotFound (3 ms, sandbox ID, attempt 2)", after a head line; and the
---reproducer (abx.run.reproducer) last. Masked. nil when the result has neither (a trace
---without exchanges counts as none).
---@param r table a result of abx.run.runner
---@return string|nil
function M.trace_text(r)
  local has_trace = r.trace and #r.trace > 0
  if not has_trace and not r.reproducer then return nil end
  local lines = {}
  if has_trace then
    lines[1] = string.format("trace: %d HTTP exchanges%s", #r.trace, (r.trace_dropped or 0) > 0
      and string.format(" (%d more between them not kept)", r.trace_dropped) or "")
    for _, e in ipairs(r.trace) do
      local extra = {}
      extra[#extra + 1] = string.format("%.0f ms", (e.duration or 0) * 1000)
      if e.sandbox then extra[#extra + 1] = "sandbox " .. e.sandbox end
      if (e.attempt or 1) > 1 then extra[#extra + 1] = "attempt " .. e.attempt end
      lines[#lines + 1] = string.format("  +%.3fs %s %s -> %s%s (%s)", e.start or 0, e.method, e.url,
        e.status and tostring(e.status) or "no answer", e.error and (" " .. e.error) or "",
        table.concat(extra, ", "))
    end
  end
  if r.reproducer then lines[#lines + 1] = "reproduce: " .. r.reproducer end
  return M.mask(table.concat(lines, "\n"))
end

---The lines of a test's thresholds and t.measure statistics (abx.run.measure), the same in every
---report: "ok|CROSSED EXPR (MEASUREMENT: VALUE; from SOURCE)" and "NAME: N iterations, F failed,
---med X ms, p95 Y ms, p99 Z ms". Takes a run record's result or a JSON report's test (the same
---field names; JSON null reads as absent).
---@param r table
---@return string[] thresholds, string[] measurements
function M.threshold_lines(r)
  local null = require("cjson").null
  local function v(x) if x == null then return nil end return x end
  local function num(x) return x == nil and "none" or string.format("%.6g", x) end
  local th, ms = {}, {}
  for _, e in ipairs(v(r.thresholds) or {}) do
    th[#th + 1] = string.format("%s %s (%s: %s; from %s)", e.ok and "ok" or "CROSSED", e.expr,
      e.measurement, num(v(e.value)), e.source)
  end
  for _, m in ipairs(v(r.measurements) or {}) do
    ms[#ms + 1] = string.format("%s: %d iterations, %d failed, med %s ms, p95 %s ms, p99 %s ms",
      m.name, m.count, m.failed, num(v(m.med)), num(v(m.p95)), num(v(m.p99)))
  end
  return th, ms
end

---The results of a record grouped by file, in collection order: { {file=, results={...}}, ... }.
function M.by_file(record)
  local groups, index = {}, {}
  for _, r in ipairs(record.results or {}) do
    local file = r.test.file
    if not index[file] then
      index[file] = #groups + 1
      groups[#groups + 1] = { file = file, results = {} }
    end
    table.insert(groups[index[file]].results, r)
  end
  return groups
end

return M
