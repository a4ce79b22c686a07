-- abx.run.cmd.run: `abxlua run`: run scenario files against a provider.
local core = require("abx.core")
local config = require("abx.run.config")
local suite = require("abx.run.suite")
local console = require("abx.run.console")

local M = {}

function M.configure(parser)
  local run = parser:command("run", "Run scenario files (default path: scenarios/).")
  suite.add_selection_options(run)
  run:option("-j --jobs", "Tests to run at once (default: config defaults.jobs)."):convert(tonumber)
  run:option("--provider", "Provider from config/abxlua.yaml (default: ABX_PROVIDER or config).")
  suite.add_flavor_option(run)
  run:option("--timeout", "Seconds per test unless a test sets its own."):convert(tonumber)
  run:flag("--require-credentials", "Missing credentials of a remote provider end the run with "
    .. "exit 4 naming the variables, instead of skipping every test (the default when CI is set).")
    :target("require_credentials")
  run:flag("--no-require-credentials", "Skip every test when credentials are missing (exit 0), "
    .. "also when CI is set."):target("no_require_credentials")
  run:flag("-x --exitfirst", "Stop starting tests after the first failure (cleanup still runs).")
  run:flag("-v --verbose", "-v: tracebacks of failures; -vv: also every HTTP request and answer "
    .. "(masked) on stderr; -vvv: with body excerpts."):count("0-3")
  run:option("-r", "Short test summary of these outcomes: f failed, E error, s skipped, "
    .. "x xfailed, X xpassed, p passed, a all but passed, A all, N none.", "fE"):target("report_chars")
  suite.add_shard_option(run)
  run:option("--junit", "Write a JUnit XML report to FILE."):argname("FILE")
  run:option("--json", "Write a JSON report to FILE."):argname("FILE")
  run:option("--tap", "Write a TAP version 13 report to FILE."):argname("FILE")
  run:option("--evidence", "Write a verification record DIR/<date>-<topic>.md (DIR is created)."):argname("DIR")
  run:option("--evidence-topic", "Topic of the --evidence file name.", "e2e-run"):argname("NAME")
    :target("evidence_topic")
end

-- The reports asked for, in the order they are written: { flag, module, path }.
local REPORTS = { { "--junit", "junit" }, { "--json", "json" }, { "--tap", "tap" } }

-- A usage error when a report file cannot be created where asked (checked before the run).
local function check_report_paths(args)
  for _, rep in ipairs(REPORTS) do
    local path = args[rep[2]]
    if path then
      local dir = path:match("^(.*)/[^/]*$")
      if path:sub(-1) == "/" or core.isdir(path) then
        return rep[1] .. " " .. path .. ": is a directory; give a file name"
      end
      if dir and dir ~= "" and not core.isdir(dir) then
        return rep[1] .. " " .. path .. ": no such directory " .. dir
      end
    end
  end
  if args.evidence_topic and not args.evidence_topic:match("^[%w][%w._-]*$") then
    return "--evidence-topic may only contain letters, digits, '.', '_' and '-'"
  end
  return nil
end

