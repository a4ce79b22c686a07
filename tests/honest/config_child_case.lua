-- A run's --config reaches the abxlua children its tests start (issue 27 part 4), run by
-- tests/honest/test_config_child.py from a directory whose own config names another provider.
-- The children get no ABX_CONFIG or ABX_PROVIDER from the test: what they read is what the run
-- exported (abx.run.config.export). They run in / (a relative --config must still resolve).
local t = require("abx.test")
local cjson = require("cjson")
local process = require("abx.run.process")

-- Runs `abxlua ARGS...` in / and decodes its JSON stdout.
local function child(args)
  local argv = { process.abxlua() }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  local r = process.run(argv, { cwd = "/", timeout = 60 })
  local ok, doc = pcall(cjson.decode, r.stdout)
  t.ok(ok, string.format("abxlua %s: JSON on stdout (exit %d; stderr: %s)", args[1], r.exit_code,
    r.stderr:sub(1, 400)))
  return doc, r
end

t.test("children read the run's config and provider", function(ctx)
  local sbx = ctx.conn:create({ template = "base", metadata = { abx_case = "config-child" } })
  local providers = child({ "providers", "--json" })
  local names = {}
  for _, p in ipairs(providers) do names[#names + 1] = p.name end
  table.sort(names)
  t.eq(table.concat(names, ","), "fakeprov,local,local-tls", "the providers of the run's config")
  local list, r = child({ "sandbox", "list", "--json", "--metadata", "abx_case=config-child" })
  t.eq(r.exit_code, 0, "abxlua sandbox list on the run's provider")
  local ids = {}
  for _, s in ipairs(list.sandboxes or {}) do ids[#ids + 1] = s.sandbox_id end
  t.eq(ids, { sbx.id }, "the child lists the sandbox this test made")
end)
