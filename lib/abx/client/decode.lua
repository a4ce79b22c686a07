-- abx.client.decode: checked decoding of what arrives inside a stream or answer, for
-- abx.client.commands, abx.client.pty, abx.client.watch, abx.client.files and abx.client.code.
-- Nothing is ever appended as nil or dropped: a field
-- that is not base64, text that is not UTF-8 where the protocol promises a string, or an event of
-- the wrong shape ends the call with a Protocol error naming the call (e.g. "commands:run"), what
-- was wrong and where (the message's 1-based number in its stream).
--
--   local bytes = decode.b64(data.stdout, "commands:run", "stdout of message 3", request)
--   local name  = decode.text(e.name, "files:watch_dir", "name of message 2", request)
--
-- Source: docs/protocol/envd-protocol.md §3 (ProtoJSON: bytes are base64, strings are UTF-8), §10
-- (the /execute stream's `text` is a JSON string).

local core = require("abx.core")
local errmap = require("abx.client.errmap")

local decode = {}

--- Raises Protocol "<call>: <what>" with `request` ("METHOD path") kept on the error.
--- Raises: always, Protocol (status 200: the answer was a success on the wire).
---@param call string
---@param what string
---@param request? string
function decode.fail(call, what, request)
  errmap.raise("Protocol", 200, call .. ": " .. what, { request = request })
end

--- The bytes of a base64 field (standard or URL-safe alphabet, padding optional: §3).
--- Raises: Protocol naming the call when `s` is not a string or not base64.
---@param s any
---@param call string e.g. "commands:run"
---@param what string e.g. "stdout of message 3"
---@param request? string
---@return string
function decode.b64(s, call, what, request)
  if type(s) ~= "string" then decode.fail(call, what .. " is not a base64 string", request) end
  local bytes = core.b64decode(s)
  if bytes == nil then decode.fail(call, what .. " is not base64", request) end
  return bytes
end

--- A string field that the protocol promises to be text: it must be a string of valid UTF-8.
--- Raises: Protocol naming the call otherwise.
---@param s any
---@param call string
---@param what string
---@param request? string
---@return string
function decode.text(s, call, what, request)
  if type(s) ~= "string" then decode.fail(call, what .. " is not a string", request) end
  if utf8.len(s) == nil then decode.fail(call, what .. " is not valid UTF-8", request) end
  return s
end

--- Like decode.text, but nil (and JSON null) pass as nil: an optional text field.
--- Raises: Protocol naming the call for anything else that is not UTF-8 text.
---@param s any
---@param call string
---@param what string
---@param request? string
---@return string|nil
function decode.opt_text(s, call, what, request)
  if s == nil or s == require("cjson").null then return nil end
  return decode.text(s, call, what, request)
end

return decode
