-- abx.run.cmd.mutate: `abxlua mutate [PATH...]`: what a scenario suite would catch. It runs the
-- selection against a truthful local platform (it must be green, else it stops and names the
-- failing tests), then once per mutant of the platform's catalogue (abx.run.mutants: `abxlua
-- serve --mutant`, docs/mutants.md), each run a child `abxlua run ... --mutant NAME --json F`.
-- A mutant is killed when its run fails (a failed test, a crossed threshold, or a cleanup that
-- found sandboxes still alive) and survives when the run passes; the mutation score is killed /
-- mutants that apply (the run's flavour, the provider's capabilities). Output: a table, --json,
-- --html (abx.run.mutate_report).
-- Exit codes: 0 every applicable mutant killed, 1 a mutant survived or a run broke (or the clean
-- run is not green), 2 interrupted, 3 internal error, 4 usage error.
local core = require("abx.core")
local config = require("abx.run.config")
local json = require("abx.json")
local mutants = require("abx.run.mutants")
local process = require("abx.run.process")
local report = require("abx.run.mutate_report")

local M = {}

-- Failures a mutant's run may collect before it stops starting tests (the table names 3).
M.MAXFAIL = 3
-- A whole child run's bound, seconds (its tests have their own deadlines).
M.RUN_TIMEOUT = 3600

function M.configure(parser)
  local cmd = parser:command("mutate", "Measure what a suite catches: run it against the local "
    .. "platform once clean, then once per mutant (a documented lie), and print a mutation score.")
  cmd:argument("paths", "Scenario files or directories (default: scenarios/)."):args("*")
  cmd:option("--mutants", "The mutants: all, or NAME[:N],... (`abxlua serve --mutant list`, "
    .. "docs/mutants.md).", "all"):argname("NAMES")
  cmd:option("-j --jobs", "Tests each run runs at once (default: config defaults.jobs).")
    :argname("N")
  cmd:option("--max-sandboxes", "Live sandboxes each run may hold at once (default: config "
    .. "defaults.max_sandboxes)."):argname("N"):target("max_sandboxes")
  cmd:flag("--slow-first", "Each run starts the files with the longest tests first (as abxlua run "
    .. "--slow-first).")
  cmd:option("-k", "Only tests whose id matches the expression (as abxlua run -k)."):argname("EXPR")
    :target("keyword")
  cmd:option("--provider", "A local provider from the config (default: ABX_PROVIDER or the config's).")
  require("abx.run.suite").add_flavor_option(cmd)
  cmd:option("--config", "Config file (default: ABX_CONFIG or config/abxlua.yaml).")
  cmd:option("--timeout", "Seconds per test in each run unless a test sets its own (a lie that "
    .. "hangs a test ends at this deadline).", "60"):argname("S")
  cmd:option("--json", "Write the result (every mutant's row, the score) to FILE."):argname("FILE")
  cmd:option("--html", "Write the result as one self-contained HTML page to FILE."):argname("FILE")
  cmd:epilog("Exit codes: 0 every applicable mutant killed, 1 a mutant survived, a run broke or "
    .. "the clean run failed, 2 interrupted, 4 usage error.")
end

local function progress(fmt, ...) core.ewrite("mutate: " .. string.format(fmt, ...) .. "\n") end

-- The child `abxlua run` command line of one run (mutant: its NAME[:N], or nil for the clean run).
local function run_argv(o, mutant, json_path)
  local argv = { process.abxlua(), "run", "--json", json_path, "--timeout", tostring(o.timeout),
    "-r", "N" }
  local function opt(flag, v) if v then argv[#argv + 1] = flag; argv[#argv + 1] = tostring(v) end end
  opt("--config", o.config_arg); opt("--provider", o.provider_arg); opt("--flavor", o.flavor)
  opt("-j", o.jobs); opt("-k", o.keyword); opt("--max-sandboxes", o.max_sandboxes)
  if o.slow_first then argv[#argv + 1] = "--slow-first" end
  if mutant then opt("--mutant", mutant); opt("--maxfail", M.MAXFAIL) end
  for _, p in ipairs(o.paths) do argv[#argv + 1] = p end
  return argv
end

-- What a child run's JSON report says: the failing test ids, the counts and the cleanup's
-- problems; nil when there is no readable report.
local function read_report(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  local ok, doc = pcall(json.decode, text)
  if not ok or type(doc) ~= "table" or type(doc.tests) ~= "table" then return nil end
  local failing = {}
  for _, t in ipairs(doc.tests) do
    if t.outcome == "failed" or t.outcome == "xpassed" or (type(t.teardown_errors) == "table"
        and #t.teardown_errors > 0) then
      failing[#failing + 1] = t.id
    end
  end
  local cleanup = type(doc.cleanup) == "table" and doc.cleanup or {}
  return { failing = failing, counts = doc.counts or {}, duration = doc.duration,
    cleanup_errors = type(cleanup.errors) == "table" and cleanup.errors or {} }
end

-- The last non-empty line of `text` (a child's stderr), for an error row.
local function last_line(text)
  local last
  for l in (text or ""):gmatch("[^\n]*%S[^\n]*") do last = l end
  return last or ""
end

-- Where child run `idx` (0: the clean run) writes its --json report.
local function json_path(o, idx) return string.format("%s/run-%02d.json", o.workdir, idx) end

-- One child run. Returns { exit_code, wall, report = read_report(...) | nil, stderr_tail }.
local function child_run(o, mutant, idx)
  local path = json_path(o, idx)
  local t0 = core.now()
  local r = process.run(run_argv(o, mutant, path), { timeout = M.RUN_TIMEOUT,
    env = { NO_COLOR = "1", ABX_PROGRESS_EVERY = false } })
  local tail = last_line(r.stderr)
  return { exit_code = r.exit_code, wall = core.now() - t0, report = read_report(path),
    stderr_tail = tail ~= "" and tail or last_line(r.stdout) }
end

-- The row of one mutant from its child run.
local function judge(sel, run)
  local row = { name = sel.row.name, arg = sel.arg, source = sel.row.source, wire = sel.row.wire,
    layer = sel.row.layer, seconds = run.wall, exit_code = run.exit_code, tests = json.array({}) }
  local rep = run.report
  if (run.exit_code == 1 or run.exit_code == 99) and rep then
    row.status = "killed"
    for i = 1, math.min(M.MAXFAIL, #rep.failing) do row.tests[i] = rep.failing[i] end
    row.caught = #rep.failing
    if #rep.failing == 0 and #rep.cleanup_errors > 0 then
      row.tests[1] = "cleanup: " .. tostring(rep.cleanup_errors[1])
    elseif #rep.failing == 0 and run.exit_code == 1 then
      row.status, row.error = "error", "the run failed without a failing test: " .. run.stderr_tail
    end
  elseif run.exit_code == 0 then
    row.status = "survived"
  else
    row.status = "error"
    row.error = string.format("the run exited %d: %s", run.exit_code, run.stderr_tail)
  end
  return row
end

-- The clean run: green, or the rows of its failures and nil.
local function clean_run(o)
  progress("clean run: %s", table.concat(o.paths, " "))
  local run = child_run(o, nil, 0)
  local rep = run.report
  local res = { seconds = run.wall, exit_code = run.exit_code,
    counts = rep and rep.counts or {}, failing = json.array(rep and rep.failing or {}) }
  if run.exit_code ~= 0 or not rep then
    core.ewrite(string.format("mutate: the clean run is not green (exit %d): a mutation score "
      .. "needs a suite without false reds; fix these first:\n", run.exit_code))
    for _, id in ipairs(res.failing) do core.ewrite("  " .. id .. "\n") end
    if #res.failing == 0 then core.ewrite("  " .. run.stderr_tail .. "\n") end
    return nil, res
  end
  progress("clean run green: %d passed, %d skipped in %.1f s", rep.counts.passed or 0,
    rep.counts.skipped or 0, run.wall)
  return res
end

---The mutation run, inside core.run. Returns the exit code.
---@param o table the checked options (paths, selected, flavor, capabilities, timeout, jobs, ...)
---@return integer
function M.run(o)
  local t0 = core.now()
  local result = { provider = o.provider, flavor = o.flavor or mutants.DEFAULT_FLAVOR,
    paths = o.paths, started_at = os.date("!%Y-%m-%dT%H:%M:%SZ"), mutants = json.array({}) }
  local clean, res = clean_run(o)
  result.clean = clean or res
  if not clean then
    result.seconds = core.now() - t0
    report.write(o, result)
    return 1
  end
  local applicable = {}
  for _, sel in ipairs(o.selected) do
    local why = mutants.not_applicable(sel.row, o.flavor, o.capabilities)
    if why then
      result.mutants[#result.mutants + 1] = { name = sel.row.name, arg = sel.arg,
        source = sel.row.source, wire = sel.row.wire, layer = sel.row.layer,
        status = "n/a", reason = why, tests = json.array({}) }
    else
      applicable[#applicable + 1] = sel
    end
  end
  for i, sel in ipairs(applicable) do
    if o.interrupted then break end
    local row = judge(sel, child_run(o, sel.arg, i))
    result.mutants[#result.mutants + 1] = row
    progress("[%d/%d] %s: %s%s (%.1f s)", i, #applicable, sel.arg, row.status,
      row.status == "killed" and (" by " .. (row.caught or 0) .. " failing test(s)") or "",
      row.seconds)
  end
  result.seconds = core.now() - t0
  result.score = report.score(result.mutants)
  for _, line in ipairs(report.table_lines(result)) do core.write(line .. "\n") end
  if not report.write(o, result) then return 3 end
  if o.interrupted then return 2 end
  return result.score.killed == result.score.applicable and result.score.errors == 0 and 0 or 1
end

-- The options checked, or nil and a usage error.
local function options(args, name, settings)
  if settings.kind ~= "local" then
    return nil, string.format("mutate needs a local provider (abxlua serve is what lies); "
      .. "provider %s is kind %s", name, tostring(settings.kind))
  end
  local timeout = tonumber(args.timeout)
  if not timeout or timeout <= 0 then return nil, "--timeout must be a positive number of seconds" end
  local jobs = args.jobs and math.tointeger(tonumber(args.jobs))
  if args.jobs and (not jobs or jobs < 1) then return nil, "-j must be a positive integer" end
  local slots = args.max_sandboxes and math.tointeger(tonumber(args.max_sandboxes))
  if args.max_sandboxes and (not slots or slots < 1) then
    return nil, "--max-sandboxes must be a positive integer"
  end
  for _, w in ipairs({ "json", "html" }) do
    local err = args[w] and require("abx.run.cmd.run").report_path_error("--" .. w, args[w])
    if err then return nil, err end
  end
  local paths = #args.paths > 0 and args.paths or { "scenarios/" }
  return { paths = paths, timeout = timeout, jobs = jobs, keyword = args.keyword,
    max_sandboxes = slots, slow_first = args.slow_first,
    config_arg = args.config, provider_arg = args.provider, flavor = settings.flavor,
    provider = name, capabilities = settings.capability_set or {}, json = args.json,
    html = args.html }
end

function M.execute(args)
  local cfg = config.load(config.find(args.config))
  local name, settings = config.provider(cfg, args.provider, args.flavor)
  local o, err = options(args, name, settings)
  if not o then return nil, err end
  local code, usage = 3, nil
  local ok, errs = core.run(function()
    local cok, cerr = pcall(function()
      local sel, serr = mutants.select(mutants.catalogue(), args.mutants)
      if not sel then usage = serr return end
      o.selected = sel
    end)
    if not cok then
      core.ewrite("abxlua: error: " .. (core.is_error(cerr) and cerr.message or tostring(cerr)) .. "\n")
      return
    end
    if usage then return end
    -- the child runs' --json reports (read, then removed with the dir)
    o.workdir = core.state_dir() .. "/mutate-" .. core.random_hex(6)
    require("abx.run.report.common").mkdir_p(o.workdir)
    core.on_interrupt(function()
      o.interrupted = true
      progress("interrupted: the run under way stops; no further mutant starts")
    end)
    code = M.run(o)
    for i = 0, #o.selected do os.remove(json_path(o, i)) end
    os.remove(o.workdir)
  end)
  if usage then return nil, usage end
  if not ok then
    core.ewrite("abxlua: " .. tostring(errs) .. " internal task error(s)\n")
    return 3
  end
  return code
end

return M
