-- abx.run.cmd.known_issues: `abxlua known-issues`: the catalog with the tests that reference each
-- entry; --write regenerates scenarios/KNOWN-ISSUES.md and KNOWN-ISSUES.zh-CN.md (one file per
-- language of the config's known_issues.languages), --check fails (exit 1) when they are stale.
-- An entry lacking a text of those languages fails --write and --check (naming the entry and its
-- line); the printed catalog shows "(no zh text: FILE:LINE)" in its place.
local core = require("abx.core")
local suite = require("abx.run.suite")
local known_issues = require("abx.run.known_issues")

local M = {}

local OUT = { en = "KNOWN-ISSUES.md", zh = "KNOWN-ISSUES.zh-CN.md" }

function M.configure(parser)
  local cmd = parser:command("known-issues", "Print the known-issues catalog and the tests that "
    .. "reference each entry; generate or check scenarios/KNOWN-ISSUES*.md.")
  suite.add_selection_options(cmd)
  cmd:option("--lang", "Language of the printed catalog: en or zh.", "en"):choices({ "en", "zh" })
  cmd:option("--dir", "Where the generated Markdown files live.", "scenarios")
  cmd:flag("--write", "Regenerate KNOWN-ISSUES.md and KNOWN-ISSUES.zh-CN.md.")
  cmd:flag("--check", "Exit 1 when the generated files are missing or stale.")
end

local function write_file(path, text)
  local f, err = io.open(path, "wb")
  if not f then return nil, err end
  f:write(text)
  f:close()
  return true
end

function M.execute(args)
  local s, err = suite.load(args)
  if not s then return nil, err end
  local refs = {}
  local bad = 0
  for _, f in ipairs(s.files) do
    if f.error then
      core.ewrite("ERROR " .. f.path .. " (collection): " .. tostring(f.error) .. "\n")
      bad = bad + 1
    end
    for _, t in ipairs(f.tests) do
      local id = t.opts.known_issue
      if id then
        refs[id] = refs[id] or {}
        table.insert(refs[id], t.id)
      end
    end
  end
  for _, list in pairs(refs) do table.sort(list) end
  if bad > 0 then return 1 end
  if args.write or args.check then
    local probs = {}
    for _, id in ipairs(s.catalog.ids) do
      probs[#probs + 1] = known_issues.problem(s.catalog, s.catalog.entries[id])
    end
    for _, p in ipairs(probs) do core.ewrite("abxlua: " .. p .. "\n") end
    if #probs > 0 then return 1 end
  end
  local out, texts = {}, {}
  for _, lang in ipairs(s.catalog.langs) do
    out[lang] = OUT[lang]
    texts[lang] = known_issues.render(s.catalog, refs, lang) .. "\n"
  end
  if not args.write and not args.check then
    core.write(texts[args.lang] or (known_issues.render(s.catalog, refs, args.lang) .. "\n"))
    return 0
  end
  if args.write then
    for lang, name in pairs(out) do
      local ok, werr = write_file(args.dir .. "/" .. name, texts[lang])
      if not ok then core.ewrite("abxlua: cannot write " .. tostring(werr) .. "\n"); return 1 end
      core.write("wrote " .. args.dir .. "/" .. name .. "\n")
    end
    return 0
  end
  if args.check then
    local stale = {}
    for lang, name in pairs(out) do
      local have = core.read_file(args.dir .. "/" .. name)
      if have ~= texts[lang] then stale[#stale + 1] = args.dir .. "/" .. name end
    end
    table.sort(stale)
    if #stale > 0 then
      core.write("stale: " .. table.concat(stale, ", ") .. " (regenerate with `abxlua known-issues "
        .. "--write` and commit them)\n")
      return 1
    end
    core.write("known-issues files are up to date\n")
    return 0
  end
end

return M
