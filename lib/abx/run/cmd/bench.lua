-- abx.run.cmd.bench: `abxlua bench`, the field's measurement of a sandbox provider on any
-- configured provider (the local platform by default, each --flavor of it, a cloud with
-- credentials): time to interactive in ComputeSDK's three modes (abx.bench.tti), the latency of
-- each sandbox operation (abx.bench.ops), statistics and ComputeSDK's composite score
-- (abx.bench.stats), thresholds k6's way (abx.bench.threshold), a table, --json and --compare
-- (abx.bench.output). Every sandbox it creates is tagged e2e=<run id>, tracked and killed, and
-- the provider is swept by that tag at the end, as after `abxlua run`.
-- Exit codes: 0 measured (and every threshold held), 1 nothing succeeded or the cleanup failed,
-- 2 interrupted, 3 internal error, 4 usage error (an unknown mode, metric or provider, missing
-- credentials, an unreadable --compare file), 99 thresholds alone were crossed (k6's code).
local core = require("abx.core")
local config = require("abx.run.config")
local provider = require("abx.run.provider")
local Tracker = require("abx.run.tracker")
local tti = require("abx.bench.tti")
local ops = require("abx.bench.ops")
local threshold = require("abx.bench.threshold")
local output = require("abx.bench.output")
local json = require("abx.json")

local M = {}

M.EXIT_THRESHOLDS = 99
-- The TTL of the sandboxes the bench creates, seconds (each is killed right after its sample).
M.SANDBOX_TTL = 300

---Adds the `bench` command to the abxlua argparse parser (abx.run.cli).
---@param parser table
function M.configure(parser)
  local cmd = parser:command("bench", "Measure a provider: time to interactive (sequential, "
    .. "staggered, burst), each operation's latency, thresholds that fail CI.")
  cmd:option("--provider", "Provider from the config (default: ABX_PROVIDER or the config's).")
  require("abx.run.suite").add_flavor_option(cmd)
  cmd:option("--config", "Config file (default: ABX_CONFIG or config/abxlua.yaml).")
  cmd:option("-n", "Time-to-interactive samples per mode.", "10"):argname("N")
  cmd:option("--mode", "The modes, comma-separated: sequential (one at a time), staggered (one "
    .. "every --stagger-ms), burst (all at once).", "sequential,staggered,burst"):argname("LIST")
  cmd:option("--stagger-ms", "Milliseconds between the starts of the staggered mode's samples.",
    "200"):argname("MS"):target("stagger_ms")
  cmd:option("--template", "Template of every sandbox (default: the config's defaults.template).")
    :argname("T")
  cmd:option("--command", "The first command whose success ends a time-to-interactive sample.",
    "true"):argname("CMD"):target("first_command")
  cmd:option("--iterations", "Samples of each operation (create, connect, command, 1 MiB write "
    .. "and read, list of 100 entries, pause, resume, kill).", "10"):argname("K")
  cmd:flag("--no-ops", "Measure time to interactive only, not the operations."):target("no_ops")
  cmd:option("--timeout", "Seconds one sample may take before it counts as failed.", "120"):argname("S")
  cmd:option("--settle", "Seconds to wait once the provider is up, before the first sample (a "
    .. "local platform's warm pool fills meanwhile).", "0"):argname("S")
  cmd:option("--threshold", "A criterion METRIC OP VALUE, e.g. 'tti.sequential.p95<200' (ms), "
    .. "'success>=0.99'; a crossed one exits 99. Repeatable."):count("*"):argname("EXPR")
  cmd:option("--segment", "Run the K-th of N equal parts of the benchmark (k6-operator's execution "
    .. "segments), for N machines; `abxlua merge-reports` joins their --json results."):argname("K/N")
  cmd:option("--json", "Write the result, samples included, to FILE."):argname("FILE")
  cmd:option("--html", "Write a page of the result with a chart of every mode's samples and the "
    .. "operations to FILE."):argname("FILE")
  cmd:option("--compare", "Print the change against an earlier --json FILE."):argname("FILE")
  cmd:epilog("Metrics of --threshold: success; tti.<mode>.<stat> (stat: "
    .. table.concat(threshold.TTI_STATS, ", ") .. "); ops.<operation>.<stat> (operation: "
    .. table.concat(ops.NAMES, ", ") .. "; stat: " .. table.concat(threshold.OP_STATS, ", ")
    .. "). Times in ms, rates 0..1, scores 0..100 (ComputeSDK's composite).\n"
    .. "Exit codes: 0 measured and every threshold held, 1 nothing succeeded or cleanup failed, "
    .. "2 interrupted, 4 usage error, 99 a threshold was crossed.")
end

local function progress(fmt, ...) core.ewrite("bench: " .. string.format(fmt, ...) .. "\n") end

local function whole(v, name, min)
  local n = math.tointeger(tonumber(v))
  if not n or n < min then
    return nil, string.format("%s must be a whole number >= %d, got '%s'", name, min, tostring(v))
  end
  return n
end

-- The modes of --mode, or nil and a usage error naming the valid ones.
local function modes_of(text)
  local list, seen = {}, {}
  for m in text:gmatch("[^,%s]+") do
    local known = false
    for _, v in ipairs(threshold.MODES) do known = known or v == m end
    if not known then
      return nil, string.format("--mode: unknown mode '%s' (valid: %s)", m, table.concat(threshold.MODES, ", "))
    end
    if not seen[m] then list[#list + 1], seen[m] = m, true end
  end
  if #list == 0 then return nil, "--mode needs at least one of " .. table.concat(threshold.MODES, ", ") end
  return list
end

-- The earlier result of --compare, or nil and a usage error.
local function read_compare(path)
  local f, ferr = io.open(path, "rb")
  if not f then return nil, "--compare " .. path .. ": " .. tostring(ferr) end
  local text = f:read("a")
  f:close()
  local doc, derr = json.decode(text)
  if type(doc) ~= "table" or doc.kind ~= "abxlua-bench" then
    return nil, "--compare " .. path .. ": not the --json output of abxlua bench"
      .. (derr and (" (" .. derr .. ")") or "")
  end
  return doc
end

-- The bench's options checked, or nil and a usage error.
local function options(args, cfg)
  local o, err = { template = args.template or cfg.defaults.template or "base", command = args.first_command }
  o.n, err = whole(args.n, "-n", 1)
  if not o.n then return nil, err end
  o.iterations, err = whole(args.iterations, "--iterations", 1)
  if not o.iterations then return nil, err end
  o.stagger_ms, err = whole(args.stagger_ms, "--stagger-ms", 0)
  if not o.stagger_ms then return nil, err end
  o.timeout = tonumber(args.timeout)
  if not o.timeout or o.timeout <= 0 then return nil, "--timeout must be a positive number of seconds" end
  o.settle = tonumber(args.settle)
  if not o.settle or o.settle < 0 then return nil, "--settle must be a number of seconds >= 0" end
  o.modes, err = modes_of(args.mode)
  if not o.modes then return nil, err end
  if not o.command:match("%S") then return nil, "--command must not be empty" end
  o.thresholds = {}
  for _, expr in ipairs(args.threshold or {}) do
    local th, terr = threshold.parse(expr, ops.NAMES)
    if not th then return nil, terr end
    local ran = th.parts[1] ~= "tti"
    for _, m in ipairs(o.modes) do ran = ran or m == th.parts[2] end
    if not ran then
      return nil, string.format("--threshold '%s' names mode %s, which --mode leaves out", expr, th.parts[2])
    end
    if th.parts[1] == "ops" and args.no_ops then
      return nil, string.format("--threshold '%s' names an operation, which --no-ops leaves out", expr)
    end
    o.thresholds[#o.thresholds + 1] = th
  end
  if args.segment then
    local k, n = require("abx.run.shard").parse(args.segment)
    if not k then return nil, (n:gsub("^%-%-shard", "--segment")) end
    o.segment = { index = k, total = n }
    if not args.json then return nil, "--segment needs --json FILE (merge-reports joins the segments' results)" end
  end
  if args.json and core.isdir(args.json) then return nil, "--json " .. args.json .. " is a directory" end
  if args.html and core.isdir(args.html) then return nil, "--html " .. args.html .. " is a directory" end
  if args.compare then
    o.compare, err = read_compare(args.compare)
    if not o.compare then return nil, err end
  end
  return o
end

-- Kills what the bench left and sweeps the provider by its tag; not interruptible.
local function cleanup(b, tracker)
  local ok, rep = core.guard({ timeout = 120, interruptible = false }, tostring, function()
    return tracker:cleanup(b.conn)
  end)
  if not ok then rep = { tracked = 0, swept = 0, errors = { rep } } end
  for _, e in ipairs(b.kill_errors) do rep.errors[#rep.errors + 1] = "kill after a sample: " .. e end
  progress("cleanup: %d sandboxes created, %d killed at the end (tracked), %d found by tag e2e=%s "
    .. "and killed", tracker.created, rep.tracked, rep.swept, b.run_id)
  for _, e in ipairs(rep.errors) do progress("cleanup error: %s", core.mask(tostring(e))) end
  return rep
end

-- Measures: every mode, then the operations. Fills result.tti, result.ops, result.success.
local function measure(b, r, no_ops)
  local ok_n, all_n = 0, 0
  for _, mode in ipairs(r.modes) do
    if b.interrupted then break end
    progress("%s: %d samples%s", mode, b.n, mode == "staggered" and
      string.format(", one every %d ms", b.stagger_ms) or "")
    local s = tti.run_mode(b, mode, function(text) progress("%s", text) end)
    s.samples = json.array(s.samples)
    s.errors = json.array(s.errors)
    r.tti[mode] = s
    ok_n, all_n = ok_n + s.ok, all_n + s.count
  end
  r.success = all_n > 0 and ok_n / all_n or 0
  if not no_ops and not b.interrupted then
    r.ops = ops.run(b, function(text) progress("%s", text) end)
    for _, s in pairs(r.ops) do
      if s.samples then s.samples, s.errors = json.array(s.samples), json.array(s.errors) end
    end
  end
end

---The bench, inside core.run. Returns the exit code.
---@param o table the checked options, with name, settings, defaults, run_id, args
---@return integer
function M.run(o)
  local args = o.args
  progress("provider %s%s, template %s, tag e2e=%s", o.name, o.settings.flavor and
    (" (flavour " .. o.settings.flavor .. ")") or "", o.template, o.run_id)
  local pok, conn, info = pcall(provider.open, o.name, o.settings, { run_id = o.run_id, defaults = o.defaults })
  if not pok or not conn then
    local msg = not pok and (core.is_error(conn) and conn.message or tostring(conn))
      or ("missing credentials [" .. table.concat(info.missing or {}, ", ") .. "]")
    core.ewrite("abxlua: error: provider " .. o.name .. ": " .. core.mask(msg) .. "\n")
    return (pok or (core.is_error(conn) and conn.kind == "InvalidArgument")) and 4 or 3
  end
  local refused = require("abx.run.runner").preflight(conn, o.name, info)
  if refused then
    core.ewrite("abxlua: error: " .. refused .. "\n")
    if info.stop then info.stop(false) end
    return 4
  end
  local b = { conn = conn, template = o.template, command = o.command, timeout = o.timeout,
    ttl = M.SANDBOX_TTL, n = o.n, stagger_ms = o.stagger_ms, iterations = o.iterations,
    capabilities = o.settings.capability_set or {}, kill_errors = {}, run_id = o.run_id,
    segment = o.segment }
  local tracker = Tracker.new(o.n + 4, o.run_id)
  conn.hooks = tracker:hooks(function() return nil end)
  core.on_interrupt(function()
    b.interrupted = true
    progress("interrupted: cleaning up (interrupt again to exit at once)")
  end)
  core.interrupt_note(string.format("abxlua: interrupted twice: exiting now without cleanup; "
    .. "what the bench made carries metadata e2e=%s on provider %s", o.run_id, o.name))
  local r = { provider = o.name, flavor = o.settings.flavor, template = o.template,
    command = o.command, n = o.n, stagger_ms = o.stagger_ms, iterations = o.iterations,
    modes = o.modes, op_names = ops.NAMES, run_id = o.run_id, tti = {},
    started_at = os.date("!%Y-%m-%dT%H:%M:%SZ"), segment = o.segment,
    threshold_exprs = {} }
  for i, th in ipairs(o.thresholds) do r.threshold_exprs[i] = th.expr end
  if o.settle > 0 then
    progress("settling for %g s before the first sample", o.settle)
    core.sleep(o.settle)
  end
  measure(b, r, args.no_ops)
  local rep = cleanup(b, tracker)
  if info.stop then info.stop(false) end
  for _, line in ipairs(output.tables(r)) do core.write(line .. "\n") end
  -- a segment's thresholds are evaluated by merge-reports over every segment (the whole sample)
  local evaluated, held = threshold.evaluate(r, o.segment and {} or o.thresholds)
  if o.segment and #o.thresholds > 0 then
    core.write(string.format("segment %d/%d: its %d threshold(s) are evaluated by `abxlua merge-reports` "
      .. "over every segment\n", o.segment.index, o.segment.total, #o.thresholds))
  end
  r.thresholds = json.array(evaluated)
  if #evaluated > 0 then core.write("thresholds:\n") end
  for _, e in ipairs(evaluated) do core.write("  " .. threshold.line(e) .. "\n") end
  if o.compare then
    for _, line in ipairs(output.compare(o.compare, r, args.compare)) do core.write(line .. "\n") end
  end
  for _, w in ipairs({ { "json", "result", function() return output.document(r) .. "\n" end },
    { "html", "page", function() return require("abx.bench.html").page(r) end } }) do
    local path = args[w[1]]
    if path then
      local f, ferr = io.open(path, "wb")
      if not f then
        core.ewrite("abxlua: error: --" .. w[1] .. " " .. path .. ": " .. tostring(ferr) .. "\n")
        return 3
      end
      f:write(w[3]())
      f:close()
      progress("%s written to %s", w[2], path)
    end
  end
  if b.interrupted then return 2 end
  if r.success == 0 and next(r.tti) then
    progress("no time-to-interactive sample succeeded")
    return 1
  end
  if #rep.errors > 0 then return 1 end
  return held and 0 or M.EXIT_THRESHOLDS
end

function M.execute(args)
  local config_path = config.find(args.config)
  local cfg = config.load(config_path)
  local name, settings = config.provider(cfg, args.provider, args.flavor)
  provider.preflight(name, settings)
  local o, err = options(args, cfg)
  if not o then return nil, err end
  o.name, o.settings, o.defaults, o.args = name, settings, cfg.defaults, args
  o.run_id = core.getenv("E2E_RUN_ID") or ("bench-" .. core.random_hex(6))
  if not o.run_id:match("^[%w%-_]+$") then
    return nil, "E2E_RUN_ID may only contain letters, digits, '-' and '_'"
  end
  local code = 3
  local ok, errs = core.run(function() code = M.run(o) end)
  if not ok then
    core.ewrite("abxlua: " .. tostring(errs) .. " internal task error(s)\n")
    return 3
  end
  return code
end

return M
