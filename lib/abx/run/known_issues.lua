-- abx.run.known_issues: the known-issues catalog (config/known_issues.yaml), strict expected failures,
-- and the generated KNOWN-ISSUES.md / KNOWN-ISSUES.zh-CN.md.
local core = require("abx.core")

local M = {}

local STATUSES = { open = true, fixed = true, wontfix = true }

local function bad(path, msg)
  core.error("InvalidArgument", 0, path .. ": " .. msg)
end

local function check_text(path, id, field, v)
  if type(v) ~= "table" or type(v.en) ~= "string" or type(v.zh) ~= "string"
      or v.en == "" or v.zh == "" then
    bad(path, string.format("%s.%s needs `en` and `zh` texts", id, field))
  end
end

---Loads and validates the catalog. A missing file is an empty catalog.
---@param path string
---@return table catalog { path =, entries = { [id] = entry }, ids = { sorted ids } }
---Raises: InvalidArgument naming the file, the entry and the field
function M.load(path)
  local cat = { path = path, entries = {}, ids = {} }
  if not core.exists(path) then return cat end
  local raw = core.yaml_load(path) or {}
  if type(raw) ~= "table" or (raw.issues ~= nil and type(raw.issues) ~= "table") then
    bad(path, "the top level must be a mapping with `issues:`")
  end
  for k in pairs(raw) do
    if k ~= "issues" then bad(path, string.format("unknown top-level key %q (known: issues)", tostring(k))) end
  end
  for id, e in pairs(raw.issues or {}) do
    if type(id) ~= "string" or not id:match("^KI%-%d%d%d+$") then
      bad(path, string.format("known issue id %q must look like KI-001", tostring(id)))
    end
    if type(e) ~= "table" then bad(path, id .. " must be a mapping") end
    check_text(path, id, "title", e.title)
    check_text(path, id, "description", e.description)
    if e.providers ~= nil then
      if type(e.providers) ~= "table" or #e.providers == 0 then
        bad(path, id .. ".providers must be a non-empty list of provider names (or be left out)")
      end
      for _, p in ipairs(e.providers) do
        if type(p) ~= "string" then bad(path, id .. ".providers must list provider names") end
      end
    end
    e.status = e.status or "open"
    if not STATUSES[e.status] then
      bad(path, string.format("%s.status must be open, fixed or wontfix, got %q", id, tostring(e.status)))
    end
    if e.link ~= nil and type(e.link) ~= "string" then bad(path, id .. ".link must be a URL") end
    e.id = id
    cat.entries[id] = e
    cat.ids[#cat.ids + 1] = id
  end
  table.sort(cat.ids)
  return cat
end

---True when the entry applies on `provider` (no providers list: everywhere).
function M.applies(entry, provider)
  if not entry.providers then return true end
  for _, p in ipairs(entry.providers) do
    if p == provider then return true end
  end
  return false
end

-- Kinds the script raises itself: a known issue pins a product defect, so these count as the
-- expected failure only when `raises` names them (a typo or a wrong assertion in the script is
-- never hidden as an xfail).
local SCRIPT_KINDS = { Assertion = true, LuaError = true }

-- Adds `note` to the first line of a failure message (the line summaries show; a diff follows it).
local function annotate(failure, note)
  local msg = failure.message or "?"
  local first, rest = msg:match("^([^\n]*)(.*)$")
  failure.message = first .. " " .. note .. rest
end

---Turns a finished test's result into its strict known-issue outcome, in place.
---  failed with the kind `raises` names                      -> xfailed
---  failed, no `raises`, kind other than Assertion/LuaError  -> xfailed
---  failed otherwise                                         -> stays failed (the message says why)
---  passed                                                   -> xpassed (counts as a failure)
---@param result table the runner's result record (outcome, failure)
---@param entry table|nil the catalog entry the test references
---@param provider string
---@param raises string|nil the test's `raises` option (an error kind)
function M.classify(result, entry, provider, raises)
  if not entry or not M.applies(entry, provider) then return end
  result.known_issue = entry.id
  if result.outcome == "failed" and result.failure then
    local kind = result.failure.kind
    if kind == "Interrupted" then return end -- the run was stopped: nothing was observed
    if kind == raises or (not raises and not SCRIPT_KINDS[kind]) then
      result.outcome = "xfailed"
      result.reason = entry.id .. ": " .. entry.title.en
    elseif not raises then
      annotate(result.failure, string.format(
        "(known issue %s does not cover %s %s the script raised: give raises = %q (in a YAML "
        .. "scenario raises: %s) when the %s is the defect)", entry.id,
        kind == "Assertion" and "an" or "a", kind, kind, kind,
        kind == "Assertion" and "assertion" or "Lua error"))
    else
      annotate(result.failure, string.format(
        "(known issue %s expects %s, so this is a real failure)", entry.id, raises))
    end
  elseif result.outcome == "passed" then
    result.outcome = "xpassed"
    result.reason = string.format("[XPASS(strict)] %s: %s — the issue appears fixed; remove the "
      .. "annotation and close the entry", entry.id, entry.title.en)
  end
end

local HEAD = {
  en = {
    title = "# Known issues",
    intro = "Generated from `config/known_issues.yaml` by `abxlua known-issues --write`; do not edit.\n"
      .. "Each entry is a product defect that the tests listed under it pin as a strict expected "
      .. "failure: when such a test passes, the run fails with `[XPASS(strict)]`.",
    other = "中文版本：[KNOWN-ISSUES.zh-CN.md](KNOWN-ISSUES.zh-CN.md)",
    providers = "Providers", all = "all", status = "Status", link = "Link", tests = "Tests",
    none = "none yet",
  },
  zh = {
    title = "# 已知问题",
    intro = "由 `abxlua known-issues --write` 根据 `config/known_issues.yaml` 生成，请勿手工编辑。\n"
      .. "每一条都是一个产品缺陷，下列测试将其固定为严格的预期失败：若这些测试通过，"
      .. "运行将以 `[XPASS(strict)]` 失败。",
    other = "English version: [KNOWN-ISSUES.md](KNOWN-ISSUES.md)",
    providers = "适用的提供方", all = "全部", status = "状态", link = "链接", tests = "测试",
    none = "暂无",
  },
}

---Renders the catalog as Markdown in `lang` ("en" or "zh").
---@param refs table { [id] = { "file::test name", ... } }
---@return string
function M.render(cat, refs, lang)
  local h = HEAD[lang]
  local out = { h.title, "", h.intro, "", h.other, "" }
  for _, id in ipairs(cat.ids) do
    local e = cat.entries[id]
    out[#out + 1] = string.format("## %s: %s", id, e.title[lang])
    out[#out + 1] = ""
    out[#out + 1] = e.description[lang]
    out[#out + 1] = ""
    out[#out + 1] = string.format("- %s: %s", h.providers,
      e.providers and table.concat(e.providers, ", ") or h.all)
    out[#out + 1] = string.format("- %s: %s", h.status, e.status)
    if e.link then out[#out + 1] = string.format("- %s: %s", h.link, e.link) end
    local tests = refs[id] or {}
    out[#out + 1] = string.format("- %s: %s", h.tests, #tests > 0 and "" or h.none)
    for _, t in ipairs(tests) do out[#out + 1] = "  - `" .. t .. "`" end
    out[#out + 1] = ""
  end
  return table.concat(out, "\n")
end

return M
