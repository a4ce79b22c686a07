-- abx.run.cmd.run: `abxlua run`: run scenario files against a provider.
local core = require("abx.core")
local config = require("abx.run.config")
local suite = require("abx.run.suite")
local console = require("abx.run.console")
local annotations = require("abx.run.report.annotations")

local M = {}

function M.configure(parser)
  local run = parser:command("run", "Run scenario files (default path: scenarios/).")
  suite.add_selection_options(run)
  run:option("-j --jobs", "Tests to run at once (default: config defaults.jobs)."):convert(tonumber)
  run:option("--max-sandboxes", "Live sandboxes the run may hold at once; fixtures wait for a "
    .. "slot (default: config defaults.max_sandboxes)."):argname("N"):convert(tonumber)
    :target("max_sandboxes")
  run:option("--provider", "Provider from config/abxlua.yaml (default: ABX_PROVIDER or config).")
  suite.add_flavor_option(run)
  run:option("--timeout", "Seconds per test unless a test sets its own."):convert(tonumber)
  run:option("--mutant", "Run against a local platform that lies in these documented ways "
    .. "(NAME[:N],...: `abxlua serve --mutant list`, docs/mutants.md); local providers only. "
    .. "`abxlua mutate` runs a selection once per mutant."):argname("NAMES")
  run:flag("--require-credentials", "Missing credentials of a remote provider end the run with "
    .. "exit 4 naming the variables, instead of skipping every test (the default when CI is set).")
    :target("require_credentials")
  run:flag("--no-require-credentials", "Skip every test when credentials are missing (exit 0), "
    .. "also when CI is set."):target("no_require_credentials")
  run:flag("-x --exitfirst", "Stop starting tests after the first failure (cleanup still runs); "
    .. "--maxfail 1.")
  run:option("--maxfail", "Stop starting tests after N failures (failed, XPASS(strict) or a "
    .. "teardown error; cleanup still runs). 0: no limit."):argname("N"):convert(tonumber)
  suite.add_cache_options(run)
  run:option("--reruns", "Rerun a failing test marked flaky up to N times; it is reported as "
    .. "rerun, and passes if an attempt passes. Never a known issue's test."):argname("N")
    :convert(tonumber)
  run:option("--durations", "Show the N slowest test phases (call, teardown) at the end; 0: all.")
    :argname("N"):convert(tonumber)
  run:option("--durations-min", "With --durations: leave out phases shorter than S seconds "
    .. "(default 0.005)."):argname("S"):convert(tonumber):target("durations_min")
  run:flag("-v --verbose", "-v: the scenario traceback of every failure; -vv: also the full Lua "
    .. "traceback and every HTTP request and answer (masked) on stderr; -vvv: with body excerpts.")
    :count("0-3")
  run:flag("-s --no-capture", "Do not capture the output of tests (print, io.write, io.stdout, "
    .. "io.stderr): write it to the console as it comes (by default it is kept per test, shown "
    .. "under its failure and written to the JUnit report)."):target("no_capture")
  run:option("-r", "Short test summary of these outcomes: f failed, E error, s skipped, "
    .. "x xfailed, X xpassed, p passed, R rerun, a all but passed, A all, N none.", "fE"):target("report_chars")
  run:flag("--keep-failed", "Leave the sandboxes of failed tests alive for a look (TTL: config "
    .. "defaults.keep_failed_ttl, tagged abx-kept=1); the end of the run says how to reach and "
    .. "remove them (docs/debugging.md).  Config: defaults.keep_failed_sandboxes."):target("keep_failed")
  suite.add_shard_option(run)
  run:option("--trace", "Which tests' HTTP exchanges (and failures' curl reproducers) the reports "
    .. "keep: off, on (every test) or retain-on-failure (failed, xpassed and teardown-error "
    .. "tests; default: config defaults.trace). docs/reports/traces.md."):argname("MODE")
  run:option("--junit", "Write a JUnit XML report to FILE."):argname("FILE")
  run:option("--json", "Write a JSON report to FILE."):argname("FILE")
  run:option("--tap", "Write a TAP version 13 report to FILE."):argname("FILE")
  run:option("--html", "Write one self-contained HTML report to FILE (no network needed: open it "
    .. "from disk or as a CI artifact; docs/reports/html.md)."):argname("FILE")
  run:option("--ctrf", "Write a CTRF JSON report (Common Test Report Format, ctrf.io) to FILE.")
    :argname("FILE")
  run:option("--evidence", "Write a verification record DIR/<date>-<topic>.md (DIR is created)."):argname("DIR")
  run:option("--evidence-topic", "Topic of the --evidence file name.", "e2e-run"):argname("NAME")
    :target("evidence_topic")
