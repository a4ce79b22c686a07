-- luacheck (Debian's lua-check) over lib/ and scenarios/: `ctest -R lint:luacheck` (make test).
-- Lua 5.4; no globals of the project's own: scenarios get the standard library (abx.run.collect
-- makes every other global name an error) and `require` what they use (abx.test, abx.files, ...).
std = "lua54"
max_line_length = 120
-- types/abx/ is generated LuaLS meta code (stubs with unused arguments), build/ is generated too
exclude_files = { "types/**", "build/**" }

-- collect.lua seals the run before loading scenarios: it replaces os.exit and debug.sethook
-- for the whole process on purpose (a scenario must not end the run or drop the deadline hook).
files["lib/abx/run/collect.lua"] = { read_globals = { os = { fields = { exit = { read_only = false } } },
  debug = { fields = { sethook = { read_only = false } } } } }

-- A method keeps `self` for its object's interface even when it does not read it (e.g.
-- PtyHandle:send_stdin, which only raises): an unused self is not a finding.
ignore = { "212/self" }
