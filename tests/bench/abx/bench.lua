-- bench.lua: the abxlua way of `make bench` (tests/bench/bench.py runs one test of this file per
-- job, `abxlua run bench.lua::<job>`, against the harness's own `abxlua serve`). Each test times
-- its workload with the engine's monotonic clock (core.now), verifies every result (exit code,
-- stdout, length, sha256; a mismatch fails the test, so the sample is a failure, not a number)
-- and writes {"ok": true, "metrics": {name: [values]}} to the file named by BENCH_OUT.
-- Sizes come from the environment (BENCH_N, BENCH_BYTES, BENCH_SANDBOXES, BENCH_CMDS,
-- BENCH_FILEOPS, BENCH_PER, BENCH_IDLE_S, BENCH_PHASE); tests/bench/node/bench.mjs and
-- tests/bench/floor/ do the same exchanges with the e2b SDK and with bare libcurl.
-- Fixtures: conn. Source: docs/protocol/envd-protocol.md §4 (Start), §5 (ListDir), §7 (/files).
local t = require("abx.test")
local core = require("abx.core")

--- A number from the environment (the harness always sets the ones a job uses).
---@param name string
---@return integer
local function param(name)
  local v = tonumber(os.getenv(name) or "")
  if not v then error("bench.lua: " .. name .. " is not set (run it through tests/bench/bench.py)", 0) end
  return math.tointeger(v) or v
end

