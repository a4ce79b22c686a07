-- abx.client.semantics: where the E2B-compatible providers differ on the wire, as pure functions
-- (no I/O) the client and the config share: the TTL (a lifetime from now or an absolute expiry,
-- with the provider's bounds), `${region}` substitution in URLs and domains, and the list
-- pagination (cursor or page number).
--
-- Sources: docs/protocol/e2b-control-plane.md §3.4 (E2B: `timeout` = seconds from now, min 1;
-- GET /v2/sandboxes `limit` + `nextToken`, X-Next-Token), §8.2 and docs/protocol/e2b-v2-and-peers.md §4
-- (OpenSandbox: `renew-expiration {expiresAt: RFC 3339}`, `page`/`pageSize`, body
-- `pagination{page,pageSize,totalItems,totalPages,hasNextPage}`), §5 (OpenKruise: 30 s .. 2 592 000 s,
-- 400 otherwise; CubeSandbox: default 15 s, min 0).
-- Errors: InvalidArgument (abx.client.errmap) naming the value, the bound and where it is set.

local errmap = require("abx.client.errmap")

local M = {}

M.TTL_MODES = { "lifetime", "expires_at" }
M.PAGINATION = { "cursor", "page" }

--- Checks a TTL against a provider's bounds before any request (the server would answer 400).
--- Raises: InvalidArgument "<what>: timeout N s is below|above this provider's minimum|maximum of
--- M s (<where>.min|max)".
---@param ttl? {min?: number, max?: number, where?: string} nil or no min/max: that bound is the
---  server's to enforce (E2B's own providers keep their 400 for a timeout below 1 s)
---@param seconds number
---@param what? string the call, e.g. "conn:create"
---@return integer seconds rounded up to a whole second
function M.check_ttl(ttl, seconds, what)
  what = what or "timeout"
  if type(seconds) ~= "number" or seconds ~= seconds then
    errmap.raise("InvalidArgument", 0, what .. ": timeout must be a number of seconds, got "
      .. tostring(seconds))
  end
  local s = math.ceil(seconds)
  local where = (ttl and ttl.where) or "ttl"
  local min = ttl and ttl.min
  if min and s < min then
    errmap.raise("InvalidArgument", 0, string.format("%s: timeout %d s is below this provider's "
      .. "minimum of %d s (%s.min)", what, s, min, where))
  end
  if ttl and ttl.max and s > ttl.max then
    errmap.raise("InvalidArgument", 0, string.format("%s: timeout %d s is above this provider's "
      .. "maximum of %d s (%s.max)", what, s, ttl.max, where))
  end
  return math.tointeger(s) or s
end

--- The RFC 3339 UTC time `seconds` after `now` (Unix seconds), whole seconds: the absolute
--- `expiresAt` of an expires_at provider.
---@param now number Unix seconds
---@param seconds number
---@return string e.g. "2026-12-01T17:41:13Z"
function M.expires_at(now, seconds)
  return os.date("!%Y-%m-%dT%H:%M:%SZ", math.floor(now + math.ceil(seconds)))
end

-- days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's days_from_civil)
local function days_from_civil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = (y >= 0 and y or y - 399) // 400
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = (153 * mp + 2) // 5 + d - 1
  local doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
  return era * 146097 + doe - 719468
end

--- Parses an RFC 3339 date-time ("2026-12-01T17:41:13Z", "…T17:41:13.25+02:00") to Unix seconds.
--- Raises: InvalidArgument (not RFC 3339).
---@param s string
---@return number
function M.parse_rfc3339(s)
  local y, mo, d, h, mi, sec, frac, zone = tostring(s):match(
    "^(%d%d%d%d)%-(%d%d)%-(%d%d)[Tt ](%d%d):(%d%d):(%d%d)(%.?%d*)([Zz+%-].*)$")
  local off = 0
  if zone and zone ~= "Z" and zone ~= "z" then
    local sign, oh, om = zone:match("^([+%-])(%d%d):(%d%d)$")
    if not sign then y = nil else
      off = (tonumber(oh) * 3600 + tonumber(om) * 60) * (sign == "+" and 1 or -1)
    end
  end
  if not y or frac == "." or tonumber(mo) < 1 or tonumber(mo) > 12 or tonumber(d) < 1
    or tonumber(d) > 31 or tonumber(h) > 23 or tonumber(mi) > 59 or tonumber(sec) > 60 then
    errmap.raise("InvalidArgument", 0, "not an RFC 3339 date-time: " .. tostring(s))
  end
  local t = days_from_civil(tonumber(y), tonumber(mo), tonumber(d)) * 86400
    + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(sec) - off
  return t + (frac ~= "" and tonumber("0" .. frac) or 0)
