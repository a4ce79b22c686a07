-- abx.json: the one JSON encoder of the engine's own documents (MCP messages, `--json` output of
-- the sandbox CLI and `abxlua providers`, run and acceptance reports). Decoding is lua-cjson's.
-- Encoding is here because lua-cjson 2.1.0 (Debian 12) encodes an empty table as `{}` and has no
-- array marker, while these documents need empty arrays (`"tools": []`, `"tests": []`).
--
-- Rules of M.encode:
--   * a table is an array when it carries M.array_mt (M.array) or is a non-empty sequence (every
--     key 1..#t); any other table is an object whose keys must all be strings, written sorted so
--     the output is stable and diffs well;
--   * nil and cjson.null are null; integers and integral floats below 2^53 are written as
--     integers; other floats in the shortest of %.14g / %.17g that reads back equal;
--   * strings escape `"`, `\` and every control character; opts.clean(s), when given, is applied
--     to each string (key or value) first (reports make stray bytes valid UTF-8 that way).
-- Errors: a Lua error naming the problem for NaN/inf, a non-string object key, or a value of
-- another type (function, userdata other than cjson.null).
local cjson = require("cjson")

local M = {}

M.null = cjson.null
M.array_mt = { __name = "abx.json.array" }

---Marks `t` (or a new table) as a JSON array, so that it encodes as `[]` when empty. Returns it.
---@param t? table
---@return table
function M.array(t)
  return setmetatable(t or {}, M.array_mt)
end

local ESC = { ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f", ["\n"] = "\\n",
  ["\r"] = "\\r", ["\t"] = "\\t" }

local function str(s, clean)
  if clean then s = clean(s) end
  return '"' .. s:gsub('[%c"\\]', function(c)
    return ESC[c] or string.format("\\u%04x", c:byte())
  end) .. '"'
end

local function is_array(t)
  if getmetatable(t) == M.array_mt then return true end
  local n = #t
  if n == 0 then return false end
  local count = 0
  for _ in pairs(t) do count = count + 1 end
  return count == n
end

local function number(v)
  if v ~= v or v == math.huge or v == -math.huge then
    error("JSON: cannot encode the number " .. tostring(v), 0)
  end
  if math.type(v) == "integer" then return string.format("%d", v) end
  if v == math.floor(v) and math.abs(v) < 2 ^ 53 then
    return string.format("%d", math.tointeger(v))
  end
  local short = string.format("%.14g", v)
  if tonumber(short) == v then return short end
  return string.format("%.17g", v)
end

local function encode(v, out, clean)
  local ty = type(v)
  if v == nil or v == cjson.null then
    out[#out + 1] = "null"
  elseif ty == "boolean" then
    out[#out + 1] = v and "true" or "false"
  elseif ty == "number" then
    out[#out + 1] = number(v)
  elseif ty == "string" then
    out[#out + 1] = str(v, clean)
  elseif ty == "table" then
    if is_array(v) then
      out[#out + 1] = "["
      for i = 1, #v do
        if i > 1 then out[#out + 1] = "," end
        encode(v[i], out, clean)
      end
      out[#out + 1] = "]"
    else
      local keys = {}
      for k in pairs(v) do
        if type(k) ~= "string" then
          error("JSON: object key " .. tostring(k) .. " is not a string", 0)
        end
        keys[#keys + 1] = k
      end
      table.sort(keys)
      out[#out + 1] = "{"
      for i, k in ipairs(keys) do
        if i > 1 then out[#out + 1] = "," end
        out[#out + 1] = str(k, clean)
        out[#out + 1] = ":"
        encode(v[k], out, clean)
      end
      out[#out + 1] = "}"
    end
  else
    error("JSON: cannot encode a " .. ty, 0)
  end
end

---Encodes a value as one line of JSON (strings escape their newlines).
---@param v any
---@param opts? {clean: fun(s: string): string}
---@return string
function M.encode(v, opts)
  local out = {}
  encode(v, out, opts and opts.clean)
  return table.concat(out)
end

---Decodes JSON text; MCP messages and our documents must be UTF-8 (MCP specification
---2025-11-25, basic/transports).
---@param s string
---@return any|nil value, string|nil error  -- nil and a message for text that is not UTF-8 JSON
function M.decode(s)
  if not utf8.len(s) then return nil, "the text is not valid UTF-8" end
  local ok, v = pcall(cjson.decode, s)
  if not ok then return nil, (tostring(v):gsub("^.-:%d+: ", "")) end
  return v
end

-- The JSON text `s` with each empty array `[]` (outside strings) written as `["<token>"]`, or
-- nil when a string is not terminated (cjson then says why).
local function tag_empty_arrays(s, token)
  local out, pos, last = {}, 1, 1
  while true do
    local i = s:find('["%[]', pos)
    if not i then break end
    if s:byte(i) == 34 then -- a string: skip to its closing quote, over escapes
      local j = i + 1
      while true do
        local k = s:find('["\\]', j)
        if not k then return nil end
        if s:byte(k) == 92 then j = k + 2 else pos = k + 1; break end
      end
    else
      local close = s:match("^[ \t\r\n]*()%]", i + 1)
      if close then
        out[#out + 1] = s:sub(last, i) .. '"' .. token .. '"'
        last = close
      end
      pos = i + 1
    end
  end
  out[#out + 1] = s:sub(last)
  return table.concat(out)
end

-- `v` with every one-element array holding `token` replaced by an empty M.array, and every
-- integral number made a Lua integer (lua-cjson decodes every number as a float).
local function restore(v, token)
  if type(v) == "number" then return math.tointeger(v) or v end
  if type(v) ~= "table" then return v end
  if v[1] == token and rawlen(v) == 1 then return M.array() end
  for k, x in pairs(v) do
    if type(x) == "table" or type(x) == "number" then v[k] = restore(x, token) end
  end
  return v
end

---Decodes JSON text as M.decode does, but an empty array comes back as M.array() (lua-cjson 2.1.0
---decodes `[]` and `{}` alike as an empty table) and an integral number as a Lua integer (cjson
---gives floats: 6.0), so that a decoded document reads as the writer's table did and re-encodes
---with M.encode to the same shape: what reading a report and writing it again needs.
---@param s string
---@return any|nil value, string|nil error  -- nil and a message for text that is not UTF-8 JSON
function M.decode_keep_arrays(s)
  if not utf8.len(s) then return nil, "the text is not valid UTF-8" end
  local token, n = "abx.json:empty-array", 0
  while s:find(token, 1, true) do n = n + 1; token = "abx.json:empty-array:" .. n end
  local tagged = tag_empty_arrays(s, token) or s
  local ok, v = pcall(cjson.decode, tagged)
  if not ok then return nil, (tostring(v):gsub("^.-:%d+: ", "")) end
  return restore(v, token)
end

return M
