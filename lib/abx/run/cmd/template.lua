-- abx.run.cmd.template: `abxlua template build|deploy|list|delete|logs`: template folders
-- (scenarios/templates/<name>/, abx.run.recipe) through a provider's E2B build API
-- (abx.client.template, abx.run.template_build).
--   build NAME     build under the content tag abx-<hash12>; skipped ("cached") when the template
--                  already has that tag; --dry-run prints the requests' bodies and stops
--   deploy NAME    build, then assign "default" and the recipe's tags
--   list           the provider's templates (GET /v2/templates)
--   delete NAME    DELETE /templates/{id}: the template, its names and tags
--   logs NAME      the log of the last build made from this machine
-- NAME is a folder under scenarios/templates/ or a path to a template folder (list, delete and
-- logs take a template name). Exit codes: 0 ok, 1 the build or a request failed, 4 usage error
-- (unknown template, malformed recipe, unknown provider, a provider without templates_build).
-- On a provider of kind local every command works on one persistent platform: the running one
-- the sandbox CLI finds (ABX_LOCAL_URL, else `abxlua sandbox serve`'s state file:
-- abx.run.sandbox_cli.common.attach_running), so `abxlua sandbox create --template NAME` starts
-- what was built; else a serve of this command alone, whose builds stay in the template store of
-- the build cache every local serve shares (platform/template/template_store.h "Disk"), so the
-- next serve has them.
local core = require("abx.core")
local cjson = require("cjson")
local config = require("abx.run.config")
local provider = require("abx.run.provider")
local recipe = require("abx.run.recipe")

local M = {}

M.TEMPLATES_DIR = "scenarios/templates"

local SUBCOMMANDS = {
  { "build", "Build a template folder through the provider's build API (skipped when unchanged)." },
  { "deploy", "Build, then make it the template's default (tags default + the recipe's tags)." },
  { "list", "List the provider's templates." },
  { "delete", "Delete a template with its names and tags." },
  { "logs", "Show the log of the last build of a template made from this machine." },
}

function M.configure(parser)
  local cmd = parser:command("template", "Build, deploy, list, delete templates (template "
    .. "folders under scenarios/templates/).")
  cmd:command_target("template_command")
  for _, s in ipairs(SUBCOMMANDS) do
    local sub = cmd:command(s[1], s[2])
    if s[1] ~= "list" then
      local what = "A template name (or its folder)."
      if s[1] == "build" or s[1] == "deploy" then
        what = "A folder name under scenarios/templates/ or a path to a template folder."
      end
      sub:argument("name", what)
    end
    sub:option("--provider", "Provider from config/abxlua.yaml (default: ABX_PROVIDER or config).")
    sub:option("--config", "Config file (default: ABX_CONFIG or config/abxlua.yaml).")
    if s[1] == "build" or s[1] == "deploy" then
      sub:flag("-q --quiet", "Only the progress lines, not every build log line.")
    end
    if s[1] == "build" then
      sub:flag("--dry-run", "Print the JSON bodies of POST /v3/templates and the build start "
        .. "(TemplateBuildStartV2), then stop; no provider is contacted.")
    end
  end
end

local function say(s) core.write(s .. "\n", true) end

