-- abx.client.api_call: one E2B control-plane request with its retries, for every Connection call
-- (abx.client.sandbox's Connection:_call, and through it snapshot, volume and apikey). The API key
-- goes in X-API-Key (or the connection's auth_header); a JSON body is encoded with cjson.
-- Source: docs/protocol/e2b-control-plane.md §1.2 (X-API-Key), §2 (errors: the caller maps them).
local core = require("abx.core")
local cjson = require("cjson")
local errmap = require("abx.client.errmap")

local M = {}

-- Retries (issue 5, item 3): 429 (honouring Retry-After / RateLimit-Reset), 502, 503, 504 and
-- transport failures are retried on idempotent calls with exponential backoff and jitter, at most
-- RETRY.attempts attempts and RETRY.budget seconds in all. Every retry is logged (masked) on stderr.
local RETRY = { attempts = 4, base = 0.5, cap = 8, budget = 30 }
-- Control-plane answers are small (a full page of 100 sandboxes is ~100 KiB): anything larger
-- than this is a Protocol error rather than memory the engine keeps.
local MAX_API_BODY = 16 * 1024 * 1024
M.RETRY = RETRY
local RETRY_STATUS = { [429] = true, [502] = true, [503] = true, [504] = true }

---The wait before retry number `attempt` (seconds): exponential backoff with 50-150% jitter,
---at least the answer's Retry-After / RateLimit-Reset.
---@param attempt integer
---@param resp? table the retryable answer, nil after a transport failure
---@return number
local function retry_delay(attempt, resp)
  local d = math.min(RETRY.cap, RETRY.base * 2 ^ (attempt - 1))
  d = d * (0.5 + math.random()) -- jitter: 50%..150%
  if resp and resp.headers then
    local hint = tonumber(resp.headers["retry-after"] or resp.headers["ratelimit-reset"] or "")
    if hint and hint >= 0 then d = math.max(d, hint) end
  end
  return d
end

-- Retries made by this process (every one goes through log_retry): a run reports how many of
-- its calls needed one (abx.run.runner: the JSON report's `retries`, the console summary).
local retries = 0

---Logs one retry on stderr (masked by core.ewrite) and counts it.
local function log_retry(request, attempt, why, delay)
  retries = retries + 1
  core.ewrite(string.format("abxlua: retry %d/%d of %s after %s, in %.2fs\n", attempt,
    RETRY.attempts - 1, request, why, delay))
end

M.retry_delay = retry_delay
M.log_retry = log_retry

--- The number of retries this process has made so far (control plane and envd): a caller takes
--- the difference over what it ran. Raises: nothing.
---@return integer
function M.retries()
  return retries
end

--- Sends `send()` again while it answers a gateway's bare 502/503/504 (abx.client.errmap
--- .bare_gateway) and `again` allows it, with the backoff and bounds of RETRY; every retry is
--- logged and counted. `again` is true (a call that starts no work: always), false (never), or a
--- function called after each bare answer that returns true (send again; optionally with a
--- function that may replace the next answer that is not a bare one, e.g. a repeated SIGKILL's
--- not_found by the first one's success), a string (why not), or a response table to return
--- instead (the state showed the work done: abx.client.envd_checked).
--- Returns the last answer with `attempts` (requests sent) set, and `not_retried` set when a bare
--- answer came to a call that may not be sent again.
--- Raises: what `send` or `again` raises.
---@param request string "METHOD path", for the log
---@param again boolean|fun(): true|string|table, (fun(resp: table): table|nil)|nil
---@param send fun(): table a request: {status, headers, body}
---@return table resp
function M.gateway_retry(request, again, send)
  local deadline = M.retry_deadline()
  local attempt, settle = 1, nil
  while true do
    local resp = send()
    resp.attempts = attempt
    if not errmap.bare_gateway(resp.status, resp.body) then
      local settled = settle and settle(resp)
      if settled then settled.attempts = attempt end
      return settled or resp
    end
    local verdict = again
    if type(again) == "function" then verdict, settle = again() end
    if type(verdict) == "table" then
      verdict.attempts = attempt
      return verdict
    end
    if verdict ~= true then
      resp.not_retried = type(verdict) == "string" and verdict or request .. " may start work"
      return resp
    end
    if not M.backoff(request, attempt, deadline, resp.status) then return resp end
    attempt = attempt + 1
  end
end

--- After a gateway's bare answer to attempt number `attempt` of `request`: when RETRY allows
--- another attempt before `deadline` (core.now() seconds), logs and counts the retry, waits its
--- backoff and returns true; otherwise returns false at once. For loops that send their request
--- their own way (an envd stream, a streamed file read).
--- Raises: Timeout, Interrupted (from core.sleep).
---@param request string "METHOD path"
---@param attempt integer
---@param deadline number
---@param status integer the bare answer's status
---@return boolean
function M.backoff(request, attempt, deadline, status)
  local delay = retry_delay(attempt, nil)
  if attempt >= RETRY.attempts or core.now() + delay > deadline then return false end
  log_retry(request, attempt, "HTTP " .. status .. " (a gateway's bare answer)", delay)
  core.sleep(delay)
  return true
end

--- The deadline (core.now() seconds) of a call's retries starting now: RETRY.budget.
---@return number
function M.retry_deadline()
  return core.now() + RETRY.budget
end

--- One control-plane request on the connection `self` (abx.client.sandbox's Connection: api_url,
--- api_key, auth_header, request_timeout). Returns the response whatever its status, and "METHOD path".
--- With `retry = true` (idempotent calls), retryable answers and transport failures are retried
--- (see RETRY above); the last answer or error is what the caller sees.
--- Raises: Transport, Timeout, Protocol (from core.request).
---@param method string
---@param path string without query
---@param query? string already encoded
---@param body? table JSON body
---@param retry? boolean
---@param headers? table<string,string> more headers (abx.client.apikey's Authorization); with
---  them the API key is still sent when the connection has one
---@param timeout? number seconds for this request (default the connection's request_timeout;
---  a create gives its create_timeout)
---@param first_attempt? integer the attempt number of this call's first request, for the trace
---  (abx.run.trace): a caller that retries by itself (a create) counts its own attempts (default 1)
---@return table resp, string request
function M.call(self, method, path, query, body, retry, headers, timeout, first_attempt)
  local h = { ["Accept"] = "application/json" }
  if self.api_key then h[self.auth_header or "X-API-Key"] = self.api_key end -- reference §1.2
  for k, v in pairs(headers or {}) do h[k] = v end
  local payload
  if body ~= nil then
    h["Content-Type"] = "application/json"
    payload = cjson.encode(body)
  end
  local url = self.api_url .. path .. ((query and query ~= "") and ("?" .. query) or "")
  local request = method .. " " .. path
  local deadline = M.retry_deadline()
  local attempt = 1
  while true do
    -- a call that is never retried (a create) is never resent by libcurl either: on a reused
    -- connection that died before the answer, libcurl would send it again by itself and make a
    -- second sandbox the attempt tag cannot adopt (tests/faults create_reset)
    local ok, resp = pcall(core.request, { method = method, url = url, headers = h, body = payload,
      timeout = timeout or self.request_timeout, max_body = MAX_API_BODY, fresh_connect = not retry,
      attempt = (first_attempt or 1) + attempt - 1 }) -- for the trace; core.request ignores it
    local retryable, why
    if ok then
      retryable, why = RETRY_STATUS[resp.status], "HTTP " .. resp.status
      resp.attempts = attempt -- named by a gateway's Unavailable (abx.client.errmap.raise_api)
      if errmap.bare_gateway(resp.status, resp.body) then
        why = why .. " (a gateway's bare answer)"
        if not retry then resp.not_retried = request .. " is not idempotent" end
      end
    else
      retryable = core.is_error(resp) and resp.kind == "Transport"
      why = tostring(resp)
    end
    if not (retry and retryable) or attempt >= RETRY.attempts then
      if not ok then error(resp, 0) end
      return resp, request
    end
    local delay = retry_delay(attempt, ok and resp or nil)
    if core.now() + delay > deadline then
      if not ok then error(resp, 0) end
      return resp, request
    end
    log_retry(request, attempt, why, delay)
    core.sleep(delay)
    attempt = attempt + 1
  end
end

--- The HTTP deadline of one create request (seconds): max(request_timeout, create_timeout).
--- A create on the local platform waits for the template's start_cmd and ready_cmd (up to its
--- ready_timeout, platform/sandbox/template_start.h), so request_timeout alone would cut off a create the
--- platform is still honestly working on (issue 22); create_timeout is still finite, so a hung
--- platform does not hang the client.
---@param conn abx.Connection
---@return number
function M.create_deadline(conn)
  return math.max(conn.request_timeout, conn.create_timeout)
end

--- The error a create request raised, given back as is unless it is a Timeout of the create's
--- own deadline: then a Timeout whose message also names that deadline, where it is set and what
--- a create waits for, so that "machine busy" and "platform broken" can be told apart.
--- Raises: nothing (returns the error).
---@param conn abx.Connection
---@param e any what the request raised
---@param started number core.now() when the request began
---@return any
function M.create_timeout_error(conn, e, started)
  local limit = M.create_deadline(conn)
  if not (core.is_error(e) and e.kind == "Timeout") or core.now() - started < limit - 1 then
    return e
  end
  local _, ne = pcall(errmap.raise, "Timeout", 0, string.format("%s (the create's deadline, "
    .. "%g s: max(request_timeout, create_timeout), defaults.create_timeout in the config; a local "
    .. "platform answers a create once the template's ready_cmd succeeds, within the template's "
    .. "ready_timeout)", e.message, limit), { request = e.request })
  return ne
end

return M
