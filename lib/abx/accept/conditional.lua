-- abx.accept.conditional: `abxlua accept conditional --provider P --template T --report FILE`,
-- the seed's "Shared Provider conditional acceptance" (seed 000): against an isolated engine
-- (abx.accept.conditional_engine: for the local provider its own `abxlua serve`; its own run id,
-- work directory, HOME and state dir for the CLI), it compares the CLI's and the Lua client's
-- discovery of the provider's six conditional operations (pause, resume, snapshot create / list /
-- restore / delete), pauses with the CLI and resumes with Lua and the reverse, checks that a
-- running process keeps its memory and a file its content over both, snapshots with both, lists,
-- restores clones and checks that clones and source do not see each other's changes, deletes the
-- snapshots, then cleans up what it owns (tag e2e=<run id>) and verifies independently that
-- nothing of it is left (abx.accept.conditional_checks). The JSON report holds each check's name,
-- status, duration and reason, and no credential or resource id (abx.accept.conditional_report).
-- The template is only read: never built, never deleted; an unknown one is refused (exit 4).
-- Exit codes: 0 every check passed or was skipped for a capability the provider lacks, 1 a check
-- failed, 2 interrupted (SIGINT/SIGTERM: cleanup still runs, the report says interrupted), 3
-- internal error, 4 usage error (an existing --report, an unknown provider or template, missing
-- credentials, a provider that refuses the key).
local core = require("abx.core")
local config = require("abx.run.config")
local Tracker = require("abx.run.tracker")
local engine = require("abx.accept.conditional_engine")
local checks = require("abx.accept.conditional_checks")
local report = require("abx.accept.conditional_report")

local M = {}

-- Seconds each check may take (--timeout), and the cleanup.
M.CHECK_TIMEOUT = 180
M.CLEANUP_TIMEOUT = 120
-- The TTL of the sandboxes the run creates, seconds (they are killed long before).
M.SANDBOX_TTL = 300

