-- OpenSandbox mapping case (run by tests/runner/run_case.sh from the source root; issue 12 part 2):
-- the adapter's pure functions, without a server: the create body from conn:create's options,
-- states, SandboxInfo, SSE framing (events split across chunks, multi-line data, execd's bare
-- JSON framing, unknown type / bad JSON / stray line -> Protocol), a command's events ->
-- CommandResult (missing execution_complete -> Protocol), error bodies -> kinds, the endpoint
-- URL, list pagination, FileInfo -> EntryInfo, the upload body, which templates are snapshot ids,
-- execd's code results -> E2B's Result and ExecutionError, Skipped for primitives with no
-- equivalent, and provider.open choosing the adapter for protocol: opensandbox.
-- Sources: alibaba/OpenSandbox @3bb6fad specs/sandbox-lifecycle.yml, specs/execd-api.yaml.
-- Expected: 13 passed, exit 0.
-- expect-line: ^13 passed, 0 failed
local t = require("abx.test")
local core = require("abx.core")
local cjson = require("cjson")
local wire = require("abx.client.opensandbox_wire")
local opensandbox = require("abx.client.opensandbox")
local osfiles = require("abx.client.opensandbox_files")
local sem = require("abx.client.semantics")
local envd = require("abx.client.envd")
local provider = require("abx.run.provider")
local config = require("abx.run.config")
local sandbox = require("abx.client.sandbox")

sandbox.RETRY.attempts = 1 -- a closed port answers Transport at once

