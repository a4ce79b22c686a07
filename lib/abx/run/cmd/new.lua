-- abx.run.cmd.new: `abxlua new scenario NAME` and `abxlua new template NAME`: scaffolds that
-- `abxlua list` collects as they are.
--   scenario NAME   <dir>/NAME.lua (dir default scenarios): a header comment and one test
--   template NAME   <dir>/NAME/ (dir default scenarios/templates): template.yaml (a recipe built
--                   from base) and NAME.lua, the template's own check on ctx.template_sandbox
-- Never overwrites: an existing file or folder is a usage error (exit 4), as is a NAME that is
-- not a scenario name (letters, digits, '_' and '-', starting with a letter or digit: a leading
-- '_' marks a helper module) or a template name (abx.run.recipe.NAME_PATTERN).
local core = require("abx.core")
local recipe = require("abx.run.recipe")

local M = {}

-- A scenario file's name, without .lua: what `abxlua run` and node ids show.
M.SCENARIO_PATTERN = "^[%w][%w_%-]*$"

--- Adds the command to the parser. Raises: nothing.
---@param parser table argparse parser
function M.configure(parser)
  local cmd = parser:command("new", "Create a scenario file or a template folder to start from.")
  cmd:command_target("new_command")
  local sc = cmd:command("scenario", "Create <dir>/NAME.lua: a header comment and one test.")
  sc:argument("name", "The file's name without .lua, e.g. 11_billing.")
  sc:option("--dir", "Where to create it.", "scenarios")
  local tp = cmd:command("template", "Create <dir>/NAME/ with template.yaml and NAME.lua.")
  tp:argument("name", "The template's name: lower-case letters, digits, '-' and '_'.")
  tp:option("--dir", "Where to create the folder.", "scenarios/templates")
end

local function scenario_text(name)
  return table.concat({
    "-- " .. name .. ": <what this file checks, in one line>.",
    "-- Fixtures: ctx.base_sandbox (a sandbox per test, killed after it). Markers: none.",
    "-- Run: abxlua run <this file>; abxlua list <this file> shows its tests.",
    "local t = require(\"abx.test\")",
    "",
    "t.test(\"a command in a fresh sandbox prints its output\", function(ctx)",
    "  local r = ctx.base_sandbox.commands:run(\"echo hello\")",
    "  t.eq(r.exit_code, 0)",
    "  t.eq(r.stdout, \"hello\\n\")",
    "end)",
    "" }, "\n")
end

local function recipe_text(name)
  return table.concat({
    "# " .. name .. ": <what this template is for>. The recipe's keys: abx.run.recipe",
    "# (docs/templates.md). Built through the provider's build API by `abxlua run <this folder>` or",
    "# `abxlua template deploy " .. name .. "`; then " .. name .. ".lua runs on a sandbox of it.",
    "from: base",
    "steps:",
    "  - run: \"echo hello from " .. name .. " > /home/user/hello.txt\"",
    "" }, "\n")
end

local function template_script(name)
  return table.concat({
    "-- " .. name .. ": the template's own check, run once its recipe (template.yaml) is built.",
    "-- Fixture: ctx.template_sandbox (a sandbox of this folder's template). Markers: none.",
    "local t = require(\"abx.test\")",
    "",
    "t.test(\"" .. name .. " has the file its recipe wrote\", function(ctx)",
    "  local sbx = ctx.template_sandbox",
    "  t.eq(sbx.files:read(\"/home/user/hello.txt\"), \"hello from " .. name .. "\\n\")",
    "end)",
    "" }, "\n")
end

local function write_new(path, text)
  local f, err = io.open(path, "wb")
  if not f then return nil, "cannot create " .. tostring(err) end
  f:write(text)
  f:close()
  core.write("created " .. path .. "\n")
  return true
end

-- Creates directory `dir` when missing. Returns true, or nil and why not.
local function mkdir(dir)
  local ok, err = pcall(require("abx.run.report.common").mkdir_p, dir)
  if ok then return true end
  return nil, core.is_error(err) and err.message or tostring(err)
end

--- Runs the command. Returns 0, or nil and a usage error (exit 4): a bad NAME, an existing file
--- or folder, or a directory that cannot be created or written. Nothing is created for a bad
--- NAME or an existing path.
---@param args table parsed arguments
---@return integer|nil code, string|nil err
function M.execute(args)
  local name, dir = args.name, (args.dir:gsub("/+$", ""))
  if args.new_command == "scenario" then
    if name:match("%.lua$") then
      return nil, string.format("%q: give the scenario's name without .lua", name)
    end
    if not name:match(M.SCENARIO_PATTERN) then
      return nil, string.format("%q is not a scenario name: letters, digits, '_' and '-', starting "
        .. "with a letter or digit (a name starting with '_' is a helper module, not a scenario)", name)
    end
    local path = dir .. "/" .. name .. ".lua"
    if core.exists(path) then return nil, path .. " exists; not overwritten (pick another name)" end
    local ok, err = mkdir(dir)
    if ok then ok, err = write_new(path, scenario_text(name)) end
    if not ok then return nil, err end
    core.write("list its tests: abxlua list " .. path .. "\n")
    return 0
  end
  if not name:match(recipe.NAME_PATTERN) then
    return nil, string.format("%q is not a template name: lower-case letters, digits, '-' and '_', "
      .. "starting with a letter or digit", name)
  end
  local folder = dir .. "/" .. name
  if core.exists(folder) then return nil, folder .. " exists; not overwritten (pick another name)" end
  local ok, err = mkdir(folder)
  if ok then ok, err = write_new(folder .. "/template.yaml", recipe_text(name)) end
  if ok then ok, err = write_new(folder .. "/" .. name .. ".lua", template_script(name)) end
  if not ok then return nil, err end
  core.write("list its tests (this checks the recipe): abxlua list " .. folder .. "\n")
  return 0
end

return M
