-- abx.run.limits: a test's time limit, where it came from, and the words a deadline failure and
-- the progress lines use for it.
-- A test's limit is, first found: its own `timeout = N` (t.test's options; `timeout: N` of a YAML
-- scenario's test), `abxlua run --timeout S`, `defaults.test_timeout` of the config file, the
-- built-in default (abx.run.config.DEFAULTS, 300 s). abx.run.config.load records whether the
-- config file set each default (cfg.origin[key] = "config" | "builtin"), and `abxlua run
-- --timeout` sets cfg.origin.test_timeout = "--timeout".
-- The text goes to core.guard's `limit`: the engine writes it before "the deadline passed while
-- it was waiting" (or "... running Lua code (busy loop?)"), engine/loop.c abx_task_deadline_msg.
local M = {}

---Seconds as a person writes them: 300 -> "300", 2.5 -> "2.5".
---@param n number
---@return string
local function secs(n)
  if math.tointeger(n) then return tostring(math.tointeger(n)) end
  return string.format("%g", n)
end
M.secs = secs

-- "config/abxlua.yaml" (a leading "./" left out); nil when no config file was found.
local function config_name(path)
  if not path then return nil end
  return (tostring(path):gsub("^%./", ""))
end

---A test's limit and its source.
---@param test table a collected test ({ file, opts = { timeout? } })
---@param run table the run: { defaults (test_timeout), origin? (cfg.origin: { test_timeout =
---  "config" | "builtin" | "--timeout" }), config_path? (the config file loaded; nil: none) }
---@return table { seconds, source = "test" | "--timeout" | "config" | "builtin", text }, text
---  being "its limit (<source>; <how to change it>)"
function M.test_limit(test, run)
  local defaults, origin, config_path = run.defaults, run.origin, run.config_path
  local own = test.opts and test.opts.timeout
  if own then
    local yaml = require("abx.run.collect").is_yaml(test.file or "")
    return { seconds = own, source = "test", text = string.format("its limit (%s on the test; "
      .. "change it there)", yaml and ("timeout: " .. secs(own)) or ("timeout = " .. secs(own))) }
  end
  local seconds = defaults.test_timeout
  local from = origin and origin.test_timeout or "builtin"
  local text
  if from == "--timeout" then
    text = string.format("its limit (--timeout %s on the command line; set timeout = N on the test "
      .. "or another --timeout S)", secs(seconds))
  elseif from == "config" then
    text = string.format("its limit (defaults.test_timeout in %s; set timeout = N on the test or "
      .. "--timeout S)", config_name(config_path) or "the config")
  else
    text = string.format("its limit (the built-in default: %s; set timeout = N on the test, "
      .. "--timeout S or defaults.test_timeout in it)", config_path
      and ("defaults.test_timeout is not set in " .. config_name(config_path))
      or "no config file was found")
  end
  return { seconds = seconds, source = from, text = text }
end

---core.guard's options for a test body: { timeout, limit = "the test ran N s, its limit (...)" }.
---@param limit table from M.test_limit
---@return table
function M.guard_opts(limit)
  return { timeout = limit.seconds,
    limit = string.format("the test ran %s s, %s", secs(limit.seconds), limit.text) }
end

---core.guard's options for a phase bounded by one of the config's defaults (teardown_timeout,
---build_timeout): { timeout, interruptible, limit = "the <what> ran N s, its limit
---(defaults.<key> in <config>)" }.
---@param what string "teardown", "fixture teardown", "template build"
---@param key string the defaults key
---@param run table { defaults, origin?, config_path? } as for M.test_limit
---@param interruptible boolean
---@return table
function M.phase_opts(what, key, run, interruptible)
  local origin, config_path = run.origin, run.config_path
  local seconds = run.defaults[key]
  local from = origin and origin[key] == "config" and config_name(config_path)
  local where = from and ("defaults." .. key .. " in " .. from)
    or ("the built-in default; set defaults." .. key .. " in " .. (config_name(config_path)
      or "the config"))
  return { timeout = seconds, interruptible = interruptible,
    limit = string.format("the %s ran %s s, its limit (%s)", what, secs(seconds), where) }
end

return M