--- Writes {"ok":true,"metrics":{...}} (arrays of numbers) to BENCH_OUT.
---@param metrics table<string, number[]>
local function emit(metrics)
  local parts = {}
  for k, vs in pairs(metrics) do
    local xs = {}
    for i, v in ipairs(vs) do xs[i] = string.format("%.6f", v) end
    parts[#parts + 1] = string.format("%q:[%s]", k, table.concat(xs, ","))
  end
  local f = assert(io.open(assert(os.getenv("BENCH_OUT"), "BENCH_OUT is not set"), "wb"))
  f:write('{"ok":true,"metrics":{' .. table.concat(parts, ",") .. "}}\n")
  f:close()
end

--- Runs fns[i](i) each in its own task, `width` at a time (nil: all at once), and waits for all;
--- returns the errors raised (empty when every call succeeded).
---@param n integer
---@param fn fun(i: integer)
---@param width? integer
---@return table errors
local function gather(n, fn, width)
  local me, errs, next_i, running = core.current(), {}, 1, 0
  local function worker()
    while next_i <= n do
      local i = next_i
      next_i = next_i + 1
      local ok, e = pcall(fn, i)
      if not ok then errs[#errs + 1] = string.format("#%d: %s", i, tostring(e)) end
    end
    running = running - 1
    if running == 0 then core.unpark(me) end
  end
  for _ = 1, math.min(width or n, n) do
    running = running + 1
    core.spawn(worker)
  end
  if running > 0 then core.park() end
  return errs
end

local function ms(t0) return (core.now() - t0) * 1000 end

local function check_true(r, what)
  if r.exit_code ~= 0 or r.stdout ~= "" or r.stderr ~= "" then
    error(string.format("%s: exit %s, stdout %q, stderr %q", what, tostring(r.exit_code),
      r.stdout:sub(1, 80), r.stderr:sub(1, 200)), 0)
  end
end

-- The streaming command: 64-byte lines of a fixed text, cut at BENCH_BYTES (a multiple of 64).
local LINE = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_" -- 63 bytes + "\n"
local function stream_cmd(n) return "yes " .. LINE .. " | head -c " .. n end

--- The big file's bytes: BENCH_BYTES/1 MiB blocks, block i = "%08d" of i then a fixed pattern
--- (the same bytes as bench.mjs and floor.c make).
local function big_data(n)
  local MiB = 1048576
  local pat = {}
  for j = 8, MiB - 1 do pat[#pat + 1] = string.char(((j * 131) ~ (j >> 7)) & 0xff) end
  local tail = table.concat(pat)
  local blocks = {}
  for i = 0, n // MiB - 1 do blocks[#blocks + 1] = string.format("%08d", i) .. tail end
  return table.concat(blocks)
end

t.test("ttfc", function(ctx)
  local n, ttfc, ck = param("BENCH_N"), {}, {}
  for i = 1, n do
    local t0 = core.now()
    local s = ctx.conn:create({ template = "base", timeout = 300 })
    local r = s.commands:run("true")
    ttfc[i] = ms(t0)
    check_true(r, "first command")
    t.eq(s:kill(), true, "kill")
  end
  for i = 1, n do
    local t0 = core.now()
    local s = ctx.conn:create({ template = "base", timeout = 300 })
    local killed = s:kill()
    ck[i] = ms(t0)
    t.eq(killed, true, "kill")
  end
  emit({ ttfc_ms = ttfc, create_kill_ms = ck })
end)

t.test("cmd", function(ctx)
  local n, lat = param("BENCH_N"), {}
  local s = ctx.conn:create({ template = "base", timeout = 600 })
  check_true(s.commands:run("true"), "warm-up command")
  for i = 1, n do
    local t0 = core.now()
    local r = s.commands:run("true")
    lat[i] = ms(t0)
    check_true(r, "command " .. i)
  end
  s:kill()
  emit({ cmd_ms = lat })
end)

t.test("stream_collect", function(ctx)
  local n = param("BENCH_BYTES")
  local s = ctx.conn:create({ template = "base", timeout = 600 })
  local t0 = core.now()
  local r = s.commands:run(stream_cmd(n), { timeout = 600 })
  local dt = core.now() - t0
  t.eq(r.exit_code, 0, "exit code")
  t.eq(#r.stdout, n, "stdout length")
  t.eq(r.stderr, "", "stderr")
  for off = 0, n - 64, 1048576 do
    if r.stdout:sub(off + 1, off + 64) ~= LINE .. "\n" then t.fail("stdout differs at byte " .. off) end
  end
  s:kill()
  emit({ stream_mib_s = { n / 1048576 / dt } })
end)

t.test("stream_cb", function(ctx)
  local n, got, bad = param("BENCH_BYTES"), 0, nil
  local s = ctx.conn:create({ template = "base", timeout = 600 })
  local t0 = core.now()
  -- keep_output = false: the engine keeps nothing either (the SDK has no such option and keeps
  -- every byte), so the row's RSS is the engine's own
  local r = s.commands:run(stream_cmd(n), { timeout = 600, keep_output = false, on_stdout = function(chunk)
    -- keeps nothing: counts the bytes and checks that each chunk continues the line pattern
    local k = got % 64
    local want = k == 63 and "\n" or LINE:sub(k + 1, k + 1)
    if not bad and chunk:sub(1, 1) ~= want then bad = got end
    got = got + #chunk
  end })
  local dt = core.now() - t0
  t.eq(r.exit_code, 0, "exit code")
  t.eq(got, n, "bytes seen by on_stdout")
  t.eq(bad, nil, "first byte of a chunk off the pattern at offset")
  s:kill()
  emit({ stream_cb_mib_s = { n / 1048576 / dt } })
end)

t.test("file_big", function(ctx)
  local n = param("BENCH_BYTES")
  local s = ctx.conn:create({ template = "base", timeout = 600 })
  local data = big_data(n)
  local sum = core.sha256(data)
  local t0 = core.now()
  s.files:write("/tmp/big.bin", data)
  local w = core.now() - t0
  data = nil -- luacheck: ignore (the engine holds only the read-back from here on)
  collectgarbage()
  t0 = core.now()
  local back = s.files:read("/tmp/big.bin")
  local r = core.now() - t0
  t.eq(#back, n, "read-back length")
  t.eq(core.sha256(back), sum, "read-back sha256")
  s:kill()
  emit({ write_mib_s = { n / 1048576 / w }, read_mib_s = { n / 1048576 / r } })
end)

t.test("files_small", function(ctx)
  local n = param("BENCH_N")
  local s = ctx.conn:create({ template = "base", timeout = 600 })
  local t0 = core.now()
  for i = 1, n do
    s.files:write(string.format("/home/user/small/f%04d.txt", i), "small file " .. i .. "\n")
  end
  local w = core.now() - t0
  t0 = core.now()
  local entries = s.files:list("/home/user/small")
  local l = ms(t0)
  t.eq(#entries, n, "entries listed")
  local seen = {}
  for _, e in ipairs(entries) do seen[e.name] = e.size end
  for i = 1, n do
    local name = string.format("f%04d.txt", i)
    t.eq(seen[name], #("small file " .. i .. "\n"), "size of " .. name)
  end
  s:kill()
  emit({ small_write_s = { w }, small_list_ms = { l } })
end)

t.test("fanout", function(ctx)
  local nsb, ncmd, nops = param("BENCH_SANDBOXES"), param("BENCH_CMDS"), param("BENCH_FILEOPS")
  local t0 = core.now()
  local errs = gather(nsb, function(i)
    local s = ctx.conn:create({ template = "base", timeout = 600 })
    local ok, e = pcall(function()
      for j = 1, ncmd do
        local r = s.commands:run("echo c" .. j)
        if r.exit_code ~= 0 or r.stdout ~= "c" .. j .. "\n" then
          error(string.format("command %d: exit %s stdout %q", j, tostring(r.exit_code), r.stdout), 0)
        end
      end
      -- the 5 file operations: write, read, get_info, list, remove (one cycle per 5 asked)
      for k = 1, nops // 5 do
        local path, body = "/tmp/fan-" .. k .. ".txt", "sandbox " .. i .. " op " .. k .. "\n"
        s.files:write(path, body)
        if s.files:read(path) ~= body then error("read-back of " .. path .. " differs", 0) end
        if s.files:get_info(path).size ~= #body then error("size of " .. path, 0) end
        local found = false
        for _, en in ipairs(s.files:list("/tmp")) do found = found or en.name == "fan-" .. k .. ".txt" end
        if not found then error(path .. " not listed", 0) end
        s.files:remove(path)
      end
    end)
    s:kill()
    if not ok then error(e, 0) end
  end)
  local wall = core.now() - t0
  t.eq(errs, {}, "sandboxes that failed")
  emit({ fanout_s = { wall } })
end)

--- Appends one line to BENCH_PHASE (the harness polls it): "<phase> <monotonic seconds>".
local function phase(name)
  local f = assert(io.open(assert(os.getenv("BENCH_PHASE"), "BENCH_PHASE is not set"), "ab"))
  f:write(string.format("%s %.6f\n", name, core.now()))
  f:close()
end

t.test("scale", function(ctx)
  local nsb, per, idle = param("BENCH_SANDBOXES"), param("BENCH_PER"), param("BENCH_IDLE_S")
  local sbs, handles = {}, {}
  local t0 = core.now()
  t.eq(gather(nsb, function(i) sbs[i] = ctx.conn:create({ template = "base", timeout = 1200 }) end, 16),
    {}, "creates that failed")
  local create_s = core.now() - t0
  -- every command waits on a FIFO gate (a blocking read, no polling) until the release below
  t0 = core.now()
  local errs = gather(nsb * per, function(k)
    local s = sbs[(k - 1) % nsb + 1]
    handles[k] = s.commands:run("mkfifo /tmp/gate 2>/dev/null; read <> /tmp/gate; echo done-" .. k,
      { background = true, timeout = 900 })
  end, 64)
  local start_s = core.now() - t0
  local ok, e = pcall(function()
    t.eq(errs, {}, "commands that failed to start")
    phase("idle")
    core.sleep(idle)
    phase("release")
  end)
  -- open every gate (also after a failure, so that nothing is left waiting): a line per command
  local rel = gather(nsb, function(i)
    local r = sbs[i].commands:run("exec 3<> /tmp/gate; for ((i = 0; i < " .. per .. "; i++)); do echo >&3; done")
    if r.exit_code ~= 0 then error("release exit " .. tostring(r.exit_code), 0) end
  end, 16)
  local bad = gather(nsb * per, function(k)
    if not handles[k] then return end
    local r = handles[k]:wait()
    if r.exit_code ~= 0 or r.stdout ~= "done-" .. k .. "\n" then
      error(string.format("exit %s stdout %q", tostring(r.exit_code), r.stdout:sub(1, 80)), 0)
    end
  end, 64)
  phase("done")
  gather(nsb, function(i) sbs[i]:kill() end, 16)
  if not ok then error(e, 0) end
  t.eq(rel, {}, "gate releases that failed")
  t.eq(bad, {}, "commands that did not end with their marker")
  emit({ scale_create_s = { create_s }, scale_start_s = { start_s } })
end)
