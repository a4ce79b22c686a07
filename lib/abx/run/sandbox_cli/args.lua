-- abx.run.sandbox_cli.args: argument converters and checks shared by the `abxlua sandbox`
-- subcommands (argparse `:convert` functions return nil and a message to refuse a value: a
-- usage error, exit 4, naming the option and what is valid).
local M = {}

---A positive whole number of seconds.
---@param what string the option, for messages
---@return function convert
function M.seconds(what)
  return function(s)
    local n = tonumber(s)
    if not n or n ~= math.floor(n) or n < 1 or n > 86400 * 30 then
      return nil, what .. " must be a whole number of seconds from 1 to 2592000, got " .. s
    end
    return math.tointeger(n)
  end
end

---A whole number in [lo, hi].
function M.integer(what, lo, hi)
  return function(s)
    local n = math.tointeger(tonumber(s))
    if not n or n < lo or n > hi then
      return nil, string.format("%s must be a whole number from %d to %d, got %s", what, lo, hi, s)
    end
    return n
  end
end

---Turns repeated KEY=VALUE options into a table; nil and a message for a malformed or repeated
---key, or one of `reserved`.
---@param list string[]|nil
---@param what string the option
---@param reserved? table<string, string> key → why it is refused
---@return table|nil map, string? err
function M.pairs(list, what, reserved)
  local out = {}
  for _, item in ipairs(list or {}) do
    local k, v = item:match("^([^=]+)=(.*)$")
    if not k then return nil, what .. " takes KEY=VALUE, got " .. item end
    if reserved and reserved[k] then return nil, what .. " " .. k .. ": " .. reserved[k] end
    if out[k] ~= nil then return nil, what .. " " .. k .. " is given twice" end
    out[k] = v
  end
  return out
end

---A sandbox id as the platforms make them (letters, digits, '-', '_'); nil and a message else.
function M.sandbox_id(id)
  if type(id) ~= "string" or not id:match("^[%w][%w%-_]*$") or #id > 128 then
    return nil, "not a sandbox id (letters, digits, '-', '_'): " .. tostring(id)
  end
  return id
end

return M
