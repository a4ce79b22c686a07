-- envd_checked case (run by tests/runner/run_case.sh from the source root; issue 27 part 4): the
-- decisions of abx.client.envd_checked after a gateway's bare answer, without a server: a fake
-- envd client answers Stat and List from a scripted state, so every branch is reached, including
-- the ones a live sandbox rarely shows (a Stat or List that fails, a SIGTERM that a process
-- outlives). Source: lib/abx/client/envd_checked.lua, docs/protocol/envd-protocol.md §4.2, §5.2.
-- expect-line: ^4 passed, 0 failed
local t = require("abx.test")
local cjson = require("cjson")
local errmap = require("abx.client.errmap")
local checked = require("abx.client.envd_checked")

--- A fake envd client: `paths` (path -> true, or "fail"), `procs` (pid list, or "fail").
local function fake(state)
  local c = {}
  function c.unary(_, rpc, msg)
    if rpc == "filesystem.Filesystem/Stat" then
      local v = state.paths[msg.path]
      if v == "fail" then errmap.raise("PermissionDenied", 403, "stat refused") end
      if not v then errmap.raise("NotFound", 404, "no such file", { code = "not_found" }) end
      return { entry = { name = msg.path:match("[^/]+$"), path = msg.path, type = "FILE_TYPE_FILE" } }
    elseif rpc == "process.Process/List" then
      if state.procs == "fail" then errmap.raise("Sandbox", 500, "list refused") end
      local out = {}
      for _, pid in ipairs(state.procs) do out[#out + 1] = { pid = pid } end
      return { processes = out }
    end
    error("unexpected rpc " .. rpc)
  end
  return c
end

t.test("Move: done when the source went, again when it stayed or never was, unknown otherwise", function()
  local state = { paths = { ["/a"] = true } }
  local c = fake(state)
  local after = checked.before(c, "filesystem.Filesystem/Move", { source = "/a", destination = "/b" }, {})
  state.paths = { ["/b"] = true } -- envd moved it, the gateway lost the answer
  local done = after()
  t.eq(type(done), "table", "answered from the state")
  t.eq(done.status, 200)
  t.eq(cjson.decode(done.body).entry.path, "/b", "the destination's entry")
  state.paths = { ["/a"] = true }
  after = checked.before(c, "filesystem.Filesystem/Move", { source = "/a", destination = "/b" }, {})
  t.eq(after(), true, "the source is still there: sent again")
  state.paths = {}
  after = checked.before(c, "filesystem.Filesystem/Move", { source = "/a", destination = "/b" }, {})
  t.eq(after(), true, "a missing source: sent again, envd answers not_found")
  state.paths = { ["/a"] = "fail" }
  after = checked.before(c, "filesystem.Filesystem/Move", { source = "/a", destination = "/b" }, {})
  t.eq(after(), "POST /filesystem.Filesystem/Move may have done its work (a Stat of its source "
    .. "failed before it)", "a Stat that failed: not sent again")
  state.paths = { ["/a"] = true }
  after = checked.before(c, "filesystem.Filesystem/Move", { source = "/a", destination = "/b" }, {})
  state.paths = {} -- moved, but the destination cannot be read either
  t.eq(after(), "POST /filesystem.Filesystem/Move may have done its work (its source is gone but "
    .. "its destination cannot be read)")
end)

t.test("SendSignal SIGKILL: done when the process went, again while it runs, a repeat's not_found is success",
  function()
  local state = { paths = {}, procs = { 7 } }
  local c = fake(state)
  local msg = { process = { pid = 7 }, signal = "SIGNAL_SIGKILL" }
  local after = checked.before(c, "process.Process/SendSignal", msg, {})
  state.procs = {}
  local done = after()
  t.eq(type(done), "table")
  t.eq(done.body, "{}", "delivered: envd's answer")
  state.procs = { 7 }
  after = checked.before(c, "process.Process/SendSignal", msg, {})
  local again, settle = after()
  t.eq(again, true, "still running after a SIGKILL: sent again")
  t.eq(type(settle), "function")
  t.eq(settle({ status = 404, body = '{"code":"not_found","message":"process with pid 7 not found"}' }).body,
    "{}", "the repeat found it gone: it was dying of the first")
  t.eq(settle({ status = 200, body = "{}" }), nil, "a plain answer stands")
  state.procs = {}
  after = checked.before(c, "process.Process/SendSignal", msg, {})
  t.eq(after(), true, "never ran: sent again (envd answers not_found)")
  state.procs = "fail"
  after = checked.before(c, "process.Process/SendSignal", msg, {})
  t.eq(after(), "POST /process.Process/SendSignal may have done its work (envd's process list "
    .. "could not be read)")
end)

t.test("SendSignal SIGTERM to a process that still runs is not sent again", function()
  local state = { paths = {}, procs = { 9 } }
  local c = fake(state)
  local after = checked.before(c, "process.Process/SendSignal",
    { process = { pid = 9 }, signal = "SIGNAL_SIGTERM" }, {})
  t.match(after(), "may outlive SIGNAL_SIGTERM")
  state.procs = "fail"
  after = checked.before(c, "process.Process/SendSignal",
    { process = { pid = 9 }, signal = "SIGNAL_SIGTERM" }, {})
  state.procs = {}
  t.match(after(), "whether it ran before is unknown")
end)

t.test("CreateWatcher is sent again; SendInput and GetWatcherEvents have no check", function()
  local c = fake({ paths = {}, procs = {} })
  t.eq(checked.before(c, "filesystem.Filesystem/CreateWatcher", { path = "/tmp" }, {})(), true)
  t.eq(checked.before(c, "process.Process/SendInput", {}, {}), nil)
  t.eq(checked.before(c, "filesystem.Filesystem/GetWatcherEvents", {}, {}), nil)
end)
