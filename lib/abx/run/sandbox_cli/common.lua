-- abx.run.sandbox_cli.common: what every `abxlua sandbox` subcommand shares: the common options
-- (--provider, --config, --json), finding the provider's platform, the environment handed to a
-- subcommand's execute (abx.run.cmd.sandbox), its output (human text or one JSON document) and
-- the mapping of errors to exit codes.
--
-- Finding a local platform between invocations. `abxlua run` starts its own `abxlua serve` and
-- stops it at the end; a sandbox made by one `abxlua sandbox create` must outlive that call, so
-- a CLI call never starts a platform itself. With a provider of `kind: local` it uses, in order:
--   1. ABX_LOCAL_URL (environment, then .env) with ABX_LOCAL_API_KEY: a platform started by hand
--      (`ABX_LOCAL_API_KEY=e2b_<hex> abxlua serve --port 3000` prints both); an https URL (a
--      `serve --tls`, with a TLS provider) also needs ABX_LOCAL_CA_CERT, serve's CA file;
--   2. the state file <core.state_dir()>/sandbox-serve-<provider>.json that `abxlua sandbox
--      serve` writes while it runs (its ready line, pid and provider; in the 0700 state dir, and
--      removed when it stops); a file whose process is gone or whose platform does not answer
--      GET /health is stale and named in the error;
--   3. otherwise a usage error (exit 4) saying how to start one.
-- A remote provider is opened as `abxlua run` opens it (abx.run.provider: credentials from the
-- environment and .env files).
--
-- Output. Without --json, human lines on stdout (progress and errors on stderr). With --json,
-- exactly one JSON document on stdout (keys sorted): {"ok": true, "command": NAME, ...the
-- subcommand's fields} or {"ok": false, "command": NAME, "error": {"kind", "status",
-- "message"}}. Everything written goes through core.write's masking: no credential appears.
-- Exit codes: 0 ok; 1 the operation failed (an API or sandbox error); 2 interrupted; 4 usage
-- error, also an InvalidArgument raised before any request (status 0: a value refused locally)
-- and missing credentials or no local platform. `exec` returns the command's own exit code.
local core = require("abx.core")
local cjson = require("cjson")
local config = require("abx.run.config")
local provider = require("abx.run.provider")

local M = {}

M.FORMAT = "abxlua-sandbox-serve/1"

---Adds the options every subcommand has.
---@param cmd table argparse command
function M.add_options(cmd)
  cmd:option("--provider", "Provider from config/abxlua.yaml (default: ABX_PROVIDER or config).")
  cmd:option("--config", "Config file (default: ABX_CONFIG or config/abxlua.yaml).")
  cmd:flag("--json", "Print one JSON document on stdout (its shape: docs/cli.md, "
    .. "the `sandbox` entry).")
end

-- JSON documents are encoded by abx.json (empty arrays stay `[]`, objects have sorted keys).
local json = require("abx.json")

---Marks a table as a JSON array (an empty one stays `[]`). Returns it.
M.array = json.array