-- The command line as it could be typed again (for the evidence record).
local function command_line(args)
  local function q(s)
    s = tostring(s)
    if s:match("^[%w@%%+=:,./_-]+$") then return s end
    return "'" .. s:gsub("'", "'\\''") .. "'"
  end
  local parts = { "abxlua", "run" }
  local function opt(flag, v) if v ~= nil then parts[#parts + 1] = flag .. " " .. q(v) end end
  opt("--config", args.config); opt("--provider", args.provider)
  opt("--flavor", args.flavor); opt("-j", args.jobs)
  opt("-k", args.keyword); opt("-m", args.markexpr); opt("--profile", args.profile)
  opt("--shard", args.shard); opt("--timeout", args.timeout)
  if args.exitfirst then parts[#parts + 1] = "-x" end
  if args.verbose > 0 then parts[#parts + 1] = "-" .. string.rep("v", args.verbose) end
  if args.report_chars ~= "fE" then opt("-r", args.report_chars) end
  opt("--junit", args.junit); opt("--json", args.json); opt("--tap", args.tap)
  opt("--evidence", args.evidence)
  if args.evidence and args.evidence_topic ~= "e2e-run" then opt("--evidence-topic", args.evidence_topic) end
  for _, p in ipairs(args.paths) do parts[#parts + 1] = q(p) end
  return table.concat(parts, " ")
end

-- Writes every report asked for; a report that cannot be written is named on stderr and makes the
-- run exit 3 (the others are still written).
local function write_reports(args, record, code)
  local failed = false
  local function try(what, fn)
    local ok, err = pcall(fn)
    if not ok then
      failed = true
      local msg = core.is_error(err) and err.message or tostring(err)
      core.ewrite("abxlua: " .. what .. ": " .. msg .. "\n")
    end
  end
  for _, rep in ipairs(REPORTS) do
    local path = args[rep[2]]
    if path then try(rep[1], function() require("abx.run.report." .. rep[2]).write(path, record) end) end
  end
  if args.evidence then
    try("--evidence", function()
      local path = require("abx.run.report.evidence").write(args.evidence, record,
        { topic = args.evidence_topic, command = command_line(args) })
      core.ewrite("abxlua: evidence record written to " .. path .. "\n")
    end)
  end
  if failed and code ~= 2 then return 3 end
  return code
end

function M.execute(args)
  local chars_ok, chars_err = console.report_chars(args.report_chars)
  if not chars_ok then return nil, chars_err end
  local perr = check_report_paths(args)
  if perr then return nil, perr end
  local s, err = suite.load(args)
  if not s then return nil, err end
  local cfg = s.config
  if args.timeout then
    if args.timeout <= 0 then return nil, "--timeout must be a positive number of seconds" end
    cfg.defaults.test_timeout = args.timeout
  end
  -- resolve the provider now: an unknown name is a usage error, not a failure inside the run
  local provider_name, psettings = config.provider(cfg, args.provider, args.flavor)
  -- a provider this build cannot speak to, or a missing ${region}, is a config error (exit 4)
  -- before anything starts, not a failure inside the run
  require("abx.run.provider").preflight(provider_name, psettings)
  local jobs = args.jobs or cfg.defaults.jobs
  if jobs < 1 or jobs ~= math.floor(jobs) then return nil, "-j must be a positive integer" end
  local lookup = require("abx.run.provider").lookup -- the environment, then .env
  require("abx.run.provider").warn_unknown_dotenv(cfg)
  local env_ttl = lookup("E2E_SANDBOX_TTL")
  if env_ttl then
    cfg.defaults.sandbox_ttl = tonumber(env_ttl)
    if not cfg.defaults.sandbox_ttl or cfg.defaults.sandbox_ttl <= 0 then
      return nil, "E2E_SANDBOX_TTL must be a positive number of seconds, got " .. env_ttl
    end
  end
  local run_id = lookup("E2E_RUN_ID") or core.random_hex(6)
  if not run_id:match("^[%w%-_]+$") then
    return nil, "E2E_RUN_ID may only contain letters, digits, '-' and '_'"
  end
  if args.require_credentials and args.no_require_credentials then
    return nil, "--require-credentials and --no-require-credentials contradict each other"
  end
  local ci = core.getenv("CI")
  local require_credentials = args.require_credentials or (not args.no_require_credentials
    and ci ~= nil and ci ~= "" and ci ~= "0" and ci:lower() ~= "false")
  local runner = require("abx.run.runner")
  console.configure({ report_chars = args.report_chars, exitfirst = args.exitfirst })
  local code, record = 3, nil
  if args.verbose >= 2 then core.set_trace(args.verbose - 1) end
  local ok, errs = core.run(function()
    code, record = runner.run(s.files, { config = cfg, catalog = s.catalog,
      provider_name = provider_name, provider_settings = psettings, jobs = jobs, exitfirst = args.exitfirst,
      run_id = run_id,
      verbose = args.verbose > 0, selection = s.selection, report_chars = args.report_chars,
      require_credentials = require_credentials })
  end)
  if not ok then
    core.ewrite("abxlua: " .. errs .. " internal task error(s)\n")
    return 3
  end
  M.last_record = record
  if record then code = write_reports(args, record, code) end
  return code
end

return M
