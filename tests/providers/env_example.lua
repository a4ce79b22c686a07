-- .env.example against the config (run by tests/runner/run_case.sh from the source root; issue 13
-- part 1): every remote provider of config/abxlua.yaml has a block, every block names a
-- configured provider (or "(any)"), and every variable it names is one abxlua reads
-- (abx.run.provider.VARIABLES, or that provider's credential_env / region_env).
-- Expected: 1 passed, exit 0.
-- expect-line: ^1 passed, 0 failed
local t = require("abx.test")
local core = require("abx.core")
local config = require("abx.run.config")
local provider = require("abx.run.provider")

t.test(".env.example has one block per remote provider, naming only variables abxlua reads", function()
  local cfg = config.load("config/abxlua.yaml")
  local text = assert(core.read_file(".env.example"))
  local blocks, order, current = {}, {}, nil
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    local name = line:match("^# %-%-%- provider: (%S+) %-+$")
    if name then
      t.ok(not blocks[name], "one block for " .. name)
      current = name
      blocks[name] = {}
      order[#order + 1] = name
    else
      local var = line:match("^#? ?([A-Z][A-Z0-9_]*)=")
      if var then
        t.ok(current, var .. " is inside a provider block")
        table.insert(blocks[current], var)
      end
    end
  end
  local known = {}
  for _, n in ipairs(provider.VARIABLES) do known[n] = true end
  for _, name in ipairs(order) do
    local p = cfg.providers[name]
    t.ok(name == "(any)" or (p and p.kind == "remote"), name .. " is a remote provider of the config")
    local own = {}
    for _, n in ipairs(p and p.credential_env or {}) do own[n] = true end
    if p and p.region_env then own[p.region_env] = true end
    for _, var in ipairs(blocks[name]) do
      t.ok(known[var] or own[var], name .. ": " .. var .. " is a variable abxlua reads")
    end
    t.ok(#blocks[name] > 0, name .. " names at least one variable")
  end
  for name, p in pairs(cfg.providers) do
    if p.kind == "remote" then t.ok(blocks[name], ".env.example has a block for " .. name) end
  end
end)
