-- abx.mcp.json: JSON for the MCP server and client. Decoding is lua-cjson's; encoding is here,
-- because lua-cjson 2.1.0 (Debian) encodes an empty table as `{}` and has no array marker, while
-- MCP answers need empty arrays (`"tools": []`, `"content": []`). A table is an array when it has
-- the metatable M.array_mt or is a non-empty sequence; anything else is an object (string keys,
-- sorted, so the output is stable). cjson.null encodes as null.
-- Errors: Lua errors (a key that is not a string, NaN, a function) from encode; decode returns
-- nil, message for text that is not JSON or not UTF-8 (MCP messages MUST be UTF-8:
-- specification 2025-11-25, basic/transports).
local cjson = require("cjson")

local M = {}

M.null = cjson.null
M.array_mt = { __name = "abx.mcp.json.array" }

---Marks `t` (or a new table) as a JSON array, so that it encodes as `[]` when empty.
---@param t? table
---@return table
function M.array(t)
  return setmetatable(t or {}, M.array_mt)
end

local ESC = { ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f", ["\n"] = "\\n",
  ["\r"] = "\\r", ["\t"] = "\\t" }

local function str(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return ESC[c] or string.format("\\u%04x", c:byte())
  end) .. '"'
end

local encode

local function is_array(t)
  if getmetatable(t) == M.array_mt then return true end
  local n = #t
  if n == 0 then return false end
  local count = 0
  for _ in pairs(t) do count = count + 1 end
  return count == n
end

encode = function(v, out)
  local ty = type(v)
  if v == nil or v == cjson.null then
    out[#out + 1] = "null"
  elseif ty == "boolean" then
    out[#out + 1] = v and "true" or "false"
  elseif ty == "number" then
    if v ~= v or v == math.huge or v == -math.huge then error("JSON: cannot encode " .. tostring(v)) end
    if math.type(v) == "integer" then
      out[#out + 1] = string.format("%d", v)
    elseif v == math.floor(v) and math.abs(v) < 2 ^ 53 then
      out[#out + 1] = string.format("%d", math.tointeger(v))
    else
      out[#out + 1] = string.format("%.17g", v)
    end
  elseif ty == "string" then
    out[#out + 1] = str(v)
  elseif ty == "table" then
    if is_array(v) then
      out[#out + 1] = "["
      for i = 1, #v do
        if i > 1 then out[#out + 1] = "," end
        encode(v[i], out)
      end
      out[#out + 1] = "]"
    else
      local keys = {}
      for k in pairs(v) do
        if type(k) ~= "string" then error("JSON: object key " .. tostring(k) .. " is not a string") end
        keys[#keys + 1] = k
      end
      table.sort(keys)
      out[#out + 1] = "{"
      for i, k in ipairs(keys) do
        if i > 1 then out[#out + 1] = "," end
        out[#out + 1] = str(k)
        out[#out + 1] = ":"
        encode(v[k], out)
      end
      out[#out + 1] = "}"
    end
  else
    error("JSON: cannot encode a " .. ty)
  end
end

---Encodes a value as one line of JSON (no newline in it: strings escape theirs).
---@param v any
---@return string
function M.encode(v)
  local out = {}
  encode(v, out)
  return table.concat(out)
end

---Decodes JSON text.
---@param s string
---@return any|nil value, string|nil error
function M.decode(s)
  if not utf8.len(s) then return nil, "the message is not valid UTF-8" end
  local ok, v = pcall(cjson.decode, s)
  if not ok then return nil, (tostring(v):gsub("^.-:%d+: ", "")) end
  return v
end

return M
