-- Runner case: t.measure (abx.run.measure) without a platform: iterations, concurrency, duration,
-- rate, failed iterations, the statistics' shape, the options' errors, and threshold parsing.
-- Times are not asserted (a shared machine), only counts, order and shape.
-- Expected: 5 passed, exit 0.
-- expect-no-line: ^(FAILED|ERROR)
local t = require("abx.test")
local core = require("abx.core")
local measure = require("abx.run.measure")

t.test("iterations run fn once each, at most `concurrency` at once, and give the statistics", function()
  local running, most, seen = 0, 0, {}
  local s = t.measure("sleepy", function(i)
    running = running + 1
    most = math.max(most, running)
    seen[#seen + 1] = i
    core.sleep(0.01)
    running = running - 1
  end, { iterations = 12, concurrency = 3 })
  t.eq({ s.name, s.count, s.ok, s.failed, s.rate }, { "sleepy", 12, 12, 0, 0 })
  t.eq(most, 3, "iterations at once")
  table.sort(seen)
  for i = 1, 12 do t.eq(seen[i], i) end
  t.eq(#s.samples, 12)
  t.ok(s.min <= s.med and s.med <= s.p90 and s.p90 <= s.p95 and s.p95 <= s.p99 and s.p99 <= s.max,
    "ordered statistics")
  t.ok(s.min >= 9, "each iteration slept 10 ms: min " .. s.min)
end)

t.test("a failed iteration counts in rate and never as a time", function()
  local s = t.measure("half", function(i) if i % 2 == 0 then error("even " .. i, 0) end end,
    { iterations = 6 })
  t.eq({ s.count, s.ok, s.failed, s.rate }, { 6, 3, 3, 0.5 })
  t.eq({ s.samples[2], s.samples[4], s.samples[6] }, { false, false, false })
  t.eq(#s.errors, 3, "three distinct errors")
  local none = t.measure("none", function() error("no") end, { iterations = 2 })
  t.eq({ none.ok, none.med, none.rate }, { 0, nil, 1 })
end)

t.test("duration and rate bound the iterations", function()
  -- 5 starts a second for 1 s: starts at 0, 0.2, 0.4, 0.6, 0.8 s
  local s = t.measure("paced", function() end, { duration = 1, rate = 5 })
  t.eq(s.count, 5, "iterations started in 1 s at 5 a second")
  t.ok(s.wall_s >= 0.8, "the last start waited for its time: " .. s.wall_s)
  local capped = t.measure("capped", function() end, { iterations = 3, duration = 30 })
  t.eq(capped.count, 3, "iterations stop first")
end)

t.test("bad options are errors naming the valid ones", function()
  local function err_of(name, opts)
    local ok, e = pcall(t.measure, name, function() end, opts)
    t.eq(ok, false, "no error for " .. tostring(name))
    return tostring(e)
  end
  t.match(err_of("x", {}), "give iterations = N or duration = S")
  t.match(err_of("x", { iteration = 3 }),
    'unknown option "iteration" %(known: concurrency, duration, iterations, rate%)')
  t.match(err_of("x", { iterations = 0 }), "iterations must be a whole number > 0")
  t.match(err_of("x", { iterations = 2, concurrency = 1.5 }), "concurrency must be a whole number > 0")
  t.match(err_of("", { iterations = 1 }), "the measurement's name")
end)

t.test("thresholds parse k6's statistics and refuse the rest", function()
  t.eq(measure.parse("p(95) < 500"), { expr = "p(95) < 500", stat = "p(95)", p = 95, op = "<", limit = 500 })
  t.eq(measure.parse("rate<=0.01").op, "<=")
  t.eq(measure.parse("med>1").stat, "med")
  local _, e1 = measure.parse("p(101)<5")
  t.match(e1, "p%(N%) needs 0 <= N <= 100")
  local _, e2 = measure.parse("p95<5")
  t.match(e2, "unknown statistic 'p95' %(valid: p%(N%), med, avg, min, max, count, rate%)")
  local _, e3 = measure.parse("avg 5")
  t.match(e3, "has no operator")
  local _, e4 = measure.parse("avg<5ms")
  t.match(e4, "'5ms' is not a number")
  local parsed = assert(measure.check_option({ create = { "p(99)<10" }, cmd = { "count>=3" } }))
  t.eq(#parsed.named.create, 1)
  local _, e5 = measure.check_option({ create = "p(99)<10" })
  t.match(e5, "thresholds.create must be a list")
  -- a list part and named parts together: both kept, whatever order pairs() gives
  local both = assert(measure.check_option({ "rate<0.5", "count>1", create = { "med<9" } }))
  t.eq({ #both.all, #both.named.create }, { 2, 1 })
end)