end

-- The reports asked for, in the order they are written: { flag, module }; `doc`: the writer
-- takes the JSON report's table (abx.run.report.json.document), not the run record (the HTML
-- report renders that table, as merge-reports does from JSON files).
local REPORTS = { { "--junit", "junit" }, { "--json", "json" }, { "--tap", "tap" },
  { "--html", "html", doc = true }, { "--ctrf", "ctrf", doc = true } }

---A usage error when report file `path` (given to `flag`) cannot be created there, else nil.
---@param flag string "--junit", ...
---@param path string
---@return string|nil
function M.report_path_error(flag, path)
  local dir = path:match("^(.*)/[^/]*$")
  if path:sub(-1) == "/" or core.isdir(path) then
    return flag .. " " .. path .. ": is a directory; give a file name"
  end
  if dir and dir ~= "" and not core.isdir(dir) then
    return flag .. " " .. path .. ": no such directory " .. dir
  end
  return nil
end

-- A usage error when a report file cannot be created where asked (checked before the run).
local function check_report_paths(args)
  for _, rep in ipairs(REPORTS) do
    local path = args[rep[2]]
    local err = path and M.report_path_error(rep[1], path)
    if err then return err end
  end
  if args.evidence_topic and not args.evidence_topic:match("^[%w][%w._-]*$") then
    return "--evidence-topic may only contain letters, digits, '.', '_' and '-'"
  end
  return nil
end

