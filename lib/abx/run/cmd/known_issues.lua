-- abx.run.cmd.known_issues: `abxlua known-issues`: the catalog with the tests that reference each
-- entry; --write regenerates scenarios/KNOWN-ISSUES.md and KNOWN-ISSUES.zh-CN.md, --check fails
-- (exit 1) when they are stale.
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
  local texts = { en = known_issues.render(s.catalog, refs, "en") .. "\n",
    zh = known_issues.render(s.catalog, refs, "zh") .. "\n" }
  if args.write then
    for lang, name in pairs(OUT) do
      local ok, werr = write_file(args.dir .. "/" .. name, texts[lang])
      if not ok then core.ewrite("abxlua: cannot write " .. tostring(werr) .. "\n"); return 1 end
      core.write("wrote " .. args.dir .. "/" .. name .. "\n")
    end
    return 0
  end
  if args.check then
    local stale = {}
    for lang, name in pairs(OUT) do
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
  core.write(texts[args.lang])
  return 0
end

return M