---Encodes a value as JSON (abx.json's rules: sorted keys, marked tables and sequences are arrays).
---Raises: a Lua error for a value JSON cannot hold (NaN, a function, a non-string key).
M.encode = json.encode

---A plain copy of a result table (SandboxInfo and the like: their fields, arrays marked).
---@param t table
---@return table
function M.plain(t)
  if type(t) ~= "table" then return t end
  local out, n = {}, 0
  for k, v in pairs(t) do
    n = n + 1
    out[k] = type(v) == "table" and M.plain(v) or v
  end
  if n > 0 and #t == n then json.array(out) end
  return out
end

-- The state file of `abxlua sandbox serve` for a provider.
---@param pname string
---@return string|nil path, string? message
function M.state_path(pname)
  local dir, err = core.state_dir()
  if not dir then return nil, err end
  return dir .. "/sandbox-serve-" .. pname .. ".json"
end

---Whether a process is alive (its /proc entry exists).
---@param pid integer
function M.alive(pid)
  return math.tointeger(pid) ~= nil and core.isdir("/proc/" .. math.tointeger(pid))
end

---The state file's document, or nil and why not (missing, unreadable, malformed, stale).
---@param pname string
---@return table|nil doc, string? why, string? path
function M.read_state(pname)
  local path, err = M.state_path(pname)
  if not path then return nil, err end
  if not core.exists(path) then return nil, "missing", path end
  local text = core.read_file(path)
  local ok, doc = pcall(cjson.decode, text or "")
  if not ok or type(doc) ~= "table" or doc.format ~= M.FORMAT or type(doc.ready) ~= "table"
    or type(doc.ready.url) ~= "string" or type(doc.ready.api_key) ~= "string" then
    return nil, path .. " is not a state file of `abxlua sandbox serve`", path
  end
  if not M.alive(doc.pid) or not M.alive(doc.serve_pid) then
    return nil, path .. " is stale: its process " .. tostring(math.tointeger(doc.pid) or doc.pid)
      .. " is gone", path
  end
  return doc, nil, path
end

-- The running local platform's ready line, and where it was found. `p`: the provider's settings
-- (an https ABX_LOCAL_URL needs a TLS provider, `tls: true`, and ABX_LOCAL_CA_CERT: the CA file
-- serve's ready line names as ca_cert). Raises InvalidArgument (exit 4) when there is none, or
-- when the URL's scheme and the provider disagree.
local function local_ready(pname, p)
  local url, source = provider.lookup("ABX_LOCAL_URL")
  if url then
    local key = provider.lookup("ABX_LOCAL_API_KEY")
    if not key then
      core.error("InvalidArgument", 0, "ABX_LOCAL_URL is set (" .. source .. ") but "
        .. "ABX_LOCAL_API_KEY is not: set it to the key `abxlua serve` printed")
    end
    core.add_secret(key)
    local scheme, host, port = url:match("^(https?)://([^/:]+):(%d+)/?$")
    if not host then
      core.error("InvalidArgument", 0, "ABX_LOCAL_URL must be http://HOST:PORT or "
        .. "https://HOST:PORT (what `abxlua serve` prints on its `listening on` line), got " .. url)
    end
    local tls = p.tls == true
    if (scheme == "https") ~= tls then
      core.error("InvalidArgument", 0, string.format("ABX_LOCAL_URL is %s but provider %s is "
        .. "%s: %s", url, pname, tls and "a TLS one (tls: true)" or "plain HTTP", tls
        and "give the https URL of a `serve --tls`" or "use a provider with tls: true (local-tls)"))
    end
    local ready = { url = scheme .. "://" .. host .. ":" .. port,
      port = math.tointeger(tonumber(port)), api_key = key,
      domain = provider.lookup("ABX_LOCAL_DOMAIN") or "localhost" }
    if tls then
      ready.ca_cert = provider.lookup("ABX_LOCAL_CA_CERT")
      if not ready.ca_cert or not core.exists(ready.ca_cert) then
        core.error("InvalidArgument", 0, "ABX_LOCAL_URL is https: set ABX_LOCAL_CA_CERT to the "
          .. "CA file `abxlua serve --tls` names on its ready line (ca_cert)"
          .. (ready.ca_cert and (", not " .. ready.ca_cert .. " (missing)") or ""))
      end
    end
    return ready, "ABX_LOCAL_URL (" .. source .. ")"
  end
  local doc, why, path = M.read_state(pname)
  if not doc then
    local hint = "start one with `abxlua sandbox serve" .. (pname ~= "local" and (" --provider "
      .. pname) or "") .. "` (in another terminal; Ctrl-C stops it and its sandboxes), or set "
      .. "ABX_LOCAL_URL and ABX_LOCAL_API_KEY to a running `abxlua serve`"
    if why == "missing" then
      core.error("InvalidArgument", 0, "no local platform is running for provider " .. pname
        .. " (no " .. tostring(path) .. "): " .. hint)
    end
    core.error("InvalidArgument", 0, tostring(why) .. ": " .. hint)
  end
  return doc.ready, path
end

---A connection to a local platform that already runs (ABX_LOCAL_URL, or a live `abxlua sandbox
---serve` state file), or nil when none does: what `abxlua cleanup` uses on a local provider, so
---it sweeps the platform the CLI's sandboxes live on instead of starting an empty one.
---@param pname string
---@param p table provider settings (kind local)
---@param run table { run_id =, defaults = }
---@return table|nil conn, string? endpoint
function M.attach_running(pname, p, run)
  if p.kind ~= "local" then return nil end
  if not provider.lookup("ABX_LOCAL_URL") and not M.read_state(pname) then return nil end
  local ready = local_ready(pname, p)
  return provider.attach(pname, p, ready, run), ready.url
end

local Env = {}
Env.__index = Env

---The provider's connection (opened once). Raises InvalidArgument (exit 4) for missing
---credentials or when no local platform runs; Transport when it does not answer.
---@return table conn
function Env:open()
  if self.conn then return self.conn end
  local run = { run_id = self.run_id, defaults = self.cfg.defaults }
  if self.p.kind == "local" then
    local ready, source = local_ready(self.pname, self.p)
    local conn = provider.attach(self.pname, self.p, ready, run)
    local ok, health = pcall(core.request, { url = ready.url .. "/health", timeout = 10 })
    if not ok or health.status ~= 200 then
      core.error("Transport", 0, "the local platform of " .. source .. " does not answer GET "
        .. ready.url .. "/health: " .. (ok and ("status " .. health.status) or tostring(health)))
    end
    self.conn, self.endpoint = conn, ready.url
    return conn
  end
  local conn, info = provider.open(self.pname, self.p, run)
  if not conn then
    core.error("InvalidArgument", 0, "provider " .. self.pname .. ": missing credentials ["
      .. table.concat(info.missing, ", ") .. "]")
  end
  self.conn, self.endpoint, self.stop = conn, info.endpoint, info.stop
  return conn
end

---Writes the subcommand's result: with --json the document {ok = true, command, ...doc}, else
---`human` (a string, or a function called to get one) when given.
---@param doc table
---@param human? string|function
function Env:emit(doc, human)
  if self.json then
    doc.ok, doc.command = true, self.name
    core.write(M.encode(doc) .. "\n", true)
  elseif human then
    local text = type(human) == "function" and human() or human
    if text ~= "" then core.write(text .. (text:sub(-1) == "\n" and "" or "\n"), true) end
  end
  self.emitted = true
end

---Human progress on stderr (never on stdout: --json keeps stdout to its one document).
---@param text string
function Env:say(text)
  core.ewrite("abxlua sandbox " .. self.name .. ": " .. text .. "\n", true)
end

---Registers fn to run when the subcommand ends however it ends (error, interrupt), once.
---@param fn function
function Env:finally(fn) self.finals[#self.finals + 1] = fn end

local function fail(env, err)
  local e = core.is_error(err) and err or { kind = "Internal", status = 0, message = tostring(err) }
  local code = 1
  if e.kind == "Interrupted" then code = 2 end
  if e.kind == "InvalidArgument" and (e.status or 0) == 0 then code = 4 end
  if env.json then
    core.write(M.encode({ ok = false, command = env.name, error = { kind = e.kind,
      status = e.status or 0, message = e.message } }) .. "\n", true)
  end
  core.ewrite(string.format("abxlua sandbox %s: %s%s: %s\n", env.name, e.kind,
    (e.status or 0) ~= 0 and (" (" .. e.status .. ")") or "", tostring(e.message)), true)
  return code
end

---Runs a subcommand module (abx.run.cmd.sandbox's contract) and returns the exit code.
---@param mod table the subcommand's module
---@param name string its name
---@param args table parsed arguments
---@return integer|nil code, string? usage error
function M.execute(mod, name, args)
  local cfg = config.load(config.find(args.config))
  local pname, p = config.provider(cfg, args.provider)
  local run_id = provider.lookup("E2E_RUN_ID")
  if run_id and not run_id:match("^[%w%-_]+$") then
    return nil, "E2E_RUN_ID may only contain letters, digits, '-' and '_'"
  end
  local env = setmetatable({ name = name, json = args.json == true, cfg = cfg, pname = pname,
    p = p, run_id = run_id or ("cli-" .. core.random_hex(6)), finals = {} }, Env)
  local code, usage
  local ok = core.run(function()
    core.on_interrupt(function()
      core.interrupt_note("abxlua sandbox " .. name .. ": second interrupt, exiting at once")
    end)
    local gok, c, u = core.guard(nil, function(e) return e end, mod.execute, args, env, name)
    if gok then
      code, usage = c, u
    elseif env.interrupt_is_stop and core.is_error(c) and c.kind == "Interrupted" then
      code = 0 -- serve: an interrupt is how it is stopped (its finally stops the platform)
    else
      code = fail(env, c)
    end
    for i = #env.finals, 1, -1 do
      local fok, ferr = pcall(env.finals[i])
      if not fok then core.ewrite("abxlua sandbox " .. name .. ": cleanup: " .. tostring(ferr) .. "\n") end
    end
    if env.stop then pcall(env.stop) end
    if core.interrupted() > 0 and code == 0 and not env.interrupt_is_stop then code = 2 end
  end)
  if not ok then return 3 end
  if code == nil and usage and env.json then
    core.write(M.encode({ ok = false, command = name, error = { kind = "InvalidArgument",
      status = 0, message = usage } }) .. "\n", true)
  end
  return code, usage
end

return M