function M.configure(cmd)
  cmd:option("--provider", "Provider from the config (default: ABX_PROVIDER or the config's).")
  cmd:option("--template", "An existing template admitted to pause and snapshots (read only: "
    .. "never created or deleted).", nil):argname("T")
  cmd:option("--report", "The JSON report to write; must not exist.", nil):argname("FILE")
  cmd:option("--config", "Config file (default: ABX_CONFIG or config/abxlua.yaml).")
  cmd:option("--abx", "The abxlua executable whose CLI is tested (default: this one). Keep it "
    .. "outside a build directory another build can erase."):argname("BIN")
  cmd:option("--timeout", "Seconds per check.", tostring(M.CHECK_TIMEOUT)):argname("S")
  cmd:epilog("Checks: engine, template, " .. (function()
    local n = {}
    for _, c in ipairs(checks.LIST) do n[#n + 1] = c.name end
    return table.concat(n, ", ")
  end)() .. ", owned_cleanup.\nExit codes: 0 passed, 1 a check failed, 2 interrupted, "
    .. "4 usage error.")
end

local function progress(fmt, ...) core.ewrite("conditional: " .. string.format(fmt, ...) .. "\n") end

-- The usage errors of the arguments alone; nil when they are fine.
local function check_args(args)
  if not args.report or args.report == "" then
    return "accept conditional needs --report FILE (a new JSON file)"
  end
  if core.exists(args.report) or core.isdir(args.report) then
    return "--report " .. args.report .. " already exists: give a new file (the runner never "
      .. "overwrites a report)"
  end
  local dir = args.report:match("^(.*)/[^/]*$")
  if args.report:sub(-1) == "/" then return "--report " .. args.report .. ": give a file name" end
  if dir and dir ~= "" and not core.isdir(dir) then
    return "--report " .. args.report .. ": no such directory " .. dir
  end
  if not args.template or not args.template:match("%S") then
    return "accept conditional needs --template T (an existing template admitted to pause and "
      .. "snapshots; the runner never creates or deletes it)"
  end
  local t = tonumber(args.timeout)
  if not t or t <= 0 then return "--timeout must be a positive number of seconds" end
  if args.abx and (not core.exists(args.abx) or core.isdir(args.abx)) then
    return "--abx " .. args.abx .. ": no such executable"
  end
  return nil
end

-- Whether a check can run: its capabilities (and the discovery's verdict on them) and the
-- checks it builds on. Returns nil, or "skipped"/"not_run" and the reason.
local function blocked(s, c)
  for _, need in ipairs(c.needs or {}) do
    if not s.caps[need] then
      return "skipped", string.format("provider %s lacks capability %s", s.provider, need)
    end
  end
  for _, a in ipairs(c.after or {}) do
    local st = s.status_of[a]
    if st ~= "passed" then
      return st == "skipped" and "skipped" or "not_run", "needs check " .. a .. " (" ..
        tostring(st or "not run") .. ")"
    end
  end
  return nil
end

local function handler(e)
  if core.is_error(e) then return e end
  return tostring(e) .. "\n" .. debug.traceback("", 2)
end

-- Runs one check under a deadline; records {name, status, duration, reason, details}.
local function run_check(s, c, i, n)
  local rec = { name = c.name }
  s.checks[#s.checks + 1] = rec
  local status, reason = blocked(s, c)
  if s.interrupted then status, reason = "not_run", "interrupted before it started" end
  if status then
    rec.status, rec.reason, rec.duration = status, reason, 0
  else
    local t0 = core.now()
    local ok, v = core.guard(s.timeout, handler, c.fn, s)
    rec.duration = core.now() - t0
    if ok then
      rec.status, rec.details = "passed", type(v) == "table" and v or nil
    elseif core.is_error(v) and v.kind == "Skipped" then
      rec.status, rec.reason = "skipped", v.message
    elseif core.is_error(v) and v.kind == "Interrupted" then
      rec.status, rec.reason = "interrupted", "interrupted (SIGINT/SIGTERM)"
    else
      rec.status = "failed"
      rec.reason = core.is_error(v) and (v.kind .. ": " .. v.message) or tostring(v)
      if not core.is_error(v) then core.ewrite(core.mask(rec.reason) .. "\n") end
    end
  end
  s.status_of[c.name] = rec.status
  progress("[%d/%d] %s: %s (%.1fs)%s", i, n, c.name, rec.status, rec.duration,
    rec.reason and (" - " .. report.scrub(rec.reason:match("[^\n]*"), s.ids)) or "")
end

-- Kills what the run made and verifies independently that nothing is left (the owned_cleanup
-- check); stops the engine. Not interruptible: it runs to its end after an interrupt too.
local function cleanup(s, e)
  local rec = { name = "owned_cleanup" }
  local t0 = core.now()
  local ok, err = core.guard({ timeout = M.CLEANUP_TIMEOUT, interruptible = false }, handler,
    function()
      local cl = { errors = {} }
      cl.children = e.cli.stopped -- the CLI children killed when their wait ended early
      local killed = 0
      for _, id in ipairs(s.cli_sandboxes) do
        local kok, r = pcall(s.conn.kill, s.conn, id)
        if kok and r then killed = killed + 1 end
        if not kok then cl.errors[#cl.errors + 1] = tostring(r) end
      end
      local r = s.tracker:cleanup(s.conn)
      cl.sandboxes, cl.swept, cl.snapshots = killed + r.tracked, r.swept, r.snapshots
      for _, x in ipairs(r.errors) do cl.errors[#cl.errors + 1] = x end
      s.cleanup = cl
      -- independently: a connection without the tracker's hooks, and the CLI
      checks.verify_cleanup(s, s.conn:with({ hooks = {} }))
      if #cl.errors > 0 then
        core.error("Assertion", 0, "cleanup errors: " .. table.concat(cl.errors, "; "))
      end
    end)
  rec.duration = core.now() - t0
  rec.status = ok and "passed" or "failed"
  if not ok then rec.reason = core.is_error(err) and (err.kind .. ": " .. err.message) or tostring(err) end
  s.checks[#s.checks + 1] = rec
  s.status_of[rec.name] = rec.status
  local failed = false
  for _, c in ipairs(s.checks) do failed = failed or c.status == "failed" end
  local pid = e.info and e.info.pid
  e.stop(failed)
  if pid and os.execute("kill -0 " .. math.tointeger(pid) .. " 2>/dev/null") == true then
    rec.status, rec.reason = "failed", "the run's local platform is still running after its stop"
  end
  if failed and e.info and e.info.log then progress("local platform log: %s", e.info.log) end
  progress("owned_cleanup: %s (%.1fs)%s", rec.status, rec.duration,
    rec.reason and (" - " .. report.scrub(rec.reason:match("[^\n]*"), s.ids)) or "")
end

---The run, inside core.run.
---@return integer exit code
function M.run(o)
  local s = { provider = o.name, provider_kind = o.settings.kind, template = o.template,
    caps = o.settings.capability_set or {}, checks = {}, status_of = {}, ids = {},
    cli_sandboxes = {}, memory = {}, files = {}, available = {}, run_id = o.run_id,
    timeout = o.timeout, ttl = M.SANDBOX_TTL, started = core.now(), started_wall = core.time(),
    config_path = o.config_path }
  s.ids[o.run_id] = "run tag"
  progress("provider %s (%s), template %s, tag e2e=%s", o.name, o.settings.kind, o.template, o.run_id)
  local t0 = core.now()
  local sok, e = pcall(engine.start, { name = o.name, settings = o.settings,
    config_path = o.config_path, run_id = o.run_id, defaults = o.defaults, exe = o.exe })
  if not sok then
    local msg = core.is_error(e) and e.message or tostring(e)
    core.ewrite("abxlua: error: " .. core.mask(msg) .. "\n")
    return (core.is_error(e) and e.kind == "InvalidArgument") and 4 or 3
  end
  s.conn, s.cli = e.conn, e.cli
  local refused = require("abx.run.runner").preflight(e.conn, o.name, e.info)
  if refused then
    core.ewrite("abxlua: error: " .. refused .. "\n")
    e.stop(false)
    return 4
  end
  s.checks[1] = { name = "engine", status = "passed", duration = core.now() - t0 }
  progress("engine: passed (%.1fs)", s.checks[1].duration)
  -- the template is read only: it must exist before anything is created
  local tok, exists = pcall(require("abx.client.template").exists, e.conn, o.template)
  if not tok or not exists then
    core.ewrite(string.format("abxlua: error: unknown template %q on provider %s%s: give an "
      .. "existing template admitted to pause and snapshots (the runner never creates or "
      .. "deletes one)\n", o.template, o.name, tok and "" or (" (" .. tostring(exists) .. ")")))
    e.stop(false)
    return 4
  end
  s.checks[2] = { name = "template", status = "passed", duration = 0 }
  progress("template: passed (%s exists; read only)", o.template)
  s.status_of.engine, s.status_of.template = "passed", "passed"
  s.tracker = Tracker.new(6, o.run_id)
  e.conn.hooks = s.tracker:hooks(function() return nil end)
  core.on_interrupt(function()
    if s.interrupted then return end
    s.interrupted = true
    progress("interrupted: stopping, then cleaning up (interrupt again to exit at once)")
  end)
  core.interrupt_note(string.format("abxlua: interrupted twice: exiting now without cleanup; "
    .. "what this run made carries metadata e2e=%s on provider %s", o.run_id, o.name))
  for i, c in ipairs(checks.LIST) do run_check(s, c, i, #checks.LIST) end
  cleanup(s, e)
  local failed = false
  for _, c in ipairs(s.checks) do
    failed = failed or c.status == "failed"
    s.interrupted = s.interrupted or c.status == "interrupted"
  end
  s.status = s.interrupted and "interrupted" or (failed and "failed" or "passed")
  local rep = report.build(s)
  local wok, werr = pcall(report.write, o.report, rep, s.ids, { e.conn.api_key or nil })
  if not wok then
    core.ewrite("abxlua: error: " .. core.mask(core.is_error(werr) and werr.message or tostring(werr)) .. "\n")
    return 3
  end
  progress("%s: %d passed, %d failed, %d skipped, %d interrupted, %d not run; report %s",
    s.status, rep.counts.passed, rep.counts.failed, rep.counts.skipped, rep.counts.interrupted,
    rep.counts.not_run, o.report)
  if s.interrupted then return 2 end
  return failed and 1 or 0
end

function M.execute(args)
  local err = check_args(args)
  if err then return nil, err end
  local config_path = config.find(args.config)
  local cfg = config.load(config_path)
  local name, settings = config.provider(cfg, args.provider) -- unknown: InvalidArgument, exit 4
  local refusal = engine.refusal(name, settings)
  if refusal then return nil, refusal end
  local exe = args.abx and core.realpath(args.abx) or core.realpath("/proc/self/exe")
  local code = 3
  local ok, errs = core.run(function()
    code = M.run({ name = name, settings = settings, template = args.template,
      report = args.report, config_path = core.realpath(config_path) or config_path,
      run_id = "accept-" .. core.random_hex(6), defaults = cfg.defaults, exe = exe,
      timeout = tonumber(args.timeout) })
  end)
  if not ok then
    core.ewrite("abxlua: " .. tostring(errs) .. " internal task error(s)\n")
    return 3
  end
  return code
end

return M
