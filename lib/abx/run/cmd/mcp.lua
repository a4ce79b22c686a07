-- abx.run.cmd.mcp: `abxlua mcp`, a Model Context Protocol server whose tools create sandboxes, run
-- commands, read and write files, list and kill (abx.mcp.tools), over stdio (default) or
-- streamable HTTP (--http HOST:PORT). The provider is chosen as for every command (--provider,
-- --config; the local platform by default, started by the command itself); --attach takes the
-- caller's connection from ABX_MCP_ATTACH instead (the Lua client, abx.mcp.client, does this so
-- that the server works on the caller's platform).
-- Ownership: what the server creates is tagged e2e=<run id> and mcp_owner=<owner>, and only that
-- is killed at shutdown (stdin EOF, SIGINT, SIGTERM; a session's DELETE for its own).
-- Config (config/abxlua.yaml, optional): mcp: {metadata_allow: [KEY, ...], max_timeout: SECONDS,
-- list_all: BOOL}; a flag wins over the config.
-- Exit codes: 0 after an orderly end, 1 a kill at shutdown failed or the server could not start,
-- 2 ended by a signal, 4 usage error.
local core = require("abx.core")
local config = require("abx.run.config")
local provider = require("abx.run.provider")
local tools = require("abx.mcp.tools")
local server = require("abx.mcp.server")

local M = {}

function M.configure(parser)
  local cmd = parser:command("mcp", "A Model Context Protocol server (stdio, or streamable HTTP with "
    .. "--http) with sandbox tools; it kills what it created when it ends.")
  cmd:option("--provider", "Provider from config/abxlua.yaml (default: ABX_PROVIDER or config).")
  cmd:option("--config", "Config file (default: ABX_CONFIG or config/abxlua.yaml).")
  cmd:option("--http", "Serve streamable HTTP on HOST:PORT (POST and DELETE /mcp; GET is 405) instead of "
    .. "stdio; PORT 0 picks one (printed on stderr).")
  cmd:option("--http-response", "How requests are answered over HTTP: json (one JSON object) or "
    .. "sse (an SSE stream of one message event).", "json"):choices({ "json", "sse" })
  cmd:flag("--http-allow-remote", "Allow a non-loopback --http address (the endpoint has no "
    .. "authentication: anyone who reaches it drives your sandboxes).")
  cmd:option("--metadata-allow", "Comma-separated metadata keys create_sandbox accepts (default: "
    .. "mcp.metadata_allow from the config, else none).")
  cmd:option("--max-timeout", "Largest sandbox timeout (TTL) create_sandbox accepts, seconds "
    .. "(default: mcp.max_timeout, else 3600).")
  cmd:flag("--list-all", "Let list_sandboxes list every sandbox of the account (scope all), not "
    .. "only this server's.")
  cmd:option("--template", "Template create_sandbox uses when none is given (default: the "
    .. "config's defaults.template).")
  cmd:option("--run-id", "The e2e tag value of created sandboxes (default: E2E_RUN_ID, else "
    .. "mcp-<random>).")
  cmd:flag("--attach", "Use the connection described in ABX_MCP_ATTACH (set by the Lua client, "
    .. "abx.mcp.client) instead of opening a provider.")
end

local KEY = "^[%w][%w_.%-]*$"

---Checks the metadata allowlist; returns the keys or nil, message.
function M.allowlist(text, from_config)
  local keys, seen = {}, {}
  local list = {}
  if text then
    for k in (text .. ","):gmatch("([^,]*),") do list[#list + 1] = k end
  else
    list = from_config or {}
  end
  for _, k0 in ipairs(list) do
    local k = type(k0) == "string" and k0:match("^%s*(.-)%s*$") or nil
    if not k or k == "" or not k:match(KEY) or #k > 64 then
      return nil, string.format("--metadata-allow: %q is not a metadata key (letters, digits, "
        .. "'_', '.', '-'; at most 64)", tostring(k0))
    end
    if tools.RESERVED[k] then
      return nil, string.format("--metadata-allow: %s is the server's own tag (reserved: e2e, "
        .. "mcp_owner, e2e_attempt) and cannot be allowed", k)
    end
    if not seen[k] then
      seen[k] = true
      keys[#keys + 1] = k
    end
  end
  table.sort(keys)
  return keys
end

local function parse_http(s, allow_remote)
  local host, port = s:match("^%[([%x:]+)%]:(%d+)$")
  if not host then host, port = s:match("^([^:]+):(%d+)$") end
  port = tonumber(port)
  if not host or not port or port > 65535 then
    return nil, "--http must be HOST:PORT (an IP address and a port 0..65535, e.g. 127.0.0.1:8931), got " .. s
  end
  if host == "localhost" then host = "127.0.0.1" end
  local loop = host == "::1" or host:match("^127%.%d+%.%d+%.%d+$")
  if not loop and not allow_remote then
    return nil, "--http " .. s .. " is not a loopback address: the endpoint has no "
      .. "authentication; add --http-allow-remote to serve it there anyway"
  end
  return { host = host, port = math.tointeger(port) }
end

function M.execute(args)
  local cfg = config.load(config.find(args.config))
  local mcfg = cfg.mcp or {}
  local allow, aerr = M.allowlist(args.metadata_allow, mcfg.metadata_allow)
  if not allow then return nil, aerr end
  local max_timeout = mcfg.max_timeout or 3600
  if args.max_timeout then
    max_timeout = math.tointeger(tonumber(args.max_timeout))
    if not max_timeout or max_timeout < 1 then
      return nil, "--max-timeout must be a whole number of seconds >= 1, got " .. args.max_timeout
    end
  end
  local http
  if args.http then
    local herr
    http, herr = parse_http(args.http, args.http_allow_remote)
    if not http then return nil, herr end
  end
  local run_id = args.run_id or provider.lookup("E2E_RUN_ID") or ("mcp-" .. core.random_hex(6))
  if not run_id:match("^[%w%-_]+$") then
    return nil, "--run-id may only contain letters, digits, '-' and '_'"
  end
  local pname, psettings
  if not args.attach then pname, psettings = config.provider(cfg, args.provider) end
  local owner = core.random_hex(8)
  local metadata = { e2e = run_id, mcp_owner = owner }
  local code = 1
  local ok, nerr = core.run(function()
    local conn, info
    if args.attach then
      local text = core.getenv(require("abx.mcp.attach").VARIABLE)
      if not text then
        server.log("--attach needs ABX_MCP_ATTACH (set by the Lua client, abx.mcp.client)")
        code = 4
        return
      end
      local aok, c = pcall(require("abx.mcp.attach").import, text, metadata)
      if not aok then
        server.log(tostring(c))
        code = 4
        return
      end
      conn, info = c, { endpoint = c.api_url }
    else
      local pok, c, i = pcall(provider.open, pname, psettings,
        { run_id = run_id, defaults = cfg.defaults })
      if not pok then
        server.log(tostring(c))
        code = 1
        return
      end
      if not c then
        server.log("missing credentials for provider " .. pname .. ": "
          .. table.concat(i.missing, ", "))
        code = 4
        return
      end
      conn, info = c, i
      conn.default_metadata = metadata
    end
    local book = tools.new({ conn = conn, run_id = run_id, owner = owner, allow = allow,
      max_timeout = max_timeout, template = args.template or cfg.defaults.template,
      list_all = args.list_all or mcfg.list_all == true, log = server.log })
    server.log(string.format("provider %s (%s), run id %s, owner %s, metadata allowed: %s",
      pname or "attached", tostring(info.endpoint), run_id, owner,
      #allow > 0 and table.concat(allow, ", ") or "none"))
    code = server.run({ book = book, transport = http and "http" or "stdio",
      host = http and http.host, port = http and http.port, response = args.http_response,
      tags = "e2e=" .. run_id .. " mcp_owner=" .. owner,
      instructions = "Sandbox tools: create_sandbox returns a sandbox_id the other tools take. "
        .. "Sandboxes are killed when the session or the server ends.",
      stop_provider = function() if info.stop then info.stop(false) end end })
  end)
  if not ok then
    core.ewrite("abxlua: " .. tostring(nerr) .. " internal task error(s)\n")
    return 3
  end
  return code
end

return M
