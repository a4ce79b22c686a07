-- abx.mcp.schema: checks tool arguments against the tools' input schemas, the same tables
-- tools/list publishes (so the published schema is the one enforced). Only the JSON Schema
-- keywords those schemas use are understood, and a schema with any other keyword is refused when
-- it is checked: type (object, string, integer, number, boolean), properties, required,
-- additionalProperties (false or a schema), enum, minimum, maximum, minLength, maxLength,
-- description, default, title.
-- Source: JSON Schema 2020-12 validation (the default dialect of MCP 2025-11-25 inputSchema,
-- server/tools "Tool"); MCP recommends additionalProperties false for tools.
local M = {}

local KNOWN = { type = true, properties = true, required = true, additionalProperties = true,
  enum = true, minimum = true, maximum = true, minLength = true, maxLength = true,
  description = true, default = true, title = true }

local function kind(v)
  local t = type(v)
  if t == "number" then
    return (math.type(v) == "integer" or v == math.floor(v)) and "integer" or "number"
  end
  if t == "table" then return "table" end
  return t
end

local function check(schema, v, path)
  for k in pairs(schema) do
    if not KNOWN[k] then error("schema keyword " .. k .. " at " .. path .. " is not supported", 0) end
  end
  local want = schema.type
  local got = kind(v)
  if want == "object" then
    if got ~= "table" or (next(v) ~= nil and #v > 0) then
      return path .. " must be an object"
    end
    local props = schema.properties or {}
    for _, name in ipairs(schema.required or {}) do
      if v[name] == nil then return path .. "." .. name .. " is required" end
    end
    local names = {}
    for n in pairs(props) do names[#names + 1] = n end
    table.sort(names)
    for key, val in pairs(v) do
      if type(key) ~= "string" then return path .. " must be an object" end
      local sub = props[key]
      if sub then
        local err = check(sub, val, path .. "." .. key)
        if err then return err end
      elseif schema.additionalProperties == false then
        return string.format("%s: unknown property %q (known: %s)", path, key,
          #names > 0 and table.concat(names, ", ") or "none")
      elseif type(schema.additionalProperties) == "table" then
        local err = check(schema.additionalProperties, val, path .. "." .. key)
        if err then return err end
      end
    end
    return nil
  elseif want == "string" then
    if got ~= "string" then return path .. " must be a string" end
    if schema.minLength and utf8.len(v) < schema.minLength then
      return string.format("%s must have at least %d characters", path, schema.minLength)
    end
    if schema.maxLength and (utf8.len(v) or #v) > schema.maxLength then
      return string.format("%s must have at most %d characters", path, schema.maxLength)
    end
  elseif want == "integer" then
    if got ~= "integer" then return path .. " must be an integer" end
  elseif want == "number" then
    if got ~= "integer" and got ~= "number" then return path .. " must be a number" end
  elseif want == "boolean" then
    if got ~= "boolean" then return path .. " must be a boolean" end
  elseif want ~= nil then
    error("schema type " .. tostring(want) .. " at " .. path .. " is not supported", 0)
  end
  if schema.minimum and v < schema.minimum then
    return string.format("%s must be at least %s", path, tostring(schema.minimum))
  end
  if schema.maximum and v > schema.maximum then
    return string.format("%s must be at most %s", path, tostring(schema.maximum))
  end
  if schema.enum then
    for _, e in ipairs(schema.enum) do
      if e == v then return nil end
    end
    local vals = {}
    for i, e in ipairs(schema.enum) do vals[i] = tostring(e) end
    return string.format("%s must be one of %s, got %s", path, table.concat(vals, ", "), tostring(v))
  end
  return nil
end

---Checks `value` against `schema`.
---@param schema table
---@param value any
---@param path? string the name of the value in messages (default "arguments")
---@return string|nil error the first violation, naming the field and what is valid; nil when valid
function M.check(schema, value, path)
  return check(schema, value, path or "arguments")
end

return M
