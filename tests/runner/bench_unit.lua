-- Runner case: `abxlua bench`'s statistics (percentiles, ComputeSDK's composite score, failed
-- samples), thresholds (parsing, the usage errors naming the valid forms, evaluation, a metric
-- with no value) and --compare, without a platform.
-- Expected: 5 passed, exit 0.
-- expect-no-line: ^(FAILED|ERROR)
local t = require("abx.test")
local stats = require("abx.bench.stats")
local threshold = require("abx.bench.threshold")
local output = require("abx.bench.output")
local ops = require("abx.bench.ops")

local function near(a, b, what) t.ok(math.abs(a - b) < 1e-9, string.format("%s: %.12g ~= %.12g", what, a, b)) end

t.test("percentiles interpolate linearly between the nearest ranks (numpy's default)", function()
  local s = { 10, 20, 30, 40, 50 }
  near(stats.percentile(s, 50), 30, "p50 of 5")
  near(stats.percentile(s, 95), 48, "p95 of 5: 40 + 0.8 x 10")
  near(stats.percentile(s, 99), 49.6, "p99 of 5")
  near(stats.percentile({ 10, 20 }, 50), 15, "p50 of 2")
  near(stats.percentile({ 7 }, 99), 7, "one sample")
  t.eq(stats.percentile({}, 50), nil, "no sample")
  near(stats.percentile(s, 0), 10, "p0")
  near(stats.percentile(s, 100), 50, "p100")
end)

t.test("a summary counts failed samples against the success rate, never as a time", function()
  local samples = { { ok = true, ms = 100 }, { ok = true, ms = 300 }, { ok = false, error = "boom" },
    { ok = false, error = "boom" }, { ok = true, ms = 200 } }
  local s = stats.summary(samples)
  t.eq({ s.count, s.ok, s.failed }, { 5, 3, 2 })
  near(s.success, 0.6, "success")
  t.eq({ s.min, s.p50, s.max }, { 100, 200, 300 })
  near(s.mean, 200, "mean")
  t.eq(#s.errors, 1, "one distinct error")
  t.eq({ s.errors[1].error, s.errors[1].count }, { "boom", 2 })
  -- ComputeSDK: 100 x (1 - v / 10 s) per statistic, 60/25/15, times the success rate
  local want = (0.60 * (100 * (1 - 200 / 10000)) + 0.25 * (100 * (1 - s.p95 / 10000))
    + 0.15 * (100 * (1 - s.p99 / 10000))) * 0.6
  near(s.score, want, "score")
  -- ComputeSDK's own example: a 200 ms median scores 98
  near(100 * (1 - 200 / stats.SCORE_CEILING_MS), 98, "the published example")
  -- a statistic at or over 10 s scores 0, and nothing succeeded scores 0
  near(stats.summary({ { ok = true, ms = 20000 } }).score, 0, "20 s")
  local none = stats.summary({ { ok = false, error = "x" } })
  t.eq({ none.success, none.score, none.p50 }, { 0, 0, nil })
end)

t.test("thresholds parse METRIC OP VALUE and refuse what they cannot measure, naming the valid forms",
  function()
  local th = assert(threshold.parse("tti.sequential.p95 < 200", ops.NAMES))
  t.eq({ th.metric, th.op, th.limit }, { "tti.sequential.p95", "<", 200 })
  t.eq(assert(threshold.parse("success>=0.99", ops.NAMES)).op, ">=")
  t.eq(assert(threshold.parse("ops.write_1mib.p50<=50", ops.NAMES)).op, "<=")
  local cases = {
    { "tti.seq.p95<1", "with mode one of sequential, staggered, burst" },
    { "tti.burst.p98<1", "unknown statistic 'p98' (valid: min, p50, p95, p99" },
    { "ops.create.score<1", "unknown statistic 'score' (valid: min, p50, p95, max, mean, success)" },
    { "ops.boot.p50<1", "operation one of create, connect, command" },
    { "latency<1", "unknown metric 'latency' (valid: success, tti.<mode>.<stat>" },
    { "success 0.99", "no operator" },
    { "success>=99%", "'99%' is not a number" },
    { "tti.burst.p50<200ms", "'200ms' is not a number" },
  }
  for _, c in ipairs(cases) do
    local ok, err = threshold.parse(c[1], ops.NAMES)
    t.eq(ok, nil, c[1] .. " parsed")
    t.match(err, "--threshold '" .. c[1]:gsub("%p", "%%%0") .. "': ", c[1])
    t.ok(err:find(c[2], 1, true), c[1] .. ": " .. tostring(err))
  end
end)

t.test("evaluation: a crossed threshold and one without a value fail, naming value and source",
  function()
  local result = { success = 0.98, tti = { sequential = { p95 = 250, p50 = 120 } },
    ops = { pause = { skipped = "the provider lacks capability pause" }, command = { p50 = 6 } } }
  local list = {}
  for _, e in ipairs({ "tti.sequential.p95<200", "tti.sequential.p50<200", "success>=0.99",
    "ops.pause.p50<10", "ops.command.p50<10" }) do
    list[#list + 1] = assert(threshold.parse(e, ops.NAMES))
  end
  list[1].source = "ci.yaml"
  local ev, all = threshold.evaluate(result, list)
  t.eq(all, false)
  t.eq({ ev[1].ok, ev[2].ok, ev[3].ok, ev[4].ok, ev[5].ok }, { false, true, false, false, true })
  t.eq(ev[1].value, 250)
  t.eq(threshold.line(ev[1]), "CROSSED  tti.sequential.p95<200 (value 250; from ci.yaml)")
  t.eq(threshold.line(ev[3]), "CROSSED  success>=0.99 (value 0.98; from --threshold)")
  t.match(threshold.line(ev[4]), "^CROSSED  ops%.pause%.p50<10 %(no value: nothing of it was measured")
  t.eq(threshold.line(ev[2]), "ok       tti.sequential.p50<200 (value 120; from --threshold)")
  local _, held = threshold.evaluate(result, { list[2], list[5] })
  t.eq(held, true, "thresholds that hold")
end)

t.test("--compare prints each statistic both results have, with the change", function()
  local old = { started_at = "2026-12-01T00:00:00Z", provider = "local", template = "base",
    tti = { burst = { p50 = 100, p95 = 200, p99 = 300, success = 1, score = 98 } },
    ops = { command = { p50 = 5, p95 = 10 } } }
  local new = { modes = { "sequential", "burst" }, op_names = ops.NAMES,
    tti = { sequential = { p50 = 1 }, burst = { p50 = 150, p95 = 100, p99 = 300, success = 0.5, score = 49 } },
    ops = { command = { p50 = 5, p95 = 20 }, pause = { skipped = "no" } } }
  local lines = output.compare(old, new, "old.json")
  local text = table.concat(lines, "\n")
  t.match(lines[1], "^compared with old%.json %(2026%-12%-01T00:00:00Z, provider local, template base%)")
  t.ok(text:find("tti.burst.p50                 100.0ms    150.0ms    +50.0%", 1, true), text)
  t.ok(text:find("tti.burst.p95                 200.0ms    100.0ms    -50.0%", 1, true), text)
  t.ok(text:find("tti.burst.success                100%        50%    -50.0%", 1, true), text)
  t.ok(text:find("ops.command.p95                10.0ms     20.0ms   +100.0%", 1, true), text)
  t.ok(not text:find("tti.sequential", 1, true), "a mode the earlier result lacks is not compared")
  t.ok(not text:find("ops.pause", 1, true), "a skipped operation is not compared")
end)