---One word of a shell command line: `s` as it is when it needs no quoting, else single-quoted.
---@param s any
---@return string
function M.shell_word(s)
  s = tostring(s)
  if s:match("^[%w@%%+=:,./_-]+$") then return s end
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- The command line as it could be typed again (for the evidence record).
local function command_line(args)
  local q = M.shell_word
  local parts = { "abxlua", "run" }
  local function opt(flag, v) if v ~= nil then parts[#parts + 1] = flag .. " " .. q(v) end end
  opt("--config", args.config); opt("--provider", args.provider)
  opt("--flavor", args.flavor); opt("-j", args.jobs); opt("--max-sandboxes", args.max_sandboxes)
  opt("-k", args.keyword); opt("-m", args.markexpr); opt("--profile", args.profile)
  opt("--shard", args.shard); opt("--timeout", args.timeout); opt("--mutant", args.mutant)
  if args.exitfirst then parts[#parts + 1] = "-x" end
  if args.keep_failed then parts[#parts + 1] = "--keep-failed" end
  opt("--maxfail", args.maxfail); opt("--reruns", args.reruns); opt("--durations", args.durations)
  opt("--durations-min", args.durations_min)
  if args.lf then parts[#parts + 1] = "--lf" end
  if args.ff then parts[#parts + 1] = "--ff" end
  opt("--lfnf", args.lfnf)
  if args.cache_clear then parts[#parts + 1] = "--cache-clear" end
  if args.slow_first then parts[#parts + 1] = "--slow-first" end
  if args.shard_strict then parts[#parts + 1] = "--shard-strict" end
  for _, d in ipairs(args.shard_durations or {}) do opt("--shard-durations", d) end
  if args.no_capture then parts[#parts + 1] = "-s" end
  if args.verbose > 0 then parts[#parts + 1] = "-" .. string.rep("v", args.verbose) end
  if args.report_chars ~= "fE" then opt("-r", args.report_chars) end
  opt("--trace", args.trace)
  opt("--junit", args.junit); opt("--json", args.json); opt("--tap", args.tap)
  opt("--html", args.html); opt("--ctrf", args.ctrf); opt("--evidence", args.evidence)
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
  local doc
  for _, rep in ipairs(REPORTS) do
    local path = args[rep[2]]
    if path then
      try(rep[1], function()
        if rep.doc then doc = doc or require("abx.run.report.json").document(record) end
        require("abx.run.report." .. rep[2]).write(path, rep.doc and doc or record)
      end)
    end
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

-- A whole number >= 0 given to `flag`, or a usage error.
local function count_arg(flag, v)
  if v ~= nil and (math.tointeger(v) == nil or v < 0) then
    return string.format("%s must be a whole number >= 0, got %s", flag, tostring(v))
  end
  return nil
end

-- Checks --maxfail, --reruns, --durations and --durations-min; returns the failure limit
-- (nil: none) and the flag that set it, or nil, nil and a usage error.
local function limits(args)
  for _, o in ipairs({ { "--maxfail", args.maxfail }, { "--reruns", args.reruns },
    { "--durations", args.durations } }) do
    local err = count_arg(o[1], o[2])
    if err then return nil, nil, err end
  end
  if args.durations_min and args.durations_min < 0 then
    return nil, nil, "--durations-min must be a number of seconds >= 0"
  end
  if args.durations_min and not args.durations then
    return nil, nil, "--durations-min only goes with --durations N"
  end
  if args.exitfirst and args.maxfail and args.maxfail ~= 1 then
    return nil, nil, "-x is --maxfail 1: give -x or --maxfail " .. math.tointeger(args.maxfail)
  end
  if args.exitfirst then return 1, "-x" end
  if args.maxfail and args.maxfail > 0 then
    local n = math.tointeger(args.maxfail)
    return n, "--maxfail " .. n
  end
  return nil, nil
end

-- --timeout and --max-sandboxes override the config's defaults. Returns a usage error or nil.
local function override_defaults(args, cfg)
  if args.timeout then
    if args.timeout <= 0 then return "--timeout must be a positive number of seconds" end
    cfg.defaults.test_timeout = args.timeout
    cfg.origin.test_timeout = "--timeout" -- named in a deadline failure (abx.run.limits)
  end
  if args.max_sandboxes then
    if args.max_sandboxes < 1 or args.max_sandboxes ~= math.floor(args.max_sandboxes) then
      return "--max-sandboxes must be a positive integer, got " .. tostring(args.max_sandboxes)
    end
    cfg.defaults.max_sandboxes = math.tointeger(args.max_sandboxes)
  end
  return nil
end

-- What the environment (then .env) sets: E2E_SANDBOX_TTL (into the config's defaults),
-- E2E_RUN_ID, and CI (--require-credentials unless --no-require-credentials). Returns the run id
-- and whether credentials are required, or nil, nil and a usage error.
local function from_environment(args, cfg)
  local lookup = require("abx.run.provider").lookup -- the environment, then .env
  require("abx.run.provider").warn_unknown_dotenv(cfg)
  local env_ttl = lookup("E2E_SANDBOX_TTL")
  if env_ttl then
    cfg.defaults.sandbox_ttl = tonumber(env_ttl)
    if not cfg.defaults.sandbox_ttl or cfg.defaults.sandbox_ttl <= 0 then
      return nil, nil, "E2E_SANDBOX_TTL must be a positive number of seconds, got " .. env_ttl
    end
  end
  local run_id = lookup("E2E_RUN_ID") or core.random_hex(6)
  if not run_id:match("^[%w%-_]+$") then
    return nil, nil, "E2E_RUN_ID may only contain letters, digits, '-' and '_'"
  end
  if args.require_credentials and args.no_require_credentials then
    return nil, nil, "--require-credentials and --no-require-credentials contradict each other"
  end
  local ci = core.getenv("CI")
  local require_credentials = args.require_credentials or (not args.no_require_credentials
    and ci ~= nil and ci ~= "" and ci ~= "0" and ci:lower() ~= "false")
  return run_id, require_credentials
end

-- After the run: GitHub Actions annotations, the cache (--lf, --ff) and the report files.
-- Returns the exit code (write_reports may change it).
local function after_run(args, s, record, code)
  M.last_record = record
  if record and annotations.enabled(core.getenv) then
    -- GitHub Actions: each failure as an ::error workflow command (abx.run.report.annotations)
    for _, line in ipairs(annotations.lines(require("abx.run.report.json").document(record))) do
      core.write(line .. "\n")
    end
  end
  if record then
    require("abx.run.cache").update(s.root, record, s.collected)
    code = write_reports(args, record, code)
  end
  return code
end

---A usage error for `--mutant NAMES` on provider `name` (settings `p`), or nil: a local provider,
---mutant names of serve's catalogue (abx.run.mutants), each applying to the run's flavour.
---@param names string
---@param name string
---@param p table
---@return string|nil
function M.check_mutants(names, name, p)
  if p.kind ~= "local" then
    return string.format("--mutant needs a local provider (abxlua serve is what lies); provider "
      .. "%s is kind %s", name, tostring(p.kind))
  end
  if names == "all" then
    return "--mutant all would make every lie at once; name the mutants (abxlua mutate runs "
      .. "each in turn)"
  end
  local mutants = require("abx.run.mutants")
  local err
  local ok, errs = core.run(function()
    local cok, cerr = pcall(function()
      local sel, serr = mutants.select(mutants.catalogue(), names)
      err = serr
      for _, m in ipairs(sel or {}) do
        local off = mutants.off_flavor(m.row, p.flavor)
        if off then err = err or string.format("--mutant %s: %s", m.row.name, off) end
      end
    end)
    if not cok then err = "--mutant: " .. (core.is_error(cerr) and cerr.message or tostring(cerr)) end
  end)
  if not ok then return "--mutant: " .. tostring(errs) .. " internal task error(s)" end
  return err
end

function M.execute(args)
  local chars_ok, chars_err = console.report_chars(args.report_chars)
  if not chars_ok then return nil, chars_err end
  local maxfail, maxfail_flag, lerr = limits(args)
  if lerr then return nil, lerr end
  local perr = check_report_paths(args)
  if perr then return nil, perr end
  local pok, perr2 = pcall(console.progress_every) -- a bad ABX_PROGRESS_EVERY: a usage error
  if not pok then return nil, core.is_error(perr2) and perr2.message or tostring(perr2) end
  local s, err = suite.load(args)
  if not s then return nil, err end
  -- a known issue lacking a text of known_issues.languages stops the runs that use it, only
  local kprob = require("abx.run.known_issues").problems_used(s.catalog, s.files)
  if #kprob > 0 then core.error("InvalidArgument", 0, table.concat(kprob, "\nabxlua: error: ")) end
  local cfg = s.config
  local derr = override_defaults(args, cfg)
  if derr then return nil, derr end
  -- resolve the provider now: an unknown name is a usage error, not a failure inside the run
  local provider_name, psettings = config.provider(cfg, args.provider, args.flavor)
  -- a provider this build cannot speak to, or a missing ${region}, is a config error (exit 4)
  -- before anything starts, not a failure inside the run
  require("abx.run.provider").preflight(provider_name, psettings)
  if args.trace then
    local tok, terr = pcall(require("abx.run.trace").check_mode, args.trace, "--trace")
    if not tok then return nil, terr.message end
  end
  local trace_mode = args.trace or cfg.defaults.trace
  local jobs = args.jobs or cfg.defaults.jobs
  if jobs < 1 or jobs ~= math.floor(jobs) then return nil, "-j must be a positive integer" end
  local run_id, require_credentials, eerr = from_environment(args, cfg)
  if not run_id then return nil, eerr end
  local keep_failed
  if args.keep_failed or cfg.defaults.keep_failed_sandboxes then
    -- abx.run.keep: the printed commands name the provider and config only when not the defaults
    keep_failed = { ttl = math.tointeger(cfg.defaults.keep_failed_ttl), config_path = cfg.path,
      config_arg = args.config, provider_arg = provider_name ~= cfg.provider and provider_name or nil }
  end
  local merr = args.mutant and M.check_mutants(args.mutant, provider_name, psettings)
  if merr then return nil, merr end
  local runner = require("abx.run.runner")
  console.configure({ report_chars = args.report_chars, maxfail = maxfail,
    maxfail_flag = maxfail_flag, durations = args.durations and math.tointeger(args.durations),
    durations_min = args.durations_min, verbose_level = args.verbose,
    verbosity = args.verbose })
  local code, record = 3, nil
  if args.verbose >= 2 then core.set_trace(args.verbose - 1) end
  local ok, errs = core.run(function()
    code, record = runner.run(s.files, { config = cfg, catalog = s.catalog,
      provider_name = provider_name, provider_settings = psettings, jobs = jobs, maxfail = maxfail,
      run_id = run_id, verbose = args.verbose > 0, selection = s.selection,
      report_chars = args.report_chars, reruns = args.reruns and math.tointeger(args.reruns) or 0,
      first = s.first, notes = s.notes, empty = s.empty, require_credentials = require_credentials,
      capture = not args.no_capture, keep_failed = keep_failed, trace = trace_mode,
      mutants = args.mutant })
  end)
  if not ok then
    core.ewrite("abxlua: " .. errs .. " internal task error(s)\n")
    return 3
  end
  return after_run(args, s, record, code)
end

return M