--- The folder a NAME argument means: a path to a template folder, or scenarios/templates/NAME.
---@return string|nil dir, string|nil err
function M.resolve_dir(name)
  if name:find("/") or core.isdir(name) and recipe.is_template_dir(name) then
    if recipe.is_template_dir(name) then return (name:gsub("/+$", "")) end
    return nil, name .. " is not a template folder (no template.yaml in it)"
  end
  local dir = M.TEMPLATES_DIR .. "/" .. name
  if recipe.is_template_dir(dir) then return dir end
  local names = {}
  for _, n in ipairs(core.readdir(M.TEMPLATES_DIR) or {}) do
    if recipe.is_template_dir(M.TEMPLATES_DIR .. "/" .. n) then names[#names + 1] = n end
  end
  return nil, string.format("unknown template %q: no %s/template.yaml (templates: %s)", name, dir,
    #names > 0 and table.concat(names, ", ") or "none")
end

--- Why a provider cannot build, or nil when it can (capability templates_build).
---@return string|nil
function M.missing_build_api(pname, p)
  if (p.capability_set or {}).templates_build then return nil end
  return string.format("provider %s lacks capability templates_build (it has: %s): it has no E2B "
    .. "template build API; add templates_build under providers.%s.capabilities in the config if it "
    .. "does", pname, #(p.capabilities or {}) > 0 and table.concat(p.capabilities, ", ") or "none",
    pname)
end

-- The connection of provider pname: for kind local the platform that already runs, when one
-- does (a note on stderr says which), else a new one (abx.run.provider.open: a serve stopped by
-- info.stop). Raises what those raise (a malformed ABX_LOCAL_URL, a serve that does not start).
local function open_provider(pname, p, run)
  if p.kind == "local" then
    local common = require("abx.run.sandbox_cli.common")
    local conn, url = common.attach_running(pname, p, run)
    if conn then
      core.ewrite("abxlua template: on the running local platform " .. url .. "\n")
      return conn, { endpoint = url, attached = true }
    end
  end
  return provider.open(pname, p, run)
end

-- Opens the provider inside a task and runs fn(conn, info, pname, p); returns its exit code.
local function with_provider(args, fn)
  local cfg = config.load(config.find(args.config))
  local pname, p = config.provider(cfg, args.provider)
  local why = M.missing_build_api(pname, p)
  if why then
    core.ewrite("abxlua: error: " .. why .. "\n")
    return 4
  end
  local code = 1
  local ok, nerr = core.run(function()
    local run = { run_id = "tmpl-" .. core.random_hex(4), defaults = cfg.defaults }
    local oko, conn, info = pcall(open_provider, pname, p, run)
    if not oko then
      core.ewrite("abxlua: " .. tostring(conn) .. "\n")
      return
    end
    if not conn then
      core.ewrite("abxlua: missing credentials for provider " .. pname .. ": "
        .. table.concat(info.missing, ", ") .. "\n")
      code = 1
      return
    end
    local fok, res = pcall(fn, conn, info, pname, p)
    if fok then
      code = res or 0
    else
      core.ewrite("abxlua: " .. (core.is_error(res) and tostring(res) or tostring(res)) .. "\n")
      if core.is_error(res) and res.log_tail and #res.log_tail > 0 then
        core.ewrite("last build log lines:\n  " .. table.concat(res.log_tail, "\n  ") .. "\n")
      end
      code = 1
    end
    if info.stop then info.stop(code ~= 0) end
    if code ~= 0 and info.log then core.ewrite("local platform log: " .. info.log .. "\n") end
  end)
  if not ok then
    core.ewrite("abxlua: " .. tostring(nerr) .. " internal task error(s)\n")
    return 3
  end
  return code
end

local function build(args, deploy)
  local dir, derr = M.resolve_dir(args.name)
  if not dir then return nil, derr end
  local r = recipe.load(dir)
  if r.prebuilt then
    return nil, string.format("%s is a prebuilt template (%s: prebuilt: true): the provider's own, "
      .. "nothing to build; `abxlua run %s` runs its script", r.name, r.file, r.dir)
  end
  if args.dry_run then
    say(cjson.encode({ ["POST /v3/templates"] = recipe.create_body(r),
      ["POST /v2/templates/{templateID}/builds/{buildID}"] = r.build }))
    return 0
  end
  return with_provider(args, function(conn, _, pname)
    local tb = require("abx.run.template_build")
    local res = tb.build(conn, r, { deploy = deploy, out = say, verbose = not args.quiet,
      record_dir = tb.record_dir(core.state_dir(), pname), provider = pname })
    say(string.format("%s: %s in %.1fs (%s:%s)", r.name, res.status, res.seconds, r.name, r.tag))
    return 0
  end)
end

-- A count of the API's JSON (decoded as a float): "2", not "2.0".
local function count(v)
  return tostring(type(v) == "number" and math.tointeger(v) or v)
end

local function list(args)
  return with_provider(args, function(conn)
    local rows = require("abx.client.template").list(conn)
    say(string.format("%-24s %-22s %-9s %4s %7s  %s", "NAME", "TEMPLATE ID", "STATUS", "CPU",
      "MEMORY", "BUILDS"))
    for _, t in ipairs(rows) do
      local names = type(t.names) == "table" and table.concat(t.names, ",") or ""
      if names == "" and type(t.aliases) == "table" then names = table.concat(t.aliases, ",") end
      say(string.format("%-24s %-22s %-9s %4s %7s  %s", names, tostring(t.templateID),
        tostring(t.buildStatus), count(t.cpuCount), count(t.memoryMB), count(t.buildCount)))
    end
    say(string.format("%d template(s)", #rows))
    return 0
  end)
end

-- A delete/logs NAME: the template name itself (a folder path gives its folder's name).
local function template_name(arg)
  return (arg:gsub("/+$", ""):match("([^/]+)$"))
end

local function delete(args)
  local name = template_name(args.name)
  return with_provider(args, function(conn)
    local template = require("abx.client.template")
    local id = template.get_id(conn, name)
    if not id then
      say(string.format("%s: no such template (nothing deleted)", name))
      return 1
    end
    template.delete(conn, id)
    say(string.format("%s: deleted template %s with its names and tags", name, id))
    return 0
  end)
end

local function logs(args)
  local name = template_name(args.name)
  local cfg = config.load(config.find(args.config))
  local pname, p = config.provider(cfg, args.provider)
  local tb = require("abx.run.template_build")
  local rec = tb.last_record(tb.record_dir(core.state_dir(), pname), name)
  if not rec then
    core.ewrite(string.format("abxlua: no build of %s recorded on this machine for provider %s "
      .. "(run `abxlua template build %s` first)\n", name, pname, name))
    return 1
  end
  local why = M.missing_build_api(pname, p)
  if why or p.kind == "local" then
    -- a local platform keeps no build log across restarts (template_store.h "Disk"): the log
    -- this machine saved is the one
    local text = core.read_file(rec.log_path) or ""
    say(string.format("%s: build %s of template %s (%s), saved log:", name, rec.build_id,
      rec.template_id, rec.tag))
    core.write(text, true)
    return 0
  end
  return with_provider(args, function(conn)
    local template = require("abx.client.template")
    say(string.format("%s: build %s of template %s (%s):", name, rec.build_id, rec.template_id,
      rec.tag))
    local offset = 0
    repeat
      local st = template.status(conn, rec.template_id, rec.build_id, offset)
      for _, e in ipairs(st.log_entries) do say(tostring(e.message)) end
      offset = offset + #st.log_entries
    until #st.log_entries == 0
    return 0
  end)
end

function M.execute(args)
  local c = args.template_command
  if c == "build" then return build(args, false) end
  if c == "deploy" then return build(args, true) end
  if c == "list" then return list(args) end
  if c == "delete" then return delete(args) end
  if c == "logs" then return logs(args) end
  return nil, "abxlua template: give a subcommand: build, deploy, list, delete or logs"
end

return M
