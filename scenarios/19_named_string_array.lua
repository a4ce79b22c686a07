-- 19_named_string_array: named string-array arguments of the agent-sandbox-server's command
-- catalogue arrive intact, element by element, through the CLI (`abxlua sandbox call ID NAME
-- --json-args '{...}'`, run here as a child process of this engine) and through the Lua client
-- (sbx:server():call). The server is this checkout's source, uploaded into a fresh tracked base
-- sandbox with `abxlua sandbox cp` and verified there (sha256 of what is in the sandbox against
-- the source), then started; it is ready when its command catalogue answers (polled: the port's
-- routing can lag the process, as platform health can answer before port forwarding is ready).
-- Every expected case must appear in the report with both channels, or the scenario fails.
-- Fixtures: ctx.sandbox_factory (one file-scoped base sandbox), ctx.provider, ctx.conn,
-- ctx.run_id. Requires: nothing beyond commands, files and port routing (the CLI's cp, the
-- start and the server's port through the provider's own wire). Markers: none.
-- Server API: scenarios/templates/python-hello/server/server.py ("Command catalogue"); client:
-- lib/abx/client/server.lua; CLI: lib/abx/run/sandbox_cli/call.lua, README "abxlua sandbox".
-- Routing: docs/protocol/e2b-control-plane.md §7.1, §7.4.
local t = require("abx.test")
local core = require("abx.core")
local cjson = require("cjson")
local process = require("abx.run.process")

local SOURCE = "scenarios/templates/python-hello/server/server.py"
local DIR = "/tmp/abx-19-server"
local PORT = 8080

-- The cases: each an array of strings that must arrive as the same argv entries.
local CASES = {
  { "spaces", { "a b", "  leading", "trailing  ", "two  inner", " " } },
  { "quotes", { "it's", "say \"hi\"", "'", "\"", "`uname` $HOME $(id) \\n \\" } },
  { "unicode", { "ünïcödé", "日本語", "😀 emoji", "\u{202E}rtl", "tab\there" } },
  { "empty strings", { "", "x", "", "" } },
  { "empty array", {} },
  { "option-like and globs", { "--json", "-n", "*", "?", "[a]", "line\nbreak", "a=b" } },
}
local CHANNELS = { "cli", "lua" }

-- what arrived per case and channel: the rows of this scenario's report
local rows = {}

local function row(case, channel, ok, detail)
  rows[case .. "/" .. channel] = { ok = ok, detail = detail }
end

