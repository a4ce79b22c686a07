-- abx.run.cmd.list: `abxlua list`: the tests that would run, one per line, with markers.
local core = require("abx.core")
local suite = require("abx.run.suite")

local M = {}

function M.configure(parser)
  local cmd = parser:command("list", "List the tests that would run, one per line, with markers.")
  suite.add_selection_options(cmd)
  suite.add_shard_option(cmd)
end

function M.execute(args)
  local s, err = suite.load(args)
  if not s then return nil, err end
  local n, bad = 0, 0
  for _, f in ipairs(s.files) do
    if f.error then
      core.write("ERROR " .. f.path .. " (collection): " .. tostring(f.error) .. "\n")
      bad = bad + 1
    end
    for _, t in ipairs(f.tests) do
      local ki = t.opts.known_issue and (" " .. t.opts.known_issue) or ""
      core.write(string.format("%s [%s]%s\n", t.id, table.concat(t.markers, ","), ki))
      n = n + 1
    end
  end
  core.write(string.format("%d tests collected%s\n", n, bad > 0 and (", " .. bad .. " errors") or ""))
  if bad > 0 then return 1 end
  return n == 0 and 5 or 0
end

return M
