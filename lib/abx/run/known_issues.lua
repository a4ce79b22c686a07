-- abx.run.known_issues: the known-issues catalog (config/known_issues.yaml), strict expected failures,
-- and the generated KNOWN-ISSUES.md / KNOWN-ISSUES.zh-CN.md. The languages every entry needs texts
-- in are the config's known_issues.languages (the shipped config: en, zh); an entry lacking one
-- stops `known-issues --check`/`--write` and the runs whose selected tests use it (M.problem), and
-- nothing else.
local core = require("abx.core")

local M = {}

local STATUSES = { open = true, fixed = true, wontfix = true }

local function bad(path, msg)
  core.error("InvalidArgument", 0, path .. ": " .. msg)
end

-- The languages a text may be given in (config.KNOWN_ISSUE_LANGUAGES; HEAD below renders each).
local LANGS = { en = true, zh = true }

-- Checks a title or description: a mapping language -> text. A language of `langs` without a text
-- is not an error here: it is recorded in e.missing, which stops only what uses the entry
-- (M.problem). A text in a language nobody renders is an error.
local function check_text(path, e, id, field, langs)
  local v = e[field]
  if type(v) ~= "table" then
    bad(path, string.format("%s.%s must be a mapping of language to text (%s)", id, field,
      table.concat(langs, ", ")))
  end
  for k in pairs(v) do
    if not LANGS[k] then
      bad(path, string.format("%s.%s: unknown language %q (known: en, zh)", id, field, tostring(k)))
    end
  end
  for _, l in ipairs(langs) do
    if type(v[l]) ~= "string" or v[l] == "" then
      e.missing[#e.missing + 1] = field .. "." .. l
    end
  end
end

-- The line of `id:` in the catalog's text, or nil.
local function line_of(text, id)
  local n = 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    if line:match("^%s+" .. id:gsub("%-", "%%-") .. "%s*:") then return n end
  end
end

---Loads and validates the catalog. A missing file is an empty catalog.
---@param path string
---@param langs string[]|nil the languages every entry needs texts in (config
---  known_issues.languages; default {"en"})
---@return table catalog { path =, langs =, entries = { [id] = entry }, ids = { sorted ids } }; an
---  entry lacking a text of `langs` has `missing` = {"title.zh", ...} and `line` (see M.problem)
---Raises: InvalidArgument naming the file, the entry and the field (a malformed catalog)
function M.load(path, langs)
  langs = langs or { "en" }
  local cat = { path = path, langs = langs, entries = {}, ids = {} }
  if not core.exists(path) then return cat end
  local text = core.read_file(path) or ""
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
    e.missing, e.line = {}, line_of(text, id)
    check_text(path, e, id, "title", langs)
    check_text(path, e, id, "description", langs)
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

---Why the entry cannot be used, or nil: the texts it lacks, with the file and line of the entry.
---@return string|nil e.g. `config/known_issues.yaml:17: KI-002 has no text for title.zh,
---  description.zh (known_issues.languages: en, zh)`
function M.problem(cat, entry)
  if not entry or #entry.missing == 0 then return nil end
  return string.format("%s:%s: %s has no text for %s (known_issues.languages: %s); add them, or "
    .. "drop the language from known_issues.languages in the config", cat.path,
    tostring(entry.line or "?"), entry.id, table.concat(entry.missing, ", "),
    table.concat(cat.langs, ", "))
end

---The problems (M.problem) of the entries the given tests reference, one per entry, sorted.
---@param files table[] collected files ({ tests = { {opts = {known_issue}, id} } })
---@return string[]
function M.problems_used(cat, files)
  local seen, out = {}, {}
  for _, f in ipairs(files) do
    for _, t in ipairs(f.tests or {}) do
      local id = t.opts and t.opts.known_issue
      local p = id and not seen[id] and M.problem(cat, cat.entries[id])
      if p then out[#out + 1] = p .. " (used by " .. t.id .. ")" end
      if id then seen[id] = true end
    end
  end
  table.sort(out)
  return out
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

-- An entry's text in `lang`, or a placeholder naming where it is missing.
local function text_of(cat, e, field, lang)
  local v = e[field][lang]
  if type(v) == "string" and v ~= "" then return v end
  return string.format("(no %s text: %s:%s)", lang, cat.path, tostring(e.line or "?"))
end

---Renders the catalog as Markdown in `lang` ("en" or "zh"); a missing text shows as
---"(no zh text: FILE:LINE)". The other language's file is linked when the catalog has both.
---@param refs table { [id] = { "file::test name", ... } }
---@return string
function M.render(cat, refs, lang)
  local h = HEAD[lang]
  local out = { h.title, "", h.intro, "" }
  if #(cat.langs or {}) > 1 then out[#out + 1] = h.other; out[#out + 1] = "" end
  for _, id in ipairs(cat.ids) do
    local e = cat.entries[id]
    out[#out + 1] = string.format("## %s: %s", id, text_of(cat, e, "title", lang))
    out[#out + 1] = ""
    out[#out + 1] = text_of(cat, e, "description", lang)
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