local function feed_all(chunks)
  local p = wire.sse_parser("POST /command")
  local evs = {}
  for _, c in ipairs(chunks) do
    for _, e in ipairs(p:feed(c)) do evs[#evs + 1] = e end
  end
  for _, e in ipairs(p:finish()) do evs[#evs + 1] = e end
  return evs
end

t.test("create body: template, timeout, env, metadata, secure", function()
  local b = wire.create_body({ template = "base", timeout = 300, envs = { A = "1" },
    metadata = { e2e = "run1", k = "v" }, secure = true })
  t.eq(b.image, { uri = "base" })
  t.eq(b.timeout, 300)
  t.eq(b.env, { A = "1" })
  t.eq(b.metadata, { e2e = "run1", k = "v" })
  t.eq(b.secureAccess, true)
  t.eq(b.entrypoint, { "tail", "-f", "/dev/null" })
  t.eq(b.resourceLimits, { cpu = "1", memory = "2Gi" })
  local b2 = wire.create_body({ template = "python:3.11", timeout = 60 })
  t.eq({ b2.env, b2.metadata, b2.secureAccess }, { nil, nil, nil })
  t.raises("InvalidArgument", wire.create_body, { template = "", timeout = 60 })
  t.raises("InvalidArgument", wire.create_body, { template = "base", timeout = 1.5 })
  t.raises("InvalidArgument", wire.create_body, { template = "base", timeout = 60, envs = { A = 1 } })
  -- the whole body encodes without empty objects for absent maps
  t.eq(cjson.decode(cjson.encode(b2)).env, nil)
end)

t.test("states: Running only is running; Failed/Terminated/Stopping are final; info", function()
  t.eq(wire.is_running("Running"), true)
  for _, s in ipairs({ "Pending", "Pausing", "Paused", "Resuming", "Stopping", "Terminated", "Failed" }) do
    t.eq(wire.is_running(s), false, s)
  end
  t.eq({ wire.is_final("Failed"), wire.is_final("Terminated"), wire.is_final("Pending"),
    wire.is_final("Paused") }, { true, true, false, false })
  t.eq(wire.is_known_state("Hibernating"), false)
  local st, reason, msg = wire.state_of({ status = { state = "Failed", reason = "runtime_error",
    message = "image pull failed" } }, 200, "GET /sandboxes/x")
  t.eq({ st, reason, msg }, { "Failed", "runtime_error", "image pull failed" })
  t.raises("Protocol", wire.state_of, { status = {} }, 200, "GET /sandboxes/x")
  local info = wire.info_of({ id = "sb1", image = { uri = "base" }, status = { state = "Running" },
    metadata = { e2e = "r" }, createdAt = "2026-12-01T19:00:00Z", expiresAt = "2026-12-01T19:05:00Z",
    entrypoint = { "tail" } }, 200, "GET /sandboxes/sb1")
  t.eq({ info.sandbox_id, info.template_id, info.state, info.metadata.e2e, info.started_at, info.end_at },
    { "sb1", "base", "running", "r", "2026-12-01T19:00:00Z", "2026-12-01T19:05:00Z" })
  t.eq(info.envd_version, nil)
  t.raises("InvalidArgument", function() return info.no_such_field end)
  t.eq(wire.info_of({ id = "sb2", snapshotId = "snap1", status = { state = "Paused" } }, 200, "x")
    .template_id, "snap1")
  t.raises("Protocol", wire.info_of, { status = { state = "Running" } }, 200, "x")
end)

t.test("SSE: events split across chunks, data: lines, multi-line data, comments, bare JSON", function()
  local evs = feed_all({ "data: {\"type\":\"in", "it\",\"text\":\"cmd-1\"}\n", "\n",
    ": a comment\nevent: message\nid: 7\nretry: 100\ndata: {\"type\":\"stdout\",\n",
    "data: \"text\":\"a\\nb\"}\r\n\r\n",
    -- execd's own framing: the JSON object then an empty line, no field name
    "{\"type\":\"stderr\",\"text\":\"e\"}\n\n{\"type\":\"ping\"}\n\n",
    "{\"type\":\"execution_complete\",\"execution_time\":3}" })
  t.eq(#evs, 5)
  t.eq({ evs[1].type, evs[1].text }, { "init", "cmd-1" })
  t.eq({ evs[2].type, evs[2].text }, { "stdout", "a\nb" })
  t.eq({ evs[3].type, evs[3].text }, { "stderr", "e" })
  t.eq(evs[4].type, "ping")
  t.eq(evs[5].type, "execution_complete") -- the end of the body ends the last event
  -- byte by byte gives the same events
  local whole = "data: {\"type\":\"stdout\",\"text\":\"x\"}\n\n{\"type\":\"execution_complete\"}\n\n"
  local bytes = {}
  for i = 1, #whole do bytes[i] = whole:sub(i, i) end
  local evs2 = feed_all(bytes)
  t.eq({ #evs2, evs2[1].text, evs2[2].type }, { 2, "x", "execution_complete" })
end)

t.test("SSE: unknown type, bad JSON, no type, stray line -> Protocol", function()
  local e = t.raises("Protocol", feed_all, { "data: {\"type\":\"stdot\",\"text\":\"x\"}\n\n" })
  t.match(e.message, "unknown type \"stdot\"")
  e = t.raises("Protocol", feed_all, { "data: {\"type\":\"stdout\",\n\n" })
  t.match(e.message, "SSE event 1 is not a JSON object")
  t.raises("Protocol", feed_all, { "data: [1,2]\n\n" })
  t.raises("Protocol", feed_all, { "data: {\"text\":\"x\"}\n\n" })
  e = t.raises("Protocol", feed_all, { "garbage\n\n" })
  t.match(e.message, "neither a field nor a JSON event")
end)

t.test("command events -> CommandResult; no end -> Protocol; start failure", function()
  local function run(events)
    local st = wire.command_state()
    for _, ev in ipairs(events) do wire.command_apply(st, ev, "POST /command") end
    return st
  end
  -- execd sends a line per event without its terminator, a blank line as "\n"
  local st = run({ { type = "init", text = "c1" }, { type = "stdout", text = "hi" },
    { type = "stdout", text = "\n" }, { type = "stdout", text = "there" },
    { type = "stderr", text = "w" }, { type = "status", text = "x" },
    { type = "execution_count", execution_count = 1 }, { type = "execution_complete" } })
  t.eq(st.id, "c1")
  t.eq(wire.command_result(st, "POST /command"),
    { stdout = "hi\n\nthere\n", stderr = "w\n", exit_code = 0 })
  t.eq({ wire.line_text(""), wire.line_text("\n"), wire.line_text("a b") }, { "\n", "\n", "a b\n" })
  st = run({ { type = "init", text = "c2" }, { type = "stdout", text = "o" },
    { type = "error", error = { ename = "CommandExecError", evalue = "3", traceback = { "exit status 3" } } } })
  t.eq(wire.command_result(st, "POST /command"),
    { stdout = "o\n", stderr = "", exit_code = 3, error = "exit status 3" })
  st = run({ { type = "error", error = { ename = "CommandExecError", evalue = "-1",
    traceback = { "signal: killed" } } } })
  t.eq(wire.command_result(st, "x").exit_code, -1)
  st = run({ { type = "init", text = "c3" }, { type = "stdout", text = "partial" } })
  local e = t.raises("Protocol", wire.command_result, st, "POST /command")
  t.match(e.message, "without execution_complete or an error event")
  st = run({ { type = "init", text = "c4" }, { type = "error", error = { ename = "CommandExecError",
    evalue = "chdir /nope: no such file or directory", traceback = { "chdir /nope: no such file or directory" } } } })
  local fields, why = wire.command_result(st, "x")
  t.eq({ fields, why }, { nil, "chdir /nope: no such file or directory" })
  t.raises("Protocol", run, { { type = "stdout" } })
  t.raises("Protocol", run, { { type = "init" } })
  t.raises("Protocol", run, { { type = "error" } })
  t.raises("Protocol", run, { { type = "result", results = { text = "4" } } })
end)

t.test("error bodies {code, message} -> kinds", function()
  local function err(status, body, nf)
    local ok, e = pcall(wire.raise_error, { status = status, body = body }, "GET /sandboxes/x", nf)
    t.ok(not ok and core.is_error(e), "raised an abx error")
    return e
  end
  local e = err(401, '{"code":"INVALID_API_KEY","message":"bad key"}')
  t.eq({ e.kind, e.status, e.code, e.message, e.request },
    { "Authentication", 401, "INVALID_API_KEY", "bad key", "GET /sandboxes/x" })
  t.eq(err(404, '{"code":"NOT_FOUND","message":"no sandbox"}', "SandboxNotFound").kind, "SandboxNotFound")
  t.eq(err(404, '{"code":"FILE_NOT_FOUND","message":"file not found"}').kind, "NotFound")
  t.eq(err(400, '{"code":"INVALID_REQUEST","message":"x"}').kind, "InvalidArgument")
  t.eq(err(403, '{"code":"FORBIDDEN","message":"x"}').kind, "Authentication")
  t.eq(err(409, '{"code":"CONFLICT","message":"x"}').kind, "Conflict")
  e = err(422, '{"detail":[{"loc":["body","timeout"],"msg":"too small"}]}')
  t.eq({ e.kind, e.message }, { "InvalidArgument", '{"detail":[{"loc":["body","timeout"],"msg":"too small"}]}' })
  t.eq(err(500, '{"code":"INTERNAL_ERROR","message":"boom"}').kind, "Sandbox")
  t.eq(err(503, '{"code":"UNAVAILABLE","message":"x"}').kind, "SandboxGone")
  -- a gateway's bare answer is Unavailable (issue 27), quoting one line of its HTML
  t.eq(err(503, "").kind, "Unavailable")
  e = err(502, "<html>bad gateway</html>")
  t.eq({ e.kind, e.message, e.code }, { "Unavailable", "bad gateway (a gateway's answer, no "
    .. "platform JSON) after 1 attempt", nil })
  t.eq(err(500, "").message, "(empty body)")
end)

t.test("endpoint URL: the API URL's scheme when the endpoint has none; headers", function()
  local url, h = wire.endpoint_url("https://api.example.com/v1",
    { endpoint = "endpoint.opensandbox.io/sandboxes/abc123/port/44772",
      headers = { ["X-EXECD-ACCESS-TOKEN"] = "tok" } }, 200, "GET /sandboxes/abc123/endpoints/44772")
  t.eq(url, "https://endpoint.opensandbox.io/sandboxes/abc123/port/44772")
  t.eq(h, { ["X-EXECD-ACCESS-TOKEN"] = "tok" })
  url, h = wire.endpoint_url("http://127.0.0.1:3000/v1", { endpoint = "127.0.0.1:3000/sandboxes/s/port/8080/" },
    200, "x")
  t.eq({ url, next(h) }, { "http://127.0.0.1:3000/sandboxes/s/port/8080", nil })
  url = wire.endpoint_url("http://a/v1", { endpoint = "https://b.example/x", headers = cjson.null }, 200, "x")
  t.eq(url, "https://b.example/x")
  t.raises("Protocol", wire.endpoint_url, "http://a/v1", { headers = {} }, 200, "x")
  t.raises("Protocol", wire.endpoint_url, "http://a/v1", { endpoint = "h", headers = { a = 1 } }, 200, "x")
end)

t.test("list: page + pageSize, hasNextPage, metadata filter, items -> SandboxInfo", function()
  t.eq(sem.page_query("page", 50, nil), { { "page", "1" }, { "pageSize", "50" } })
  t.eq(sem.page_query("page", 50, "3"), { { "page", "3" }, { "pageSize", "50" } })
  local body = { items = { { id = "a", status = { state = "Running" }, image = { uri = "base" } },
    { id = "b", status = { state = "Paused" } } },
    pagination = { page = 1, pageSize = 2, totalItems = 3, totalPages = 2, hasNextPage = true } }
  local items = wire.list_items(body, 200, "GET /sandboxes")
  t.eq({ #items, items[1].sandbox_id, items[1].state, items[2].state }, { 2, "a", "running", "paused" })
  t.eq(sem.next_token("page", {}, body), "2")
  body.pagination.hasNextPage = false
  t.eq(sem.next_token("page", {}, body), nil)
  t.raises("Protocol", wire.list_items, { items = {} }, 200, "GET /sandboxes")
  t.raises("Protocol", wire.list_items, {}, 200, "GET /sandboxes")
  -- keys and values encoded, then the whole value once more: the server decodes the parameter and
  -- parse_qsl's it (server/opensandbox_server/api/lifecycle.py), giving back "Demo Test"
  local v = wire.metadata_filter({ project = "Apollo", note = "Demo Test" }, envd.quote)
  t.eq(v, "note=Demo%20Test&project=Apollo")
  t.eq(envd.query({ { "metadata", v } }), "metadata=note%3DDemo%2520Test%26project%3DApollo")
end)

t.test("files: FileInfo -> EntryInfo (octal mode), the multipart upload body", function()
  local e = osfiles.entry_of({ path = "/home/user/a.txt", type = "file", size = 5, mode = 644,
    owner = "user", group = "user", modified_at = "2026-12-01T19:00:00Z", created_at = "x" }, 200, "x")
  t.eq({ e.name, e.path, e.type, e.size, e.mode, e.permissions, e.owner, e.modified_time },
    { "a.txt", "/home/user/a.txt", "file", 5, 420, "-rw-r--r--", "user", "2026-12-01T19:00:00Z" })
  local d = osfiles.entry_of({ path = "/d/", type = "directory", size = 0, mode = 755 }, 200, "x")
  t.eq({ d.type, d.name, d.permissions }, { "dir", "d", "drwxr-xr-x" })
  t.eq(osfiles.entry_of({ path = "/s", type = "file", size = 0, mode = 4751 }, 200, "x").permissions,
    "-rwxr-x--x") -- the setuid bit is beyond the nine shown
  t.eq(osfiles.entry_of({ path = "/l", type = "symlink", size = 0, mode = 777 }, 200, "x").mode, 511)
  t.raises("Protocol", osfiles.entry_of, { path = "/x", type = "socket", size = 0, mode = 644 }, 200, "x")
  t.raises("Protocol", osfiles.entry_of, { path = "/x", type = "file", size = 0, mode = 9 }, 200, "x")
  t.raises("InvalidArgument", function() return e.nope end)
  local body, ctype = osfiles.upload_body({ path = "/tmp/a b.txt", mode = 644 }, "DATA\r\n", "BND")
  t.eq(ctype, "multipart/form-data; boundary=BND")
  t.eq(body, "--BND\r\nContent-Disposition: form-data; name=\"metadata\"; filename=\"metadata\"\r\n"
    .. "Content-Type: application/json\r\n\r\n" .. cjson.encode({ path = "/tmp/a b.txt", mode = 644 })
    .. "\r\n--BND\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a b.txt\"\r\n"
    .. "Content-Type: application/octet-stream\r\n\r\nDATA\r\n\r\n--BND--\r\n")
end)

t.test("code: execd's results and error events -> E2B's Result and ExecutionError", function()
  local oscode = require("abx.client.opensandbox_code")
  local r = oscode.result_of({ text = "'quoted'", ["text/html"] = "<b>x</b>", ["image/png"] = "iVBO",
    ["application/vnd.custom"] = { a = 1 } })
  t.eq({ r.is_main_result, r.text, r.html, r.png }, { true, "quoted", "<b>x</b>", "iVBO" })
  t.eq(r.extra, { ["application/vnd.custom"] = { a = 1 } })
  t.eq(oscode.result_of({ text = "it's" }).text, "it's", "only a surrounding pair is removed")
  t.eq(oscode.result_of({ text = "'" }).text, "'")
  t.raises("InvalidArgument", function() return r.no_such end)
  local ex = { logs = { stdout = {}, stderr = {} }, results = {} }
  local seen = {}
  local opts = { on_stdout = function(text) seen[#seen + 1] = text end }
  t.eq(oscode.apply(ex, { type = "init", text = "ctx1" }, opts, "POST /code"), false)
  t.eq(oscode.apply(ex, { type = "stdout", text = "hi\n" }, opts, "POST /code"), false)
  t.eq(oscode.apply(ex, { type = "ping", text = "pong" }, opts, "POST /code"), false)
  t.eq(oscode.apply(ex, { type = "execution_count", execution_count = 3 }, opts, "POST /code"), false)
  t.eq(oscode.apply(ex, { type = "result", results = { text = "2" } }, opts, "POST /code"), false)
  t.eq(oscode.apply(ex, { type = "status", text = "error" }, opts, "POST /code"), false)
  t.eq(oscode.apply(ex, { type = "error", error = { ename = "NameError", evalue = "x",
    traceback = { "a", "b" } } }, opts, "POST /code"), true, "error is the last event")
  t.eq({ ex._id, ex.logs.stdout, seen, ex.execution_count, ex.text },
    { "ctx1", { "hi\n" }, { "hi\n" }, 3, "2" })
  t.eq({ ex.error.name, ex.error.value, ex.error.traceback }, { "NameError", "x", "a\nb" })
  t.eq(oscode.apply(ex, { type = "execution_complete", execution_time = 5 }, opts, "POST /code"), true)
  t.raises("Protocol", oscode.apply, ex, { type = "stdout" }, opts, "POST /code")
  local conn = opensandbox.connection({ api_url = "http://127.0.0.1:1/v1", api_key = "k-0123456789" })
  local sbx = opensandbox.new_sandbox(conn, { id = "sb1", image = { uri = "base" },
    status = { state = "Running" } }, 300, false)
  t.raises("InvalidArgument", sbx.run_code, sbx, "1", { context = "c1", language = "python" })
  t.raises("InvalidArgument", sbx.run_code, sbx, 1)
end)

t.test("no equivalent: Skipped with the provider's name, never a silent no-op", function()
  local conn = opensandbox.connection({ api_url = "http://127.0.0.1:1/v1", api_key = "k-0123456789",
    provider_name = "osb" })
  local sbx = opensandbox.new_sandbox(conn, { id = "sb1", image = { uri = "base" },
    status = { state = "Running" } }, 300, true)
  local want = "provider osb (opensandbox) has no equivalent of %s: missing capability"
  local function skipped(prim, fn, ...)
    local e = t.raises("Skipped", fn, ...)
    t.eq(e.message, string.format(want, prim))
  end
  skipped("sbx:restart_code_context (execd cannot restart a context)", sbx.restart_code_context, sbx, "c1")
  skipped("sbx:run_code envs (per-execution environment)", sbx.run_code, sbx, "1+1", { envs = { A = "1" } })
  skipped("conn:create option network.allow_public_traffic", conn.create, conn,
    { network = { allow_public_traffic = false } })
  skipped("conn:list_snapshots_page option name", conn.list_snapshots_page, conn, { name = "x" })
  skipped("sbx.pty:create (execd's /pty is a WebSocket outside specs/execd-api.yaml)",
    function() return sbx.pty:create({}) end)
  skipped("files:watch_dir", function() return sbx.files:watch_dir("/tmp") end)
  skipped("commands:send_stdin", function() return sbx.commands:send_stdin(1, "x") end)
  skipped("commands:run stdin", function() return sbx.commands:run("cat", { stdin = true }) end)
  skipped("conn:create option auto_pause", conn.create, conn, { auto_pause = true })
  skipped("conn:list_volumes", conn.list_volumes, conn)
  t.eq(sbx.template_id, "base")
  t.raises("InvalidArgument", function() return sbx.no_such end)
  -- the TTL bound fails before any request (the port is closed)
  conn = opensandbox.connection({ api_url = "http://127.0.0.1:1/v1", api_key = "k-0123456789",
    ttl = { mode = "expires_at", min = 60, where = "providers.osb.ttl" } })
  t.eq(t.raises("InvalidArgument", conn.create, conn, { timeout = 30 }).message,
    "conn:create: timeout 30 s is below this provider's minimum of 60 s (providers.osb.ttl.min)")
  t.raises("InvalidArgument", opensandbox.connection, { api_url = "http://a/v1", ttl = { mode = "lifetime" } })
  t.raises("InvalidArgument", opensandbox.connection, { api_url = "http://a/v1", pagination = "cursor" })
  t.raises("InvalidArgument", opensandbox.connection, { api_url = "http://a/v1", create = { mode = "sync" } })
  -- renew-expiration's expiresAt: RFC 3339 UTC, whole seconds from now
  t.eq(sem.expires_at(1796151600, 299.2), "2026-12-01T19:05:00Z")
end)

t.test("provider.open gives the OpenSandbox adapter for protocol: opensandbox", function()
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write([[
providers:
  osb:
    kind: remote
    protocol: opensandbox
    api_url: http://127.0.0.1:1/v1
    envd_routing: headers
    auth_header: OPEN-SANDBOX-API-KEY
    credential_env: [ABX_TEST_KEY]
    create: {mode: poll, deadline: 30, interval: 0.5}
    ttl: {mode: expires_at, min: 60}
    pagination: page
]])
  f:close()
  local ok, cfg = pcall(config.load, path)
  os.remove(path)
  if not ok then error(cfg, 0) end
  local conn, info = provider.open("osb", cfg.providers.osb, { run_id = "x",
    defaults = config.DEFAULTS.defaults })
  t.ok(conn, "opened: " .. tostring(info.missing and table.concat(info.missing, ",")))
  t.eq(getmetatable(conn), opensandbox.Connection)
  t.eq({ conn.auth_header, conn.pagination, conn.provider_name, conn.api_url },
    { "OPEN-SANDBOX-API-KEY", "page", "osb", "http://127.0.0.1:1/v1" })
  t.eq(conn.create_mode, { mode = "poll", deadline = 30, interval = 0.5 })
  t.eq(conn.ttl, { mode = "expires_at", min = 60, where = "providers.osb.ttl" })
  t.eq(conn.default_metadata, { e2e = "x" })
  t.raises("Transport", conn.get_info, conn, "sb1")
end)

t.test("a template is a snapshot id when it is a uuid (snapshot_service.py uuid4 ids)", function()
  local snaps = require("abx.client.opensandbox_snapshot")
  t.eq(snaps.is_snapshot_id("d75954e2-6ff5-4ba3-8262-10372ace992f"), true)
  t.eq(snaps.is_snapshot_id("D75954E2-6FF5-4BA3-8262-10372ACE992F"), true)
  for _, x in ipairs({ "base", "python:3.11", "snap_123", "d75954e2-6ff5-4ba3-8262-10372ace992", "" }) do
    t.eq(snaps.is_snapshot_id(x), false, x)
  end
  t.eq(snaps.is_snapshot_id(nil), false)
end)
