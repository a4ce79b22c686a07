-- abx.run.runner: runs collected tests on the event loop, `jobs` at a time, one task (coroutine) per
-- test, with a deadline per test; classifies outcomes; kills every sandbox at the end (tracked,
-- then swept by tag); keeps the run record, whose counts (abx.run.tally) make the summary, the
-- reports and the exit code; abx.run.console is a sink of its events.
-- Outcomes: passed, failed (the test raised: assertion or platform error), error (collection
-- failed, or a teardown failed: reported beside the test's own outcome), skipped.
local core = require("abx.core")
local fixtures = require("abx.run.fixtures")
local Tracker = require("abx.run.tracker")
local provider = require("abx.run.provider")
local keep = require("abx.run.keep")
local console = require("abx.run.console")
local tally = require("abx.run.tally")
local known_issues = require("abx.run.known_issues")
local templates = require("abx.run.templates")
local capture = require("abx.run.capture")
local trace = require("abx.run.trace")
local reproducer = require("abx.run.reproducer")
local limits = require("abx.run.limits")
local api_call = require("abx.client.api_call")

local M = {}

-- Chunks of the engine's own Lua (embedded lib/abx modules): never a scenario frame.
local LIB_SOURCE = "@lib/abx/"

-- The Lua frames of scenario code on the stack where an error was raised, innermost first: the
-- test's file and the scenario-side helpers it calls (any chunk loaded from a file that is not an
-- embedded lib/abx module); the runner's and the client library's frames are left out.
-- Each: { file, line, own (in the test's file), test_fn (the test function itself), name,
-- namewhat, what, linedefined }.
local function scenario_frames(test)
  local frames = {}
  for level = 2, 250 do
    local info = debug.getinfo(level, "Slnf")
    if not info then break end
    local src = info.source or ""
    if src:sub(1, 1) == "@" and src:sub(1, #LIB_SOURCE) ~= LIB_SOURCE
        and (info.currentline or 0) > 0 then
      frames[#frames + 1] = { file = src:sub(2), line = info.currentline,
        own = src == "@" .. test.file, test_fn = info.func == test.fn, name = info.name,
        namewhat = info.namewhat, what = info.what, linedefined = info.linedefined }
    end
  end
  return frames
end

local function loc(f) return (f.file:gsub("^%./", "")) .. ":" .. f.line end

-- "stack traceback (scenario frames, most recent call first):" and one line per frame, in the
-- words of Lua's own traceback.
local function frames_text(frames, test)
  local out = { "stack traceback (scenario frames, most recent call first):" }
  for _, f in ipairs(frames) do
    local what
    if f.test_fn then
      what = string.format("in test %q", test.name)
    elseif f.namewhat and f.namewhat ~= "" and f.name then
      what = string.format("in %s '%s'", f.namewhat == "global" and "function" or f.namewhat, f.name)
    elseif f.what == "main" then
      what = "in the main chunk"
    else
      what = string.format("in function <%s:%d>", (f.file:gsub("^%./", "")), f.linedefined or 0)
    end
    out[#out + 1] = "  " .. loc(f) .. ": " .. what
  end
  return table.concat(out, "\n")
end

-- The message handler of a test's body: where the failing call is in the test's own file (as
-- pytest shows the test's line), not in a helper module, the client library or the runner.
-- An error raised elsewhere keeps that place as `origin` when it is scenario code (a helper); the
-- library's own lines are left to the full Lua traceback (-vv).
local function message_handler_for(test)
  return function(e)
    local frames = scenario_frames(test)
    local at
    for _, f in ipairs(frames) do
      if f.own then at = loc(f); break end
    end
    at = at or (frames[1] and loc(frames[1]))
    local origin
    if core.is_error(e) then
      local raised = e.where and (e.where:gsub("^%./", ""))
      if at and raised ~= at then
        if raised and not raised:find("^lib/abx/") then origin = raised end
        e.where = at
      elseif raised then
        e.where = raised
      end
    end
    local info = M.describe(e)
    if type(e) == "string" then -- a Lua error's position in a module required as ./x.lua
      info.message = info.message:gsub("^%./", "")
    end
    info.where, info.origin = at, origin
    info.lua_traceback = info.traceback or debug.traceback("", 2) -- every frame (-vv)
    if #frames > 0 then info.traceback = frames_text(frames, test) end
    return info
  end
end

-- The exit code of a run whose only failures are crossed thresholds (k6's ThresholdsHaveFailed,
-- errext/exitcodes.go).
M.EXIT_THRESHOLDS = 99

---Whether the run failed through thresholds alone: failed tests, each with a Threshold failure,
---no errors and a clean cleanup.
---@return boolean
function M.only_thresholds(results, counts, cleanup)
  if counts.failed == 0 or counts.errors > 0 or #cleanup.errors > 0 then return false end
  local crossed = 0
  for _, r in ipairs(results) do
    if r.teardown_errors then return false end
    if r.outcome == "failed" and r.failure and r.failure.kind == "Threshold" then crossed = crossed + 1 end
  end
  return crossed == counts.failed -- an XPASS, a failed template or a Lua error: exit 1
end

---Turns an error value into { error, kind, message, traceback }.
function M.describe(e)
  local info = { error = e }
  if core.is_error(e) then
    info.kind = e.kind
    info.message = (e.where and (e.where .. ": ") or "") .. tostring(e)
    if e.kind ~= "Assertion" then info.traceback = debug.traceback("", 2) end
  else
    info.kind = "LuaError"
    info.message = tostring(e)
    info.traceback = debug.traceback("", 2)
  end
  return info
end

-- Runs one test in the current task. Returns its result record.
local function run_test(test, run)
  local result = { test = test, started = core.now(), outcome = "passed", errors = {} }
  local me = core.current()
  if test.opts.skip then
    result.outcome, result.reason = "skipped", test.opts.skip
    result.duration = 0
    return result
  end
  -- capabilities the provider lacks: skipped before any sandbox exists (names checked at collection)
  for _, c in ipairs(test.opts.requires or {}) do
    if not run.capabilities[c] then
      result.outcome = "skipped"
      result.reason = string.format("provider %s lacks capability %s", run.provider_label or
        run.provider, c)
      result.duration = 0
      return result
    end
  end
  -- a template folder's test: after its template's deploy (the build's time is not the test's)
  if test.recipe and run.templates then
    local e = run.templates:await(test.recipe.name)
    if e.state == "skipped" then
      result.outcome, result.reason, result.duration = "skipped", e.reason, 0
      return result
    elseif e.state == "failed" then
      result.outcome, result.duration = "failed", 0
      result.failure = { error = e.error, kind = e.error.kind, message = templates.failure_message(e) }
      result.no_rerun = true -- the template's build failed: a rerun cannot pass
      return result
    end
    result.started = core.now() -- the test's time starts after its template's deploy
    if run.console then run.console:test_clock(test) end -- and so do its seconds in flight
  end
  local ok_owner, owner = pcall(run.tracker.owner, run.tracker, test.file .. "::" .. test.name,
    test.opts.sandboxes, "test")
  if not ok_owner then
    result.outcome, result.failure = "failed", M.describe(owner)
    result.duration, result.no_rerun = 0, true -- the declaration is wrong: a rerun cannot pass
    return result
  end
  owner.node_id = test.id -- the node id, for the reports' sandbox timeline
  run.owners[me] = owner
  local ctx, state = fixtures.new(test, run)
  -- core.guard, not xpcall: once the deadline passes (or the run is interrupted) the body cannot
  -- catch the error and go on, whether it waits or loops in Lua; a Timeout names the limit, its
  -- source and how to change it (abx.run.limits)
  local ok, info = core.guard(limits.guard_opts(limits.test_limit(test, run)),
    message_handler_for(test), fixtures.body(test, state), ctx)
  if not ok then
    if info.kind == "Skipped" then
      result.outcome, result.reason = "skipped", info.error.message
    else
      result.outcome, result.failure = "failed", info
    end
  end
  result.call_duration = core.now() - result.started
  -- t.measure's statistics and the thresholds evaluated on them (abx.run.measure), for the reports
  local rec = require("abx.run.measure").take(me)
  if rec and #rec.order > 0 then
    result.measurements = {}
    for _, n in ipairs(rec.order) do result.measurements[#result.measurements + 1] = rec[n] end
  end
  result.thresholds = state.thresholds
  local entry = test.opts.known_issue and run.catalog and run.catalog.entries[test.opts.known_issue]
  known_issues.classify(result, entry, run.provider, test.opts.raises)
  local teardown_started = core.now()
  -- --keep-failed: a failed test's sandboxes outlive it (abx.run.keep)
  if run.keep and result.outcome == "failed" then state.keep = test.file .. "::" .. test.name end
  -- the teardown runs to its end after an interrupt too; only its own deadline stops it
  local tok, terrs = core.guard(limits.phase_opts("teardown", "teardown_timeout", run, false),
    M.describe, fixtures.teardown, state, run)
  if not tok then terrs = { { phase = "teardown", message = terrs.message } } end
  run.owners[me] = nil
  run.tracker:finish(owner)
  if #terrs > 0 then result.teardown_errors = terrs end
  result.sandboxes = {}
  for _, id in ipairs(owner.ids or {}) do result.sandboxes[#result.sandboxes + 1] = id end
  result.teardown_duration = core.now() - teardown_started
  result.duration = core.now() - result.started
  return result
end

-- Keeps the trace of `result` when --trace says so (abx.run.trace.kept), and the reproducer of
-- its failure when the error came from a recorded exchange (abx.run.reproducer).
local function keep_trace(result, tr)
  if not tr then return end
  local f = result.failure
  local origin = f and result.outcome == "failed" and trace.origin_of(tr.exchanges, f.error)
  if origin then result.reproducer = reproducer.curl(origin) end
  if trace.kept(result) then result.trace, result.trace_dropped = tr.exchanges, tr.dropped end
end

-- Runs one test with its output captured (abx.run.capture) and its HTTP exchanges recorded
-- (abx.run.trace): the result's `captured`, `trace` and `reproducer` hold them.
local function run_one(test, run)
  local me = core.current()
  capture.begin(me)
  trace.begin(me, test.id)
  local ok, result = pcall(run_test, test, run)
  local captured = capture.finish(me)
  local tr = trace.finish(me)
  if not ok then error(result, 0) end
  result.captured = captured
  keep_trace(result, tr)
  return result
end

-- Whether a test carries the `flaky` marker.
local function flaky(test)
  for _, m in ipairs(test.markers or {}) do
    if m == "flaky" then return true end
  end
  return false
end

-- Whether `r` may be rerun (--reruns): the test is marked flaky, it failed, and no known issue
-- applied (a known issue's xfail, XPASS(strict) or wrong error kind is its strict outcome: a
-- rerun must never change it), nor is the failure one a rerun cannot change.
local function rerunnable(r)
  return r.outcome == "failed" and not r.known_issue and not r.no_rerun and flaky(r.test)
end

---Runs one test, and reruns it while it may be rerun (--reruns N, tests marked flaky), at most
---run.reruns more times. The result is the last attempt's, with `reruns` = the earlier
---attempts { failure, duration, call_duration, teardown_duration, teardown_errors, sandboxes },
---`duration` the time of every attempt, and `sandboxes` those of every attempt.
---@param test table
---@param run table
---@param out table the console (a RERUN line per earlier attempt)
---@param stopped fun(): boolean whether the run is stopping (no more reruns then)
local function run_with_reruns(test, run, out, stopped)
  local started = core.now()
  local r = run_one(test, run)
  local reruns = {}
  while #reruns < (run.reruns or 0) and rerunnable(r) and not stopped() do
    reruns[#reruns + 1] = { failure = r.failure, duration = r.duration,
      call_duration = r.call_duration, teardown_duration = r.teardown_duration,
      teardown_errors = r.teardown_errors, sandboxes = r.sandboxes }
    out:rerun(r)
    out:test_clock(test) -- each attempt has its own limit: its seconds in flight start again
    r = run_one(test, run)
  end
  if #reruns > 0 then
    r.reruns = reruns
    local sbx = {}
    for _, a in ipairs(reruns) do
      r.duration = r.duration + (a.duration or 0)
      for _, id in ipairs(a.sandboxes or {}) do sbx[#sbx + 1] = id end
    end
    for _, id in ipairs(r.sandboxes or {}) do sbx[#sbx + 1] = id end
    r.sandboxes = sbx
  end
  r.run_started = started -- the first attempt's start, before a template deploy (the timeline)
  return r
end

-- The run record that reports are written from (abx.report.*). Results are in collection order.
local function new_record(run, opts, pname, pinfo, tests, collection_errors, started_wall)
  local v, commit = core.version()
  return {
    run_id = run.run_id, provider = pname, flavor = pinfo and pinfo.flavor,
    endpoint = pinfo and pinfo.endpoint,
    engine_version = v, git_commit = commit, started_at = started_wall,
    selection = opts.selection or {}, jobs = opts.jobs, results = {},
    collection_errors = collection_errors, total = #tests,
  }
end

local function finish_record(record, run, counts, cleanup, started)
  table.sort(run.results, function(a, b) return a.test.index < b.test.index end)
  record.results = run.results
  record.counts = counts
  record.cleanup = cleanup
  record.interrupted = run.interrupted or false
  record.duration = core.now() - started
  record.finished_at = core.time()
  record.origin = started -- core.now() at the start: the reports' times are relative to it
  record.timeline = run.tracker and run.tracker.timeline or {}
  return record
end

-- A finished test (after its reruns) joins the run's results and counts, then the console shows
-- it. Returns whether it counts toward --maxfail.
local function add_result(run, out, r)
  run.results[#run.results + 1] = r
  local failure = run.counts:add(r)
  out:result(r, run.counts)
  return failure
end

-- The cleanup of a run that created nothing.
local NOTHING_CREATED = { created = 0, tracked = 0, swept = 0, errors = {} }

-- Every test skipped with one reason (no credentials): no sandbox, no cleanup needed.
local function skip_all(run, out, tests, reason)
  for _, t in ipairs(tests) do
    add_result(run, out, { test = t, outcome = "skipped", reason = reason, duration = 0 })
  end
  out:line("cleanup: nothing to clean (no sandbox was created)")
  return { created = 0, tracked = 0, swept = 0, errors = {} }
end

-- Runs the tests `jobs` at a time. Returns ok, err (an internal error outside the tests).
-- Sets run.interrupted on an interrupt, run.maxfail_reached when --maxfail stopped it.
local function schedule(run, out, tests, opts)
  local stop = false
  core.on_interrupt(function()
    if run.interrupted then return end
    run.interrupted = true
    stop = true
    out:line("abxlua: interrupted: stopping the running tests, then cleaning up "
      .. "(interrupt again to exit at once)")
  end)
  local function stopped() return stop or core.interrupted() ~= 0 end
  return pcall(function()
    local next_i = 1
    local workers, done_workers = math.min(opts.jobs, #tests), 0
    local main = core.current()
    local function worker(slot)
      while not stop and core.interrupted() == 0 and next_i <= #tests do
        local t = tests[next_i]
        next_i = next_i + 1
        out:test_started(t, limits.test_limit(t, run).seconds)
        local r = run_with_reruns(t, run, out, stopped)
        r.worker = slot
        fixtures.test_done(run, t, r) -- its file's last test: the file's fixtures are torn down
        out:test_finished(t)
        if run.templates then run.templates:count(r) end
        -- --maxfail N (-x: 1): a failure is the test's final outcome (after its reruns)
        if add_result(run, out, r) and opts.maxfail and run.counts.failures >= opts.maxfail then
          stop, run.maxfail_reached = true, true
        end
      end
      done_workers = done_workers + 1
      if done_workers == workers then core.unpark(main) end
    end
    for slot = 1, workers do core.spawn(worker, slot) end
    core.park()
  end)
end

---One authenticated call before the first test (a list of one sandbox, with the client's usual
---retries): a refused API key or an unreachable endpoint ends the run with one message, not one
---failure (and 20 s of retries) per test. Other errors are left to the tests.
---@param conn table the run's connection
---@param pname string
---@param pinfo table abx.run.provider.open's info (credential_source, endpoint)
---@return string|nil message when the run must stop (exit 4)
function M.preflight(conn, pname, pinfo)
  local ok, err = pcall(conn.list_page, conn, { limit = 1 })
  if ok then return nil end
  local kind = core.is_error(err) and err.kind or "LuaError"
  local msg = core.is_error(err) and err.message or tostring(err)
  if kind == "Authentication" then
    return string.format("provider %s refused the API key%s: %s (status %s); check the key, "
      .. "or `abxlua doctor --provider %s`", pname, pinfo.credential_source and
      (" from " .. pinfo.credential_source) or "", msg, tostring(err.status), pname)
  elseif kind == "Transport" or kind == "Timeout" then
    return string.format("provider %s is unreachable at %s: %s: %s; check the API URL and the "
      .. "network, or `abxlua doctor --provider %s`", pname, tostring(pinfo.endpoint), kind, msg,
      pname)
  end
  return nil
end

-- One call of M.run, shared by its steps: { opts, run (the runner's state, owner of the run
-- record's counts: run.counts, abx.run.tally), out (the console), tests, collection_errors,
-- started, started_wall, pname, psettings, pinfo, conn, record }.

-- The run's state and console, with output capture and HTTP tracing installed.
local function begin(opts)
  local cfg = opts.config
  local run = { run_id = opts.run_id, defaults = cfg.defaults, results = {}, owners = {},
    catalog = opts.catalog, provider = opts.provider_name, reruns = opts.reruns or 0,
    origin = cfg.origin, config_path = cfg.path, -- origin, config_path: abx.run.limits
    counts = tally.new() }
  local out = console.new({ verbose = opts.verbose, report_chars = opts.report_chars,
    maxfail = opts.maxfail })
  run.console = out
  -- per-test output capture (on unless -s): print / io writes of a test go to its result
  capture.install()
  capture.enabled = opts.capture ~= false
  local started, started_wall = core.now(), core.time()
  -- per-test HTTP exchanges (--trace), relative to the run's start
  trace.install()
  trace.mode, trace.origin = opts.trace or trace.DEFAULT, started
  return { opts = opts, run = run, out = out, started = started, started_wall = started_wall,
    pname = opts.provider_name, retries_before = api_call.retries() }
end

-- The retries the run's calls made (abx.client.api_call: a gateway's bare answer, a 429, a
-- transport failure), for the summary and the reports.
local function retries(s)
  return api_call.retries() - s.retries_before
end

-- The tests of `files` in the order they run, each with its `index`, and the files that failed
-- to collect. --ff (`first`): the last run's failures first, each part in collection order (the
-- reports follow the order the tests ran in, as pytest's do).
local function gather(files, first)
  local tests, collection_errors = {}, {}
  for _, f in ipairs(files) do
    if f.error then collection_errors[#collection_errors + 1] = { path = f.path, error = f.error } end
    for _, t in ipairs(f.tests) do tests[#tests + 1] = t end
  end
  if next(first) then
    local a, b = {}, {}
    for _, t in ipairs(tests) do
      if first[t] then a[#a + 1] = t else b[#b + 1] = t end
    end
    for _, t in ipairs(b) do a[#a + 1] = t end
    tests = a
  end
  for i, t in ipairs(tests) do t.index = i end
  return tests, collection_errors
end

-- The summary's counts: the run record's (abx.run.tally.final).
local function final_counts(s)
  return s.run.counts:final(#s.collection_errors)
end

-- Prints the summary (the very last line) with the run record's counts.
local function summary(s, counts, note)
  s.out:summary({ counts = counts, seconds = core.now() - s.started, note = note,
    results = s.run.results, maxfail_reached = s.run.maxfail_reached, retries = retries(s) })
end

-- The steps of a run, in order. Each takes the call's state; it returns nothing to go on, or how
-- the run ends: { code (the exit code), counts? (printed in the summary already), cleanup?,
-- error?, skip_reason? }, and the run ends there (finish).

-- Nothing to run (an empty selection, or every file failed to collect).
local function nothing_collected(s)
  if #s.tests > 0 then return nil end
  local out, opts, nerr = s.out, s.opts, #s.collection_errors
  local empty = nerr == 0 and opts.empty
  for _, l in ipairs(opts.notes or {}) do out:line(l) end
  if empty and empty.line then out:line(empty.line) end
  out:line("no tests collected" .. (nerr > 0 and " (see the collection errors above)" or ""))
  local counts = final_counts(s)
  summary(s, counts)
  local code = nerr > 0 and 1 or 5
  if empty then code = empty.code end -- the selection is empty on purpose
  return { code = code, counts = counts }
end

-- Resolves the provider (unless `abxlua run` did) and notes what the run and ctx.provider say
-- about it.
local function resolve_provider(s)
  local run, opts = s.run, s.opts
  local pname, psettings = opts.provider_name, opts.provider_settings
  if not psettings then
    pname, psettings = require("abx.run.config").provider(opts.config, opts.provider_name, opts.flavor)
  end
  s.pname, s.psettings = pname, psettings
  -- every child a test starts reads the run's config, provider and flavour (issue 27:
  -- `abxlua sandbox ...` under 19_named_string_array named an unknown provider with --config)
  require("abx.run.config").export(opts.config, pname, psettings.flavor)
  run.provider = pname
  -- a flavoured local run names its flavour wherever the provider is named (abx.run.flavor)
  run.provider_label = psettings.flavor and string.format("%s --flavor %s", pname, psettings.flavor)
    or pname
  run.provider_kind = psettings.kind
  -- ctx.provider (abx.run.fixtures): what a scenario needs to run the abxlua CLI on this run's
  -- provider (19_named_string_array); base_url (and ca_cert with TLS) once a local platform is up
  run.provider_info = { name = pname, kind = psettings.kind, flavor = psettings.flavor,
    tls = psettings.tls == true }
  run.capabilities = psettings.capability_set or {}
  if opts.mutants then -- `abxlua run --mutant`: the local platform lies (abx.run.mutants)
    run.mutants = opts.mutants
    run.serve_args = { "--mutant", opts.mutants }
  end
  if opts.keep_failed then
    -- abx.run.keep: the tags every create adds, and the TTL a failed test's sandboxes get
    run.keep = { ttl = opts.keep_failed.ttl, kept = {}, config_arg = opts.keep_failed.config_arg,
      provider_arg = opts.keep_failed.provider_arg }
  end
end

-- Opens the provider (a local platform starts here). One that cannot open (a local platform that
-- did not start, a bad config) is one line, not a traceback: exit 4 for a usage error
-- (InvalidArgument), else 3.
local function open_provider(s)
  local run, psettings = s.run, s.psettings
  local pok, conn, pinfo
  if run.keep and psettings.kind == "local" then -- a platform that outlives the run
    pok, conn, pinfo = pcall(keep.open_local, s.pname, psettings, run, s.opts.keep_failed.config_path)
  else
    pok, conn, pinfo = pcall(provider.open, s.pname, psettings, run)
  end
  if not pok then
    local e = conn
    local message = core.is_error(e) and e.message or tostring(e)
    s.out:line("abxlua: error: " .. message)
    return { code = (core.is_error(e) and e.kind == "InvalidArgument") and 4 or 3,
      cleanup = NOTHING_CREATED, error = message }
  end
  if pinfo then
    run.provider_info.base_url, run.provider_info.ca_cert = pinfo.base_url, pinfo.ca_cert
  end
  s.conn, s.pinfo = conn, pinfo
  s.record = new_record(run, s.opts, s.pname, pinfo, s.tests, s.collection_errors, s.started_wall)
  local label = run.provider_label .. (run.mutants and (" with mutant " .. run.mutants) or "")
  s.out:header(label, pinfo, run.run_id, #s.tests, s.opts.jobs)
  for _, l in ipairs(s.opts.notes or {}) do s.out:line(l) end
end

-- No credentials: every test is skipped, unless they are required (--require-credentials, on
-- under CI): a CI job that forgot its secret must go red, not green with every test skipped.
local function without_credentials(s)
  if s.conn then return nil end
  local out, pinfo = s.out, s.pinfo
  local missing = table.concat(pinfo.missing, ", ")
  if s.opts.require_credentials then
    out:line(string.format("abxlua: error: provider %s: missing credentials [%s] (--require-"
      .. "credentials, on when CI is set: set them, or pass --no-require-credentials to skip "
      .. "every test instead)", s.pname, missing))
    if pinfo.stop then pinfo.stop(false) end
    out:end_progress() -- the progress task ends with it
    return { code = 4, cleanup = NOTHING_CREATED, error = "missing credentials [" .. missing .. "]" }
  end
  local reason = "E2E skipped: missing credentials [" .. missing .. "]"
  local cleanup = skip_all(s.run, out, s.tests, reason)
  local counts = final_counts(s)
  summary(s, counts, reason)
  return { code = #s.collection_errors > 0 and 1 or 0, counts = counts, cleanup = cleanup,
    skip_reason = reason }
end

-- A refused API key or an unreachable endpoint ends the run before the first test (M.preflight).
local function check_access(s)
  local refused = M.preflight(s.conn, s.pname, s.pinfo)
  if not refused then return nil end
  s.out:line("abxlua: error: " .. refused)
  s.out:end_progress()
  if s.pinfo.stop then s.pinfo.stop(true) end
  if s.pinfo.log then s.out:line("local platform log: " .. s.pinfo.log) end
  return { code = 4, cleanup = NOTHING_CREATED, error = refused }
end

-- The tracker on the connection, the template deploys started, the second interrupt's note.
local function arm(s)
  local run, conn = s.run, s.conn
  run.conn = conn
  run.tracker = Tracker.new(run.defaults.max_sandboxes, run.run_id)
  if run.keep then run.tracker.keep_metadata = keep.metadata end
  -- every create, kill and 404 on the run's connection (and its copies: conn:with) goes through
  -- the tracker: slots follow the sandboxes, snapshots and volumes are deleted at the end
  conn.hooks = run.tracker:hooks(function()
    local task = core.current()
    return task and run.owners[task]
  end)
  -- template folders: their deploys start now, beside the other tests (abx.run.templates)
  run.verbose = s.opts.verbose
  run.templates = templates.new(run, s.out, s.tests)
  run.templates:start()
  core.interrupt_note(string.format("abxlua: interrupted twice: exiting now without cleanup; "
    .. "sandboxes of this run carry metadata e2e=%s on %s", run.run_id, s.pinfo.endpoint or "?"))
end

-- The closing sections after the tests and the cleanup, and the summary.
local function report_end(s, counts, cleanup, clean)
  local run, out, pinfo = s.run, s.out, s.pinfo
  out:cleanup(cleanup, run.tracker)
  for _, l in ipairs(keep.summary(run, pinfo)) do out:line(l) end
  if not clean and pinfo.log then out:line("local platform log: " .. pinfo.log) end
  out:failures(run.results)
  run.templates:table(run.tracker)
  if run.interrupted then
    out:line(string.format("interrupted: %d of %d tests did not run", #s.tests - #run.results,
      #s.tests))
  end
  summary(s, counts)
end

-- Runs the tests, tears the fixtures down, cleans up (tracked sandboxes, then the sweep by tag;
-- helper tasks still blocked are released) and stops a local platform.
local function run_tests(s)
  local run, out, pinfo = s.run, s.out, s.pinfo
  fixtures.prepare(run, s.tests)
  local ok, err = schedule(run, out, s.tests, s.opts)
  if not ok then out:internal_error(err) end
  -- file fixtures still up (tests that did not run) and run fixtures, before the sweep
  fixtures.end_run(run, out)
  local cleanup = run.tracker:cleanup(s.conn)
  cleanup.created = run.tracker.created
  core.abort_all("Internal", "the run ended")
  local counts = final_counts(s)
  local clean = ok and counts.failed == 0 and counts.errors == 0 and #cleanup.errors == 0
  if run.keep and pinfo.stop then
    pinfo.stop(#run.keep.kept) -- abx.run.keep: a local platform stays up for what was kept
  elseif pinfo.stop then
    pinfo.stop(not clean)
  end
  report_end(s, counts, cleanup, clean)
  local code = 0
  if run.interrupted then code = 2
  elseif not ok then code = 3
  elseif not clean then code = M.only_thresholds(run.results, counts, cleanup) and M.EXIT_THRESHOLDS or 1 end
  return { code = code, counts = counts, cleanup = cleanup }
end

local STEPS = { nothing_collected, resolve_provider, open_provider, without_credentials,
  check_access, arm, run_tests }

-- Every run ends here: the run record gets the run's counts (the ones the summary showed) and
-- how it ended.
local function finish(s, ending)
  local record = s.record or new_record(s.run, s.opts, s.pname, nil, s.tests,
    s.collection_errors, s.started_wall)
  record.error, record.skip_reason = ending.error, ending.skip_reason
  finish_record(record, s.run, ending.counts or final_counts(s), ending.cleanup, s.started)
  record.retries = retries(s)
  return ending.code, record
end

---Runs every test of `files` (from abx.run.collect).
---@param files table[] collected files
---@param opts table { config, catalog, provider_name, provider_settings? (abx.run.config.provider's
---  second value: given, the run does not resolve the provider again), flavor?, jobs, maxfail?
---  (stop starting tests after this many failures; -x is 1), reruns? (--reruns N), run_id,
---  verbose, selection, first? ({ [test] = true }: run these first, --ff), notes? (lines after
---  the header), empty? ({ line?, code }: the selection is empty on purpose; exit `code`),
---  require_credentials? (missing credentials: exit 4, not skips), capture (false: -s, test
---  output goes straight to the console) }
---@return integer exit code, table run record (see new_record)
function M.run(files, opts)
  local s = begin(opts)
  s.tests, s.collection_errors = gather(files, opts.first or {})
  for _, f in ipairs(s.collection_errors) do s.out:collection_error(f) end
  for _, step in ipairs(STEPS) do
    local ending = step(s)
    if ending then return finish(s, ending) end
  end
  error("the run's last step returns how it ended") -- run_tests always does
end

return M