-- The environment a CLI child needs to reach this run's provider: the run exports its config,
-- provider and flavour (ABX_CONFIG, ABX_PROVIDER, ABX_FLAVOR: abx.run.config.export) to every
-- child, so `--config` alone reaches it; on top, the local platform this run started
-- (ABX_LOCAL_URL and ABX_LOCAL_API_KEY), or for a remote provider nothing more (its credentials
-- come from the same environment and .env files as this run's).
local function cli_env(ctx)
  local p = ctx.provider
  local env = { E2E_RUN_ID = ctx.run_id }
  if p.kind == "local" then
    env.ABX_LOCAL_URL, env.ABX_LOCAL_API_KEY = p.base_url, ctx.conn.api_key
    env.ABX_LOCAL_CA_CERT = p.ca_cert or false
  end
  return env
end

-- Runs `abxlua sandbox ARGS... --json` and decodes its one JSON document.
local function cli(ctx, args)
  local argv = { process.abxlua(), "sandbox" }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  argv[#argv + 1] = "--json"
  local r = process.run(argv, { env = cli_env(ctx), timeout = 90 })
  local ok, doc = pcall(cjson.decode, r.stdout)
  if not ok or type(doc) ~= "table" then
    t.fail(string.format("abxlua sandbox %s: no JSON document on stdout (exit %d; stderr: %s)",
      args[1], r.exit_code, r.stderr:sub(1, 400)))
  end
  return doc, r
end

-- The JSON text of {"values": array} (an empty array stays []).
local function values_json(values)
  local items = {}
  for i, v in ipairs(values) do items[i] = cjson.encode(v) end
  return "{\"values\":[" .. table.concat(items, ",") .. "]}"
end

-- The server: this checkout's source uploaded through the CLI, verified, started; its client
-- once the catalogue answers.
t.fixture("catalogue_server", { scope = "file" }, function(ctx)
  local sbx = ctx.sandbox_factory({ timeout = 300 })
  local src = assert(core.read_file(SOURCE), "cannot read " .. SOURCE)
  local want = core.sha256(src)
  local token = core.random_hex(16)
  core.add_secret(token)
  -- the directory is the server's user's: started as root (a provider whose commands run as
  -- root, as OpenSandbox's execd does), server.py becomes `user` before it writes its token
  local r = sbx.commands:run("mkdir -p " .. DIR .. " && chmod 0700 " .. DIR, { user = "user" })
  t.eq(r.exit_code, 0, "mkdir: " .. r.stderr)
  local doc = cli(ctx, { "cp", SOURCE, sbx.id .. ":" .. DIR .. "/server.py" })
  t.eq(doc.ok, true, "cp: " .. cjson.encode(doc.error or {}))
  t.eq(doc.direction, "upload")
  t.eq(doc.sha256, want, "cp reports the sha256 of the source")
  local sum = sbx.commands:run("sha256sum " .. DIR .. "/server.py")
  t.eq(sum.exit_code, 0, "sha256sum: " .. sum.stderr)
  t.eq(sum.stdout:match("^(%x+)"), want, "the server in the sandbox is this checkout's source")
  local start = sbx.commands:run("setsid python3 " .. DIR .. "/server.py >" .. DIR
    .. "/server.log 2>&1 </dev/null & echo started", { envs = {
      AGENT_SERVER_PORT = tostring(PORT), AGENT_SERVER_TOKEN = token,
      AGENT_SERVER_TOKEN_FILE = DIR .. "/token" } })
  t.eq(start.exit_code, 0, "start: " .. start.stderr)
  local srv = sbx:server({ port = PORT, token = token })
  -- ready = the catalogue answers through the port routing (health alone can come earlier)
  local cat = t.eventually(function() return srv:catalogue() end, { timeout = 30, interval = 0.3 })
  return { sbx = sbx, srv = srv, catalogue = cat, token_file = DIR .. "/token" }
end)

t.test("the catalogue lists typed commands, argv among them", {}, function(ctx)
  local s = ctx.catalogue_server
  local by = {}
  for _, c in ipairs(s.catalogue) do by[c.name] = c end
  t.ok(by.argv, "the catalogue has the argv command")
  t.eq(by.argv.args[1].name, "values")
  t.eq(by.argv.args[1].type, "string_array")
  t.eq(by.argv.args[1].required, true)
  local types = {}
  for _, c in ipairs(s.catalogue) do
    for _, a in ipairs(c.args) do types[a.type] = true end
  end
  for _, ty in ipairs({ "string", "string_array", "integer", "boolean" }) do
    t.ok(types[ty], "some argument is of type " .. ty)
  end
end)

-- The argv the case's call printed, checked element by element against the case.
local function check_values(case, got, server_argv)
  t.eq(type(got), "table", case[1] .. ": the command printed a JSON array")
  t.eq(#got, #case[2], case[1] .. ": as many argv entries as elements")
  for i, v in ipairs(case[2]) do
    t.eq(got[i], v, case[1] .. ": element " .. i)
    -- the server's own argv: the program and its two -c words, then the elements
    t.eq(server_argv[3 + i], v, case[1] .. ": the server's argv entry " .. (3 + i))
  end
  t.eq(#server_argv, 3 + #case[2], case[1] .. ": nothing added to the server's argv")
end

local CHANNEL = {
  lua = function(ctx, case)
    local r = ctx.catalogue_server.srv:call("argv", { values = case[2] })
    t.eq(r.exit_code, 0, case[1] .. ": " .. r.stderr)
    check_values(case, cjson.decode(r.stdout), r.argv)
  end,
  cli = function(ctx, case)
    local s = ctx.catalogue_server
    local doc, r = cli(ctx, { "call", s.sbx.id, "argv", "--json-args", values_json(case[2]),
      "--port", tostring(PORT), "--token-file", s.token_file })
    t.eq(doc.ok, true, case[1] .. ": " .. cjson.encode(doc.error or {}))
    t.eq(r.exit_code, 0, case[1] .. ": the CLI exits with the command's exit code")
    check_values(case, cjson.decode(doc.stdout), doc.argv)
  end,
}

t.test("string arrays arrive intact through `abxlua sandbox call --json-args` and the Lua client",
  {}, function(ctx)
  for _, case in ipairs(CASES) do
    for _, ch in ipairs(CHANNELS) do
      local ok, err = pcall(CHANNEL[ch], ctx, case)
      row(case[1], ch, ok, ok and nil or tostring(err))
    end
  end
  -- every case has a row for each channel, and each passed (a case dropped from the loops or a
  -- channel that silently did nothing fails here, naming it)
  local missing, failed = {}, {}
  for _, case in ipairs(CASES) do
    for _, ch in ipairs(CHANNELS) do
      local r = rows[case[1] .. "/" .. ch]
      if not r then missing[#missing + 1] = case[1] .. "/" .. ch
      elseif r and not r.ok then failed[#failed + 1] = case[1] .. "/" .. ch .. ": " .. r.detail end
    end
  end
  t.eq(#missing, 0, "missing report rows: " .. table.concat(missing, ", "))
  t.eq(#failed, 0, "failed rows:\n" .. table.concat(failed, "\n"))
end)

t.test("unknown commands, arguments and types are refused naming the valid ones",
  {}, function(ctx)
  local s = ctx.catalogue_server
  local e = t.raises("InvalidArgument", function() s.srv:call("nope", {}) end)
  t.eq(e.status, 400)
  t.match(e.message, "commands: argv")
  e = t.raises("InvalidArgument", function() s.srv:call("argv", { valuez = {} }) end)
  t.match(e.message, "unknown argument 'valuez' %(arguments: values%)")
  e = t.raises("InvalidArgument", function() s.srv:call("argv", { values = "a b" }) end)
  t.match(e.message, "must be string_array")
  e = t.raises("InvalidArgument", function() s.srv:call("head_file", { path = "/etc/hostname",
    lines = true }) end)
  t.match(e.message, "must be integer")
  e = t.raises("InvalidArgument", function() s.srv:call("argv", {}) end)
  t.match(e.message, "argument 'values' %(string_array%) is required")
  local doc, r = cli(ctx, { "call", s.sbx.id, "argv", "--json-args", "{\"values\": [1]}",
    "--port", tostring(PORT), "--token-file", s.token_file })
  t.eq(doc.ok, false)
  t.eq(doc.error.kind, "InvalidArgument")
  t.eq(doc.error.status, 400)
  t.eq(r.exit_code, 1)
  doc, r = cli(ctx, { "call", s.sbx.id, "argv", "--json-args", "[\"not an object\"]" })
  t.eq(doc.ok, false)
  t.eq(r.exit_code, 4, "a --json-args that is no object is a usage error")
end)