end

--- Seconds from `now` until an RFC 3339 expiry (negative when it has passed).
--- Raises: InvalidArgument (not RFC 3339).
---@param now number Unix seconds
---@param expires string
---@return number
function M.seconds_until(now, expires)
  return M.parse_rfc3339(expires) - now
end

--- The request body field of a TTL: lifetime -> {timeout = s}; expires_at -> {expiresAt = RFC 3339}.
--- Bounds are checked first (M.check_ttl). Raises: InvalidArgument (bounds, unknown mode).
---@param ttl? {mode?: "lifetime"|"expires_at", min?: number, max?: number, where?: string}
---@param now number Unix seconds
---@param seconds number
---@param what? string
---@return table body
function M.ttl_body(ttl, now, seconds, what)
  local s = M.check_ttl(ttl, seconds, what)
  local mode = ttl and ttl.mode or "lifetime"
  if mode == "lifetime" then return { timeout = s } end
  if mode == "expires_at" then return { expiresAt = M.expires_at(now, s) } end
  errmap.raise("InvalidArgument", 0, "ttl.mode must be lifetime or expires_at, got " .. tostring(mode))
end

--- Replaces `${region}` in a configured URL or domain. A value without it is returned as is.
--- Raises: InvalidArgument "<where> needs ${region}: set <vars> or <where's provider>.region" when
--- the value has one and `region` is nil; also for any other `${...}` (only region is known).
---@param value string
---@param region? string
---@param where string e.g. "providers.alicloud-fc.api_url"
---@param vars string[] the variables the region is read from, in order
---@return string
function M.substitute_region(value, region, where, vars)
  local other = value:gsub("%${region}", ""):match("%${([^}]*)}")
  if other then
    errmap.raise("InvalidArgument", 0, string.format("%s: unknown placeholder ${%s} (known: "
      .. "${region})", where, other))
  end
  if not value:find("${region}", 1, true) then return value end
  if not region or region == "" then
    errmap.raise("InvalidArgument", 0, string.format("%s needs ${region}: set %s or %s.region",
      where, table.concat(vars, " or "), where:match("^(.*)%.[^.]+$") or where))
  end
  if not region:match("^[%w][%w-]*$") then
    errmap.raise("InvalidArgument", 0, string.format("%s: region must be letters, digits and "
      .. "'-' (e.g. cn-hangzhou), got %q", where, region))
  end
  return (value:gsub("%${region}", region))
end

--- Query parameters of one list page. cursor: limit, nextToken (E2B GET /v2/sandboxes);
--- page: page (1-based), pageSize (OpenSandbox GET /sandboxes). `token` is the previous answer's
--- next token (cursor) or the page number to fetch as a string (page; nil = 1).
--- Raises: InvalidArgument (unknown style, bad page token).
---@param style "cursor"|"page"
---@param limit? integer
---@param token? string
---@return table pairs { {name, value}, ... } in order
function M.page_query(style, limit, token)
  local q = {}
  if style == "cursor" then
    if limit then q[#q + 1] = { "limit", string.format("%d", limit) } end
    if token then q[#q + 1] = { "nextToken", token } end
  elseif style == "page" then
    local page = 1
    if token ~= nil then page = math.tointeger(tonumber(token)) end
    if not page or page < 1 then
      errmap.raise("InvalidArgument", 0, "page pagination: the token must be a page number >= 1, got "
        .. tostring(token))
    end
    q[#q + 1] = { "page", string.format("%d", page) }
    if limit then q[#q + 1] = { "pageSize", string.format("%d", limit) } end
  else
    errmap.raise("InvalidArgument", 0, "pagination must be cursor or page, got " .. tostring(style))
  end
  return q
end

--- The next page's token from one answer: cursor: the X-Next-Token header ("" = none); page: the
--- body's pagination.page + 1 when pagination.hasNextPage. nil when this was the last page.
--- Raises: InvalidArgument (unknown style); Protocol-shaped data errors are the caller's (a page
--- body without `pagination` returns nil, no next page).
---@param style "cursor"|"page"
---@param headers table lower-case names
---@param body? table the decoded answer
---@return string|nil
function M.next_token(style, headers, body)
  if style == "cursor" then
    local t = headers["x-next-token"]
    if t == nil or t == "" then return nil end
    return t
  elseif style == "page" then
    local p = type(body) == "table" and body.pagination
    if type(p) ~= "table" or p.hasNextPage ~= true or not math.tointeger(p.page) then return nil end
    return string.format("%d", p.page + 1)
  end
  errmap.raise("InvalidArgument", 0, "pagination must be cursor or page, got " .. tostring(style))
end

return M
