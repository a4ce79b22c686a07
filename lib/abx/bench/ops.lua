-- abx.bench.ops: the latency of each sandbox operation, `iterations` samples each, every sample
-- checked (a failed check is a failed sample with its error, never a time):
--   create, kill   a sandbox of the template created (until the create call returns) and killed
--                  (until the kill call returns), `iterations` times, one at a time
--   connect        conn:connect on one running sandbox (E2B's POST /sandboxes/{id}/connect; an
--                  OpenSandbox resume-or-renew); the answer must name that sandbox
--   command        `true` in that sandbox: exit code 0
--   write_1mib     1 MiB of random bytes written to a file; read_1mib: read back, equal to it
--   list_100       a directory of 100 files listed: 100 entries
--   pause, resume  the sandbox paused (until it is paused), then resumed (conn:connect with the
--                  capability connect_resume, else conn:resume; checked by a command after the
--                  sample); only with the provider's capability `pause`, else skipped, with the
--                  reason
-- Statistics per operation: abx.bench.stats.summary (p50 and p95 are what the table shows).
local core = require("abx.core")
local stats = require("abx.bench.stats")

local M = {}

M.NAMES = { "create", "connect", "command", "write_1mib", "read_1mib", "list_100", "pause",
  "resume", "kill" }

local MIB = 1024 * 1024
local LIST_DIR = "/tmp/abx-bench-list"
local FILE = "/tmp/abx-bench-1mib"

local handler = require("abx.bench.tti").error_text

-- One timed call of fn() under the sample deadline: { ok, ms } or { ok = false, error }. `check`
-- (optional) runs after the clock stopped, on fn's result, and raises when it is wrong.
local function timed(b, fn, check)
  local ok, v = core.guard(b.timeout, handler, function()
    local t0 = core.now()
    local r = fn()
    local ms = (core.now() - t0) * 1000
    if check then check(r) end
    return ms
  end)
  if ok then return { ok = true, ms = v } end
  return { ok = false, error = v }
end

local function push(samples, name, s)
  samples[name] = samples[name] or {}
  table.insert(samples[name], s)
end

-- create and kill: `iterations` sandboxes, one at a time.
local function create_kill(b, samples)
  for _ = 1, b.share do
    local sbx
    push(samples, "create", timed(b, function()
      sbx = b.conn:create({ template = b.template, timeout = b.ttl })
      return sbx
    end))
    if sbx then
      push(samples, "kill", timed(b, function() return sbx:kill() end, function(r)
        if r ~= true then error("kill answered that the sandbox was already gone", 0) end
      end))
    else
      push(samples, "kill", { ok = false, error = "no sandbox to kill: its create failed" })
    end
  end
end

local function must_succeed(r)
  if r.exit_code ~= 0 then
    error(string.format("exit code %s: %s", tostring(r.exit_code), (r.stderr or ""):sub(1, 200)), 0)
  end
end

-- The operations on one sandbox.
local function on_one(b, sbx, samples)
  local id = sbx.id
  for _ = 1, b.share do
    push(samples, "connect", timed(b, function()
      return b.conn:connect(id, { timeout = b.ttl })
    end, function(r)
      if r.id ~= id then error("connect answered sandbox " .. tostring(r.id) .. ", not " .. id, 0) end
    end))
  end
  for _ = 1, b.share do
    push(samples, "command", timed(b, function() return sbx.commands:run("true") end, must_succeed))
  end
  local data = string.rep(core.random_hex(256), MIB // 512) -- 512 hex digits, repeated
  for _ = 1, b.share do
    push(samples, "write_1mib", timed(b, function() return sbx.files:write(FILE, data) end))
  end
  for _ = 1, b.share do
    push(samples, "read_1mib", timed(b, function() return sbx.files:read(FILE) end, function(r)
      if r ~= data then error(string.format("read %d bytes that differ from the %d written", #r, #data), 0) end
    end))
  end
  must_succeed(sbx.commands:run("mkdir -p " .. LIST_DIR .. " && cd " .. LIST_DIR
    .. " && for i in $(seq 1 100); do : > f$i; done"))
  for _ = 1, b.share do
    push(samples, "list_100", timed(b, function() return sbx.files:list(LIST_DIR) end, function(r)
      if #r ~= 100 then error(string.format("listed %d entries, not 100", #r), 0) end
    end))
  end
end

-- pause and resume, `iterations` times each, alternately; a command after each resume (untimed)
-- checks that the sandbox runs again.
local function pause_resume(b, sbx, samples)
  for _ = 1, b.share do
    local p = timed(b, function() return b.conn:pause(sbx.id) end, function(r)
      if r ~= true then error("pause answered that the sandbox was already paused", 0) end
    end)
    push(samples, "pause", p)
    if not p.ok then
      push(samples, "resume", { ok = false, error = "not paused: " .. p.error })
    else
      -- connect where it resumes (E2B's way since Oct 2025), else the resume route
      local resume = b.capabilities.connect_resume and b.conn.connect or b.conn.resume
      push(samples, "resume", timed(b, function() return resume(b.conn, sbx.id, { timeout = b.ttl }) end,
        function() must_succeed(sbx.commands:run("true")) end))
    end
  end
end

---Runs every operation. Returns { [op] = summary (abx.bench.stats.summary, with `samples`) or
---{ skipped = reason } }.
---@param b table the bench: conn, template, ttl, timeout, iterations, capabilities
---@param progress fun(text: string)
---@return table
function M.run(b, progress)
  local samples = {}
  -- a segment's share of the iterations (abx.bench.tti.indices: the same split as the samples)
  local seg = b.segment or { index = 1, total = 1 }
  b.share = #require("abx.bench.tti").indices(b.iterations, seg.index, seg.total)
  progress(string.format("operations: create and kill, %d each", b.share))
  create_kill(b, samples)
  local skipped = {}
  local ok, sbx = pcall(b.conn.create, b.conn, { template = b.template, timeout = b.ttl })
  if not ok then
    local why = "not run: its sandbox could not be created: " .. handler(sbx)
    for _, n in ipairs(M.NAMES) do
      if not samples[n] then samples[n] = { { ok = false, error = why } } end
    end
  else
    progress("operations: connect, command, 1 MiB write and read, list of 100 entries")
    local rok, rerr = pcall(on_one, b, sbx, samples)
    if rok and b.capabilities.pause then
      progress("operations: pause and resume")
      rok, rerr = pcall(pause_resume, b, sbx, samples)
    elseif rok then
      local why = "the provider lacks capability pause"
      skipped.pause, skipped.resume = why, why
    end
    if not rok then -- a failure between samples (the list's setup): the rest is one failed sample
      for _, n in ipairs(M.NAMES) do
        if not samples[n] and not skipped[n] then
          samples[n] = { { ok = false, error = "not run: " .. handler(rerr) } }
        end
      end
    end
    pcall(sbx.kill, sbx)
  end
  local out = {}
  for _, n in ipairs(M.NAMES) do
    if samples[n] then
      out[n] = stats.summary(samples[n])
      out[n].samples = samples[n]
      out[n].score = nil -- ComputeSDK's score is a TTI score
    else
      out[n] = { skipped = skipped[n] or "not run" }
    end
  end
  return out
end

return M
