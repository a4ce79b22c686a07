-- abx.cmd.run: `abxlua run`: run scenario files against a provider.
local core = require("abx.core")
local config = require("abx.config")
local suite = require("abx.suite")

local M = {}

function M.configure(parser)
  local run = parser:command("run", "Run scenario files (default path: scenarios/).")
  suite.add_selection_options(run)
  run:option("-j --jobs", "Tests to run at once (default: config defaults.jobs)."):convert(tonumber)
  run:option("--provider", "Provider from config/abxlua.yaml (default: ABX_PROVIDER or config).")
  run:option("--timeout", "Seconds per test unless a test sets its own."):convert(tonumber)
  run:flag("-x --exitfirst", "Stop starting tests after the first failure (cleanup still runs).")
  run:flag("-v --verbose", "Show tracebacks of failures.")
end

function M.execute(args)
  local s, err = suite.load(args)
  if not s then return nil, err end
  local cfg = s.config
  if args.timeout then
    if args.timeout <= 0 then return nil, "--timeout must be a positive number of seconds" end
    cfg.defaults.test_timeout = args.timeout
  end
  -- resolve the provider now: an unknown name is a usage error, not a failure inside the run
  local provider_name = config.provider(cfg, args.provider)
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
  local code, record = 3, nil
  local ok, errs = core.run(function()
    code, record = runner.run(s.files, { config = cfg, catalog = s.catalog,
      provider_name = provider_name, jobs = jobs, exitfirst = args.exitfirst, run_id = run_id,
      verbose = args.verbose, selection = s.selection })
  end)
  if not ok then
    core.ewrite("abxlua: " .. errs .. " internal task error(s)\n")
    return 3
  end
  M.last_record = record
  return code
end

return M
