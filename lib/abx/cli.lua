-- abx.cli: the command line (lua-argparse). Subcommands: run, list, help; --version.
-- Exit codes: 0 all good, 1 failures or errors, 2 interrupted, 3 internal error, 4 usage error,
-- 5 nothing collected.
local core = require("abx.core")
local argparse = require("argparse")
local config = require("abx.config")
local collect = require("abx.collect")
local select = require("abx.select")

local M = {}

local function build_parser()
  local p = argparse("abxlua", "End-to-end test engine for E2B-compatible sandbox platforms.")
    :epilog("Also: `abxlua serve` (the embedded local E2B platform) and `abxlua envd` (the\n"
      .. "in-sandbox daemon); `abxlua help serve` shows their options.\n"
      .. "Run `abxlua <command> --help` for a command's options.\n"
      .. "Exit codes: 0 ok, 1 failures/errors, 2 interrupted, 3 internal error, 4 usage error, 5 nothing collected.")
  p:flag("--version", "Print the version and exit.")
  p:command_target("command")
  p:require_command(false)

  local run = p:command("run", "Run scenario files (default path: scenarios/).")
  run:argument("paths", "Scenario files or directories (searched recursively for *.lua).")
    :args("*")
  run:option("-j --jobs", "Tests to run at once (default: config defaults.jobs)."):convert(tonumber)
  run:option("-k", "Only tests whose name matches this expression (words are case-insensitive "
    .. "substrings; and, or, not, parentheses)."):target("keyword")
  run:option("-m", "Only tests whose markers match this expression (e.g. \"not e2e_slow\").")
    :target("markexpr")
  run:option("--profile", "A named selection from config `profiles:` (-m / -k given here win).")
  run:option("--provider", "Provider from config/abxlua.yaml (default: ABX_PROVIDER or config).")
  run:option("--config", "Config file (default: ABX_CONFIG or config/abxlua.yaml).")
  run:option("--timeout", "Seconds per test unless a test sets its own.")
    :convert(tonumber)
  run:flag("-x --exitfirst", "Stop starting tests after the first failure (cleanup still runs).")
  run:flag("-v --verbose", "Show tracebacks of failures.")

  local list = p:command("list", "List the tests that would run, one per line, with markers.")
  list:argument("paths", "Scenario files or directories."):args("*")
  list:option("-k", "Only tests whose name matches this expression."):target("keyword")
  list:option("-m", "Only tests whose markers match this expression."):target("markexpr")
  list:option("--profile", "A named selection from config `profiles:` (-m / -k given here win).")
  list:option("--config", "Config file (default: ABX_CONFIG or config/abxlua.yaml).")

  local help = p:command("help", "Show help for abxlua or one of its commands.")
  help:argument("topic", "A command name."):args("?")
  return p
end

local function usage_error(p, msg)
  core.ewrite(p:get_usage() .. "\n\nabxlua: error: " .. msg .. "\n")
  return 4
end

