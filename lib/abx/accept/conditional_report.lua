-- abx.accept.conditional_report: the JSON report of `abxlua accept conditional`. It holds the
-- checks (name, status, duration, reason, details), the counts, the provider's name and kind and
-- the template's name (inputs), and never a credential or a resource identifier: every text is
-- masked (core.mask: the API key and every registered secret), every identifier the run saw
-- (sandbox ids, snapshot ids and names, the run's tag) is replaced by its kind in angle brackets,
-- and the encoded text is checked once more for each of them before it is written (fail closed:
-- a report that would hold one is not written).
local core = require("abx.core")
local cjson = require("cjson")
local common = require("abx.run.report.common")
local json = require("abx.run.report.json")

local M = {}

M.SCHEMA = "abxlua.accept.conditional/1"

-- `text` with every identifier of `ids` ({[id] = kind}) replaced by "<kind>", longest first (a
-- snapshot's name contains its id).
local function scrub(text, ids)
  if text == nil then return nil end
  text = core.mask(tostring(text))
  local list = {}
  for id, kind in pairs(ids) do
    if type(id) == "string" and #id >= 4 then list[#list + 1] = { id, kind } end
  end
  table.sort(list, function(a, b) return #a[1] > #b[1] end)
  for _, e in ipairs(list) do
    local pat = e[1]:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")
    text = text:gsub(pat, "<" .. e[2] .. ">")
  end
  return common.utf8_clean(text)
end
M.scrub = scrub

-- A deep copy of a details table with each string scrubbed.
local function scrub_value(v, ids)
  if type(v) == "string" then return scrub(v, ids) end
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = scrub_value(x, ids) end
  local n = 0
  for _ in pairs(v) do n = n + 1 end
  if n > 0 and #v == n then json.array(out) end
  return out
end

---Builds the report of a run.
---@param s table the run's state: provider, provider_kind, template, started_wall, started,
---  status ("passed" | "failed" | "interrupted"), checks = {{name, status, duration, reason?,
---  details?}}, cleanup = {sandboxes, snapshots, swept, errors}, ids ({[id] = kind}), run_id
---@return table report
function M.build(s)
  local counts = { passed = 0, failed = 0, skipped = 0, interrupted = 0, not_run = 0 }
  local checks = json.array()
  for _, c in ipairs(s.checks) do
    counts[c.status] = (counts[c.status] or 0) + 1
    checks[#checks + 1] = { name = c.name, status = c.status,
      duration = math.floor((c.duration or 0) * 1000 + 0.5) / 1000,
      reason = c.reason and scrub(c.reason, s.ids) or cjson.null,
      details = c.details and scrub_value(c.details, s.ids) or nil }
  end
  local v, commit = core.version()
  local cl = s.cleanup or {}
  return {
    schema = M.SCHEMA, kind = "conditional", status = s.status,
    provider = scrub(s.provider, s.ids), provider_kind = s.provider_kind,
    template = scrub(s.template, s.ids),
    engine_version = v, git_commit = commit,
    started_at = common.iso_utc(s.started_wall), finished_at = common.iso_utc(core.time()),
    duration = math.floor((core.now() - s.started) * 1000 + 0.5) / 1000,
    counts = counts, checks = checks,
    cleanup = { sandboxes_killed = cl.sandboxes or 0, snapshots_deleted = cl.snapshots or 0,
      swept_by_tag = cl.swept or 0, cli_children_stopped = cl.children or 0,
      errors = json.array(scrub_value(cl.errors or {}, s.ids)) },
  }
end

---Encodes the report and writes it to `path` (which must not exist yet).
---Raises: Internal when the encoded report holds an identifier or a secret (nothing is written);
---  InvalidArgument when the file exists or cannot be written.
---@param path string
---@param report table from M.build
---@param ids table {[id] = kind}: none may appear in the text
---@param secrets string[] values that may not appear either (credentials)
function M.write(path, report, ids, secrets)
  local text = json.encode(report) .. "\n"
  for id, kind in pairs(ids) do
    if type(id) == "string" and #id >= 4 and text:find(id, 1, true) then
      core.error("Internal", 0, "the report would hold a " .. kind .. " identifier: not written")
    end
  end
  for _, v in ipairs(secrets or {}) do
    if type(v) == "string" and #v >= 4 and text:find(v, 1, true) then
      core.error("Internal", 0, "the report would hold a credential: not written")
    end
  end
  if core.exists(path) then
    core.error("InvalidArgument", 0, "--report " .. path .. " appeared during the run: not "
      .. "overwritten")
  end
  common.write_file("conditional report", path, text)
end

return M
