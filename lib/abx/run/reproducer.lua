-- abx.run.reproducer: one recorded exchange (abx.run.trace) as a curl command line that replays
-- it (docs/reports/traces.md "Reproducer"). Credentials are never written: a header that carries
-- one becomes a shell variable reference ("$E2B_API_KEY") the reader sets before running it;
-- every other argument is single-quoted. The request body goes in --data-binary when the trace
-- kept it whole as text; otherwise a trailing shell comment says what is missing.
local core = require("abx.core")

local M = {}

-- Header (lower-case) -> the variable that holds its value. Authorization keeps its scheme
-- ("Bearer $E2B_ACCESS_TOKEN"). Names: the ones abx.run.secrets registers and the SDKs read
-- (E2B_API_KEY, E2B_ACCESS_TOKEN); envd's and the traffic token have no SDK variable.
M.VARS = {
  ["x-api-key"] = "E2B_API_KEY",
  ["authorization"] = "E2B_ACCESS_TOKEN",
  ["x-access-token"] = "ENVD_ACCESS_TOKEN",
  ["e2b-traffic-access-token"] = "E2B_TRAFFIC_ACCESS_TOKEN",
  ["x-e2b-traffic-access-token"] = "E2B_TRAFFIC_ACCESS_TOKEN",
}

-- Headers curl computes itself: replaying them verbatim would be wrong after an edit.
local SKIP = { ["content-length"] = true, ["host"] = true, ["connection"] = true,
  ["transfer-encoding"] = true }

---`s` quoted for the shell: single-quoted ('it'\''s'); with control bytes (a body's newlines)
---in ANSI-C quotes ($'a\nb', bash, zsh, ksh and POSIX.1-2024 sh), so the line stays one line.
---@param s string
---@return string
function M.quote(s)
  if not s:find("[%c]") then return "'" .. s:gsub("'", "'\\''") .. "'" end
  return "$'" .. s:gsub("[%c\\']", function(c)
    if c == "\n" then return "\\n" elseif c == "\r" then return "\\r" elseif c == "\t" then return "\\t"
    elseif c == "\\" or c == "'" then return "\\" .. c end
    return string.format("\\x%02x", c:byte())
  end) .. "'"
end

-- `s` inside double quotes with $, `, " and \ escaped (the variable reference is added after).
local function dq_escape(s)
  return (s:gsub('[$`"\\]', "\\%0"))
end

-- The variable for a header whose value is a secret ("***" after masking) with no name in VARS:
-- ABX_<NAME> in upper case, non-alphanumerics as "_".
local function var_for(name)
  return M.VARS[name:lower()] or ("ABX_" .. name:upper():gsub("[^%w]", "_"))
end

-- One -H argument: the value as a variable reference when it is a credential.
local function header_arg(name, value)
  local lname = name:lower()
  if M.VARS[lname] or value:find("***", 1, true) then
    local scheme = lname == "authorization" and value:match("^(%a+) ") or nil
    local prefix = scheme and (scheme .. " ") or ""
    return '-H "' .. dq_escape(name .. ": " .. prefix) .. "$" .. var_for(name) .. '"'
  end
  return "-H " .. M.quote(name .. ": " .. value)
end

---The curl command line (one line) that replays `ex` (an exchange of abx.run.trace), masked.
---@param ex table
---@return string
function M.curl(ex)
  local parts = { "curl", "-sS", "-i" }
  if ex.method ~= "GET" or (ex.request and ex.request.body) then
    parts[#parts + 1] = "-X " .. M.quote(ex.method)
  end
  local names = {}
  for k in pairs(ex.request and ex.request.headers or {}) do names[#names + 1] = k end
  table.sort(names)
  for _, k in ipairs(names) do
    if not SKIP[k:lower()] then
      parts[#parts + 1] = header_arg(k, core.mask(ex.request.headers[k]))
    end
  end
  local note
  local b = ex.request and ex.request.body
  if b then
    if b.text and not b.truncated then
      parts[#parts + 1] = "--data-binary " .. M.quote(core.mask(b.text))
    elseif b.file then
      note = string.format("# the body (%d bytes) was sent from a file: add --data-binary @FILE",
        b.length)
    else
      note = string.format("# the body (%d bytes, sha256 %s) is %s: add --data-binary @FILE",
        b.length, b.sha256 or "?", b.text and "longer than the trace keeps" or "binary")
    end
  end
  parts[#parts + 1] = M.quote(core.mask(ex.url))
  if ex.url:find("=***", 1, true) then
    note = (note and note .. "; " or "# ") .. "a credential in the query is masked (***)"
  end
  if note then parts[#parts + 1] = note end
  return (table.concat(parts, " "):gsub("[\r\n]", " "))
end

return M
