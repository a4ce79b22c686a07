-- Fault cases, run by tests/faults/test_faults.py against `abxlua serve --faults <rules>`: one
-- test per fault kind (selected with -k); each performs the call the rule hits and checks that it
-- ends with the expected typed error (or succeeds after a retry). Every test prints
-- "FAULT-OUTCOME <name> <ok|error kind> <seconds>" on stderr for the driver's table.
local t = require("abx.test")
local core = require("abx.core")

local function outcome(name, fn, expect)
  local t0 = core.now()
  local ok, e = pcall(fn)
  local dt = core.now() - t0
  local got = ok and "ok" or (core.is_error(e) and e.kind or ("raw:" .. tostring(e)))
  core.ewrite(string.format("FAULT-OUTCOME %s %s %.2f\n", name, got, dt))
  if not ok and got ~= expect then core.ewrite("FAULT-ERROR " .. tostring(e) .. "\n") end
  t.eq(got, expect, name .. ": outcome")
  return ok and e or nil, dt
end

t.test("fault list_503", function(ctx)
  outcome("list_503", function() return ctx.conn:list({ metadata = { case = "none" } }) end, "ok")
end)

t.test("fault list_429", function(ctx)
  local _, dt = outcome("list_429", function() return ctx.conn:list({ metadata = { case = "none" } }) end, "ok")
  t.ok(dt >= 0.95, "the retry waited Retry-After: 1 (" .. dt .. " s)")
end)

t.test("fault create_reset", function(ctx)
  local sbx = outcome("create_reset", function()
    return ctx.sandbox_factory({ metadata = { case = "reset" } })
  end, "ok")
  local all = ctx.conn:list({ metadata = { case = "reset" } })
  t.eq(#all, 1, "sandboxes carrying the case tag (no duplicate)")
  t.eq(all[1].sandbox_id, sbx.id)
end)

-- The faulted call runs with request_timeout = SHORT seconds (the rest of the run keeps the
-- config's, so a slow create on a loaded machine is not mistaken for the fault).
local SHORT = 3

-- The control-plane faults below hit GET /sandboxes/{id} (get_info) of a fresh sandbox.
for _, c in ipairs({ { "get_delay", "Timeout" }, { "get_truncated", "Protocol" },
                     { "get_malformed", "Protocol" }, { "get_500", "Sandbox" },
                     { "get_no_answer", "Timeout" } }) do
  t.test("fault " .. c[1], function(ctx)
    local s = ctx.base_sandbox
    local short = ctx.conn:with({ request_timeout = SHORT })
    outcome(c[1], function() return short:get_info(s.id) end, c[2])
  end)
end

-- Envd faults through the ingress: a command's Connect stream (process.Process/Start).
for _, c in ipairs({ "stream_truncated", "envelope_huge_length", "envelope_compressed",
                     "envelope_garbage", "stream_malformed" }) do
  t.test("fault " .. c, function(ctx)
    local s = ctx.base_sandbox
    outcome(c, function() return s.commands:run("echo hello; sleep 0.2; echo world") end, "Protocol")
  end)
end

t.test("fault files_no_answer", function(ctx)
  local s = ctx.conn:with({ request_timeout = SHORT }):connect(ctx.base_sandbox.id)
  outcome("files_no_answer", function() return s.files:read("/etc/hostname") end, "Timeout")
end)
