-- abx.run.cmd.list: `abxlua list`: the tests that would run, one per line, with markers. With
-- --provider (or --flavor), each test a provider would skip for a capability it lacks says so and
-- why, before any sandbox or credential is needed: what a platform does not support, learnt
-- before paying for a cloud run.
local core = require("abx.core")
local suite = require("abx.run.suite")
local config = require("abx.run.config")

local M = {}

function M.configure(parser)
  local cmd = parser:command("list", "List the tests that would run, one per line, with markers.")
  suite.add_selection_options(cmd)
  suite.add_cache_options(cmd)
  suite.add_shard_option(cmd)
  cmd:option("--provider", "Also show which tests this provider (config/abxlua.yaml) would skip "
    .. "for a capability it lacks, and why.")
  suite.add_flavor_option(cmd)
end

-- The skip a test would get from the provider's capabilities (abx.run.runner's check), or nil.
local function capability_skip(t, label, caps)
  for _, c in ipairs(t.opts.requires or {}) do
    if not caps[c] then return string.format("provider %s lacks capability %s", label, c) end
  end
  return nil
end

function M.execute(args)
  local s, err = suite.load(args)
  if not s then return nil, err end
  local caps, label
  if args.provider or args.flavor then
    local pname, p = config.provider(s.config, args.provider, args.flavor)
    caps = p.capability_set or {}
    label = p.flavor and (pname .. " --flavor " .. p.flavor) or pname
  end
  local n, bad, skips = 0, 0, 0
  -- the lines go out in few writes (core.write flushes at each call: one write(2) a line), the
  -- same bytes as line by line
  local out, size = {}, 0
  local function write(text)
    out[#out + 1] = text
    size = size + #text
    if size >= 65536 then
      core.write(table.concat(out))
      out, size = {}, 0
    end
  end
  for _, l in ipairs(s.notes) do write(l .. "\n") end
  for _, f in ipairs(s.files) do
    if f.error then
      write("ERROR " .. f.path .. " (collection): " .. tostring(f.error) .. "\n")
      bad = bad + 1
    end
    for _, t in ipairs(f.tests) do
      local ki = t.opts.known_issue and (" " .. t.opts.known_issue) or ""
      local why = caps and (t.opts.skip or capability_skip(t, label, caps))
      write(string.format("%s [%s]%s%s\n", t.id, table.concat(t.markers, ","), ki,
        why and ("  SKIP: " .. why) or ""))
      n = n + 1
      if why then skips = skips + 1 end
    end
  end
  write(string.format("%d tests collected%s%s\n", n,
    caps and string.format(", %d would be skipped on %s", skips, label) or "",
    bad > 0 and (", " .. bad .. " errors") or ""))
  if s.empty and s.empty.line and n == 0 and bad == 0 then write(s.empty.line .. "\n") end
  core.write(table.concat(out))
  if bad > 0 then return 1 end
  if n == 0 and s.empty then return s.empty.code end
  return n == 0 and 5 or 0
end

return M
