-- 10_template_build: the provider's E2B template build API itself, driven as the SDK 2.51 drives
-- it (abx.template; docs/protocol/e2b-v2-and-peers.md §2): a failing step fails the build with that
-- step's log; an unchanged rebuild is cached; delete removes the template and its names. Every
-- template made here is deleted by the test that made it (ctx.finally).
local t = require("abx.test")
local template = require("abx.template")

-- Requests one build of `name` from base with `steps` and waits for it; returns the template
-- id, the build id and the log messages (or raises what wait raises, with them in `logs`).
local function build(ctx, name, steps, logs)
  local req = template.request_build(ctx.conn, { name = name })
  -- not under pcall: a delete that fails (400 while a sandbox still uses the template) is this
  -- test's teardown error, never a template left in the provider's store; false when gone
  ctx.finally(function() template.delete(ctx.conn, req.template_id) end)
  template.trigger_build(ctx.conn, req.template_id, req.build_id,
    { fromTemplate = "base", force = false, steps = steps })
  template.wait(ctx.conn, req.template_id, req.build_id,
    { on_log = function(e) logs[#logs + 1] = e.message end })
  return req.template_id, req.build_id
end

local function name_of(ctx, what) return "abx-e2e-" .. ctx.run_id .. "-" .. what end

local function has(list, pattern)
  for _, m in ipairs(list) do if m:match(pattern) then return true end end
  return false
end

t.test("a build whose RUN step fails ends in BuildError naming the step, with its log",
  { requires = { "templates_build" }, timeout = 180 }, function(ctx)
  local logs = {}
  local err = t.raises("Sandbox", build, ctx, name_of(ctx, "fails"), {
    { type = "RUN", args = { "echo first-step-ran", "" }, force = false },
    { type = "RUN", args = { "echo about-to-fail && exit 3", "" }, force = false },
    { type = "RUN", args = { "echo never", "" }, force = false } }, logs)
  t.eq(err.code, "BuildError")
  t.eq(tostring(err.step), "2", "the failing step")
  t.match(err.message, "exit status 3")
  t.ok(has(logs, "about%-to%-fail"), "the failing step's output is in the log")
  t.ok(not has(logs, "^never$"), "no step after the failure ran")
end)

t.test("an unchanged rebuild is cached: every step CACHED", { requires = { "templates_build" },
  timeout = 180 }, function(ctx)
  local name = name_of(ctx, "cached")
  local steps = {
    { type = "RUN", args = { "echo " .. ctx.run_id .. " > /home/user/stamp", "" }, force = false },
    { type = "ENV", args = { "ABX_STAMP", ctx.run_id }, force = false } }
  local first, second = {}, {}
  build(ctx, name, steps, first)
  t.ok(not has(first, "^CACHED %[builder 1/"), "the first build ran its RUN step")
  build(ctx, name, steps, second)
  local builders = 0
  for _, m in ipairs(second) do
    if m:match("%[builder %d+/%d+%]") then
      builders = builders + 1
      t.match(m, "^CACHED %[builder", "every step of the rebuild is cached")
    end
  end
  t.eq(builders, 2, "both steps are in the rebuild's log")
  local sbx = ctx.sandbox_factory({ template = name })
  -- finalizers run last registered first: the sandbox goes before its template's delete (the
  -- run's own kill of the test's sandboxes comes after them, too late for that delete)
  ctx.finally(function() sbx:kill() end)
  t.eq(sbx.files:read("/home/user/stamp"), ctx.run_id .. "\n", "the cached layer is the built one")
  t.eq(sbx.commands:run("printenv ABX_STAMP").stdout, ctx.run_id .. "\n", "ENV is the template's")
end)

t.test("delete removes the template and its names", { requires = { "templates_build" },
  timeout = 180 }, function(ctx)
  local name = name_of(ctx, "deleted")
  local id = build(ctx, name, { { type = "RUN", args = { "true", "" }, force = false } }, {})
  t.eq(template.exists(ctx.conn, name), true, "the name exists once built")
  t.eq(template.get_id(ctx.conn, name), id)
  t.eq(template.delete(ctx.conn, id), true)
  t.eq(template.exists(ctx.conn, name), false, "the name is gone")
  t.eq(template.get_id(ctx.conn, name), nil)
  t.raises("NotFound", ctx.sandbox_factory, { template = name })
end)