-- Compiles the selection (-k, -m, --profile) into one predicate, or nil when nothing is selected
-- out. A bad expression or unknown profile raises InvalidArgument (a usage error, exit 4).
local function selection(args, cfg)
  local k, m = args.keyword, args.markexpr
  if args.profile then
    local prof = config.profile(cfg, args.profile)
    k = k or prof.k
    m = m or prof.m
  end
  local preds = {}
  for _, sel in ipairs({ { k, "k" }, { m, "m" } }) do
    if sel[1] then
      local ok, pred = pcall(select.compile, sel[1], sel[2], cfg.markers)
      if not ok then core.error("InvalidArgument", 0, tostring(pred)) end
      preds[#preds + 1] = pred
    end
  end
  if #preds == 0 then return nil end
  return function(t)
    for _, pred in ipairs(preds) do
      if not pred(t) then return false end
    end
    return true
  end
end

local function selected(files, pred)
  if not pred then return files end
  for _, f in ipairs(files) do
    local keep = {}
    for _, t in ipairs(f.tests) do
      if pred(t) then keep[#keep + 1] = t end
    end
    f.tests = keep
  end
  return files
end

local function load_files(args, cfg)
  local pred = selection(args, cfg)
  local paths = args.paths
  if #paths == 0 then paths = { "scenarios" } end
  local names, missing = collect.files(paths)
  if #missing > 0 then return nil, "no such file or directory: " .. table.concat(missing, ", ") end
  local files = {}
  for _, path in ipairs(names) do files[#files + 1] = collect.load(path, cfg.markers) end
  return selected(files, pred)
end

local function cmd_list(args)
  local cfg = config.load(config.find(args.config))
  local files, err = load_files(args, cfg)
  if not files then return nil, err end
  local n, bad = 0, 0
  for _, f in ipairs(files) do
    if f.error then
      core.write("ERROR " .. f.path .. " (collection): " .. tostring(f.error) .. "\n")
      bad = bad + 1
    end
    for _, t in ipairs(f.tests) do
      core.write(string.format("%s [%s]\n", t.id, table.concat(t.markers, ",")))
      n = n + 1
    end
  end
  core.write(string.format("%d tests collected%s\n", n, bad > 0 and (", " .. bad .. " errors") or ""))
  if bad > 0 then return 1 end
  return n == 0 and 5 or 0
end

local function cmd_run(args)
  local cfg = config.load(config.find(args.config))
  if args.timeout then
    if args.timeout <= 0 then return nil, "--timeout must be a positive number of seconds" end
    cfg.defaults.test_timeout = args.timeout
  end
  -- resolve the provider now: an unknown name is a usage error, not a failure inside the run
  config.provider(cfg, args.provider)
  local files, err = load_files(args, cfg)
  if not files then return nil, err end
  local jobs = args.jobs or cfg.defaults.jobs
  if jobs < 1 or jobs ~= math.floor(jobs) then return nil, "-j must be a positive integer" end
  local env_ttl = core.getenv("E2E_SANDBOX_TTL")
  if env_ttl then
    cfg.defaults.sandbox_ttl = tonumber(env_ttl)
    if not cfg.defaults.sandbox_ttl or cfg.defaults.sandbox_ttl <= 0 then
      return nil, "E2E_SANDBOX_TTL must be a positive number of seconds, got " .. env_ttl
    end
  end
  local run_id = core.getenv("E2E_RUN_ID") or core.random_hex(6)
  if not run_id:match("^[%w%-_]+$") then
    return nil, "E2E_RUN_ID may only contain letters, digits, '-' and '_'"
  end
  local runner = require("abx.runner")
  local code = 3
  local ok, errs = core.run(function()
    code = runner.run(files, { config = cfg, provider_name = args.provider, jobs = jobs,
      exitfirst = args.exitfirst, run_id = run_id, verbose = args.verbose })
  end)
  if not ok then
    core.ewrite("abxlua: " .. errs .. " internal task error(s)\n")
    return 3
  end
  return code
end

---Entry point called by the C core with the arguments (argv[1..]).
---@param argv string[]
---@return integer exit code
function M.main(argv)
  local p = build_parser()
  local ok, args = p:pparse(argv)
  if not ok then return usage_error(p, args) end
  if args.version then
    local v, commit = core.version()
    core.write("abxlua " .. v .. " (" .. commit .. ")\n")
    return 0
  end
  if not args.command then
    core.write(p:get_help() .. "\n")
    return 0
  end
  if args.command == "help" then
    if args.topic then
      local sub = nil
      for _, c in ipairs(p._commands) do
        if c._name == args.topic then sub = c end
      end
      if not sub then return usage_error(p, "unknown command " .. args.topic) end
      core.write(sub:get_help() .. "\n")
    else
      core.write(p:get_help() .. "\n")
    end
    return 0
  end
  local handlers = { run = cmd_run, list = cmd_list }
  local rok, code, err = pcall(handlers[args.command], args)
  if not rok then
    if core.is_error(code) and code.kind == "InvalidArgument" then
      core.ewrite("abxlua: error: " .. code.message .. "\n")
      return 4
    end
    error(code, 0)
  end
  if code == nil then return usage_error(p, err) end
  return code
end

return M
