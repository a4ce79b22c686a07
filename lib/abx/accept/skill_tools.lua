-- abx.accept.skill_tools: `abxlua accept skill-tools --output NEW.json`, the seed suite's
-- "repository, expiring preview and third-party MCP runner" (issue 15 part 7).
--
-- One owned sandbox (metadata e2e=<run id>, purpose=<ABX_SKILL_RUN_PREFIX>):
--   1. the pinned repository commit is fetched read-only, at most two bounded attempts (timeout
--      60 s each). Locally the repository is the project's tests/accept/skill-app, committed with a
--      fixed identity and date (abx.accept.skill_host.build_repo: the hash is M.PINNED_COMMIT,
--      checked) and served by the platform's own git server (`abxlua serve --git-root`,
--      platform/net/git_server.h) at git://<hub end of the sandbox's link>:9418/skill-app.git; a push
--      to it must be refused. Against a cloud: --repo-url and --commit.
--   2. its Node application (server.js) starts with a fresh preview secret; through the
--      platform's port routing the runner checks a signed preview link (HMAC-SHA256 recomputed
--      here), an unsigned one (403), a tampered signature and a tampered expiry (403), and the
--      link after its 20 s (410).
--   3. the pinned releases of @modelcontextprotocol/server-filesystem are installed with npm on
--      the host (runtime sandboxes have no egress; package-lock integrity checked), uploaded as one
--      archive, and driven over stdio inside the sandbox: initialize, tools/list, read_file of the
--      cloned document (content compared), a read outside its root refused; its stderr log read;
--      the server stopped and its files removed; no MCP process may remain.
-- Then cleanup, reported apart from the checks: tracked and tagged sandboxes killed, none left
-- by tag, serve stopped and no git server process left, the host work dir removed.
-- The report holds no credential and no resource id (sandbox ids, the preview secret and every
-- token are registered as secrets and masked in it). Exit 0 passed, 1 a check or the cleanup
-- failed, 2 interrupted (SIGINT/SIGTERM: cleanup still runs), 4 usage error.
local core = require("abx.core")
local cjson = require("cjson")
local host = require("abx.accept.skill_host")
local mcp = require("abx.accept.skill_mcp")

local M = {}

-- The commit abx.accept.skill_host.build_repo makes of tests/accept/skill-app. Changing a file
-- there changes it: the runner then fails "repository.pinned_commit" with the new hash.
M.PINNED_COMMIT = "f0b8763045dcbfa1d5c0b914fecbb1e56ba7fe99"
M.MCP_PACKAGE = "@modelcontextprotocol/server-filesystem"
M.MCP_VERSIONS = { "2026.7.10", "2026.8.31" }
M.APP_PORT = 3000
M.LINK_TTL = 20 -- seconds (the seed's expiry)
M.FETCH_ATTEMPTS, M.FETCH_TIMEOUT = 2, 60
M.NPM_TIMEOUT = 300
M.DOC = "welcome"
local APP = "/home/user/skill-app"
local MCP_ROOT = "/home/user/mcp"

function M.configure(cmd)
  cmd:option("--output", "The JSON report to write; it must not exist yet (the runner never "
    .. "overwrites evidence)."):argname("NEW.json")
  cmd:option("--provider", "Provider from config/abxlua.yaml (default: ABX_PROVIDER or config; "
    .. "the local platform).")
  cmd:option("--config", "Config file (default: ABX_CONFIG or config/abxlua.yaml).")
  cmd:option("--template", "Runtime template with git and Node.js (default: "
    .. "ABX_SKILL_RUNTIME_TEMPLATE, else base)."):argname("T")
  cmd:option("--app-dir", "The fixture repository's files (local platform).",
    "tests/accept/skill-app"):argname("DIR"):target("app_dir")
  cmd:option("--repo-url", "The repository to fetch (a remote provider; locally the platform's "
    .. "git server)."):argname("URL"):target("repo_url")
  cmd:option("--commit", "The pinned commit of --repo-url (40 hex digits; locally "
    .. M.PINNED_COMMIT:sub(1, 12) .. "...)."):argname("SHA")
end

-- ---- the record ----

-- lua-cjson 2.1.0 (Debian 12) has no array_mt: arrays of the record are marked with ARRAY, and
-- the record is encoded here (objects with sorted keys, two-space indent; cjson escapes strings).
local ARRAY = {}
local function array(t) return setmetatable(t or {}, ARRAY) end

local function encode(v, ind, out)
  local ty = type(v)
  if ty == "table" then
    local inner = ind .. "  "
    if getmetatable(v) == ARRAY or (#v > 0 and next(v, #v) == nil) then
      if #v == 0 then out[#out + 1] = "[]"; return end
      out[#out + 1] = "["
      for i, x in ipairs(v) do
        out[#out + 1] = (i > 1 and ",\n" or "\n") .. inner
        encode(x, inner, out)
      end
      out[#out + 1] = "\n" .. ind .. "]"
      return
    end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = tostring(k) end
    table.sort(keys)
    if #keys == 0 then out[#out + 1] = "{}"; return end
    out[#out + 1] = "{"
    for i, k in ipairs(keys) do
      out[#out + 1] = (i > 1 and ",\n" or "\n") .. inner .. cjson.encode(k) .. ": "
      encode(v[k], inner, out)
    end
    out[#out + 1] = "\n" .. ind .. "}"
  elseif math.type(v) == "integer" then
    out[#out + 1] = string.format("%d", v)
  else
    out[#out + 1] = (cjson.encode(v):gsub("\\/", "/")) -- cjson escapes every '/'
  end
end

local function new_record(ctx)
  return { runner = "skill-tools", abxlua = core.version(), provider = ctx.provider,
    template = ctx.template, purpose = ctx.purpose, started_at = os.date("!%Y-%m-%dT%H:%M:%SZ"),
    repository = { source = ctx.local_repo and "the local platform's git server (tests/accept/"
      .. "skill-app)" or "--repo-url", commit = ctx.commit },
    mcp = { package = M.MCP_PACKAGE, versions = M.MCP_VERSIONS,
      install = "npm on the host (package-lock integrity), uploaded as one archive" },
    checks = array(), failures = array(), cleanup = {}, interrupted = false }
end

-- Runs one check: its detail table on success goes to checks, its error to failures (then the
-- error is raised again: the later checks depend on it).
local function check(rec, name, fn)
  local t0 = core.now()
  core.ewrite("skill-tools: " .. name .. "\n")
  local ok, res = pcall(fn)
  local dt = math.floor((core.now() - t0) * 1000 + 0.5) / 1000
  if ok then
    local row = { name = name, seconds = dt }
    for k, v in pairs(type(res) == "table" and res or {}) do row[k] = v end
    rec.checks[#rec.checks + 1] = row
    return res
  end
  local kind = core.is_error(res) and res.kind or "Error"
  rec.failures[#rec.failures + 1] = { name = name, kind = kind, seconds = dt,
    error = core.is_error(res) and res.message or tostring(res) }
  core.ewrite("skill-tools: FAILED " .. name .. ": " .. rec.failures[#rec.failures].error .. "\n")
  error(res, 0)
end

local function fail(msg, ...) core.error("Sandbox", 0, string.format(msg, ...)) end

-- ---- the sandbox parts ----

-- One command in the sandbox; raises naming `what` with its output unless it exits 0.
local function run(sbx, what, cmd, timeout)
  local r = sbx.commands:run(cmd, { timeout = timeout or 120 })
  if r.exit_code ~= 0 then
    fail("%s: exit %d: %s", what, r.exit_code, ((r.stderr or "") .. (r.stdout or "")):sub(-600))
  end
  return r.stdout or ""
end

local function fetch(ctx, rec)
  local sbx = ctx.sbx
  local detail = check(rec, "repository.fetch", function()
    local attempts, last = 0, nil
    for i = 1, M.FETCH_ATTEMPTS do
      attempts = i
      local r = sbx.commands:run(string.format("rm -rf %s && GIT_TERMINAL_PROMPT=0 timeout %d "
        .. "git -c protocol.version=2 clone --quiet --no-checkout %s %s", host.q(APP),
        M.FETCH_TIMEOUT, host.q(ctx.repo_url), host.q(APP)), { timeout = M.FETCH_TIMEOUT + 30 })
      if r.exit_code == 0 then last = nil; break end
      last = string.format("attempt %d: exit %d: %s", i, r.exit_code, (r.stderr or ""):sub(-400))
      core.ewrite("skill-tools: fetch " .. last .. "\n")
    end
    if last then fail("the repository could not be fetched in %d attempts (%s)", attempts, last) end
    return { attempts = attempts, attempt_timeout_s = M.FETCH_TIMEOUT, max_attempts = M.FETCH_ATTEMPTS }
  end)
  check(rec, "repository.commit_verified", function()
    local out = run(sbx, "checkout", string.format("cd %s && git -c advice.detachedHead=false "
      .. "checkout --quiet --detach %s && git rev-parse 'HEAD^{commit}' && git status --porcelain",
      host.q(APP), host.q(ctx.commit)))
    local head, rest = out:match("^(%x+)\n(.*)$")
    if head ~= ctx.commit then fail("HEAD is %s, not the pinned %s", tostring(head), ctx.commit) end
    if rest and rest:match("%S") then fail("the checkout is not clean: %s", rest:sub(1, 200)) end
    return { commit = head }
  end)
  if ctx.local_repo then
    check(rec, "repository.read_only", function()
      -- the git server must refuse a push (receive-pack is disabled and cannot be re-enabled)
      local r = sbx.commands:run(string.format("cd %s && GIT_TERMINAL_PROMPT=0 timeout 30 git "
        .. "push --quiet %s HEAD:refs/heads/abx-probe", host.q(APP), host.q(ctx.repo_url)),
        { timeout = 60 })
      if r.exit_code == 0 then fail("a push to the fixture repository was accepted") end
      local why = ((r.stderr or "") .. (r.stdout or "")):match("[^\n]*denied[^\n]*")
        or ((r.stderr or "") .. (r.stdout or "")):match("[^\n]*not enabled[^\n]*")
        or ((r.stderr or ""):match("[^\n]+") or "")
      return { push_exit = r.exit_code, refusal = why:sub(1, 200) }
    end)
  end
  return detail
end

local function start_app(ctx, rec)
  local sbx = ctx.sbx
  check(rec, "app.start", function()
    ctx.app = sbx.commands:run("exec node server.js", { background = true, timeout = 0, cwd = APP,
      envs = { PORT = tostring(M.APP_PORT), PREVIEW_SECRET = ctx.secret } })
    local deadline = core.now() + 30
    while true do
      local ok, r = pcall(sbx.http, sbx, M.APP_PORT, { path = "/health", timeout = 5 })
      if ok and r.status == 200 then break end
      if ctx.app:done() then fail("server.js ended: %s", tostring(ctx.app:stderr()):sub(-400)) end
      if core.now() > deadline then
        fail("GET /health on port %d did not answer 200 within 30 s (last: %s)", M.APP_PORT,
          ok and ("status " .. r.status) or tostring(r))
      end
      core.sleep(0.25)
    end
    return { port = M.APP_PORT, routed = "the platform's port routing (ingress)" }
  end)
  check(rec, "app.document_from_commit", function()
    local text = sbx.files:read(APP .. "/docs/" .. M.DOC .. ".md")
    if ctx.local_repo then
      local want = core.read_file(ctx.app_dir .. "/docs/" .. M.DOC .. ".md")
      if text ~= want then fail("docs/%s.md in the clone differs from the fixture's", M.DOC) end
    end
    ctx.doc = text
    return { bytes = #text, sha256 = core.sha256(text) }
  end)
end

local function preview(ctx, rec)
  local sbx = ctx.sbx
  local function get(path)
    return sbx:http(M.APP_PORT, { path = path, timeout = 10 })
  end
  local link = check(rec, "preview.link_signed", function()
    local r = sbx:http(M.APP_PORT, { method = "POST", path = "/links", timeout = 10,
      headers = { ["content-type"] = "application/json" },
      body = cjson.encode({ doc = M.DOC, ttl = M.LINK_TTL }) })
    if r.status ~= 201 then fail("POST /links answered %d: %s", r.status, r.body:sub(1, 200)) end
    local o = cjson.decode(r.body)
    local path, expires, sig = tostring(o.path):match("^(/preview/[%w-]+)%?expires=(%d+)&sig=(%x+)$")
    if not path then fail("POST /links gave no signed path: %s", r.body:sub(1, 200)) end
    local want = host.hmac_sha256(ctx.secret, "GET\n" .. path .. "\n" .. expires)
    if sig ~= want then fail("the link's signature is not HMAC-SHA256 over method, path, expiry") end
    local ttl = tonumber(expires) - os.time()
    if ttl < M.LINK_TTL - 3 or ttl > M.LINK_TTL + 1 then
      fail("the link expires in %d s, not %d", ttl, M.LINK_TTL)
    end
    return { path = path, expires = tonumber(expires), sig = sig, full = o.path,
      signature = "HMAC-SHA256 hex, recomputed by the runner", ttl_s = M.LINK_TTL }
  end)
  local cases = {
    { "preview.valid_link", link.full, 200 },
    { "preview.unsigned_rejected", link.path, 403 },
    { "preview.tampered_signature_rejected", link.path .. "?expires=" .. link.expires .. "&sig="
      .. link.sig:sub(1, -2) .. (link.sig:sub(-1) == "0" and "1" or "0"), 403 },
    { "preview.tampered_expiry_rejected", link.path .. "?expires=" .. (link.expires + 3600)
      .. "&sig=" .. link.sig, 403 },
  }
  for _, c in ipairs(cases) do
    check(rec, c[1], function()
      local r = get(c[2])
      if r.status ~= c[3] then fail("GET answered %d, want %d: %s", r.status, c[3], r.body:sub(1, 200)) end
      if c[3] == 200 and r.body ~= ctx.doc then fail("the preview body is not the committed document") end
      return { status = r.status }
    end)
  end
  check(rec, "preview.expired_rejected", function()
    local wait = link.expires - os.time() + 1
    core.ewrite(string.format("skill-tools: waiting %d s for the link to expire\n", wait))
    if wait > 0 then core.sleep(wait) end
    local r = get(link.full)
    if r.status ~= 410 and r.status ~= 403 then
      fail("the expired link answered %d, want 410 (or 403): %s", r.status, r.body:sub(1, 200))
    end
    return { status = r.status, waited_s = wait, after_s = M.LINK_TTL }
  end)
end

local function mcp_release(ctx, rec, version, inst)
  local sbx = ctx.sbx
  local dir = MCP_ROOT .. "/" .. version
  local entry = dir .. "/node_modules/" .. M.MCP_PACKAGE .. "/dist/index.js"
  local pre = "mcp " .. version .. "."
  check(rec, pre .. "install", function()
    local data = assert(core.read_file(inst.tarball))
    sbx.files:write("/home/user/mcp-" .. version .. ".tgz", data)
    local got = run(sbx, "unpack", string.format("mkdir -p %s && tar -xzf %s -C %s && rm -f %s && "
      .. "node -p \"require('%s/node_modules/%s/package.json').version\"", host.q(dir),
      host.q("/home/user/mcp-" .. version .. ".tgz"), host.q(dir),
      host.q("/home/user/mcp-" .. version .. ".tgz"), dir, M.MCP_PACKAGE))
    if got:match("^%s*(.-)%s*$") ~= version then fail("installed version is %s", got) end
    return { integrity = inst.integrity, lock_packages = inst.packages, archive_bytes = inst.bytes,
      registry = inst.resolved_host }
  end)
  local client
  check(rec, pre .. "initialize", function()
    client = mcp.start(sbx, "exec node " .. host.q(entry) .. " " .. host.q(APP), { cwd = dir })
    ctx.mcp_clients[#ctx.mcp_clients + 1] = client
    local r = client:request("initialize", { protocolVersion = mcp.PROTOCOL_VERSION,
      capabilities = {}, clientInfo = { name = "abxlua-skill-tools", version = core.version() } })
    if type(r) ~= "table" or type(r.protocolVersion) ~= "string" or type(r.serverInfo) ~= "table" then
      fail("initialize gave no protocolVersion/serverInfo")
    end
    client:notify("notifications/initialized")
    return { protocol_version = r.protocolVersion, server = r.serverInfo.name,
      server_version = r.serverInfo.version }
  end)
  local tool
  check(rec, pre .. "tools_list", function()
    local r = client:request("tools/list")
    local names = {}
    for _, t in ipairs(type(r) == "table" and r.tools or {}) do names[t.name] = true end
    tool = names.read_file and "read_file" or names.read_text_file and "read_text_file"
    if not tool then fail("tools/list has neither read_file nor read_text_file") end
    local n = 0
    for _ in pairs(names) do n = n + 1 end
    return { tools = n, read_tool = tool }
  end)
  check(rec, pre .. "read_file", function()
    local r = client:request("tools/call", { name = tool,
      arguments = { path = APP .. "/docs/" .. M.DOC .. ".md" } })
    local text = type(r) == "table" and type(r.content) == "table" and r.content[1]
      and r.content[1].text
    if r.isError or text ~= ctx.doc then fail("%s did not return the committed document", tool) end
    return { tool = tool, bytes = #text }
  end)
  check(rec, pre .. "read_outside_root_refused", function()
    local ok, r = pcall(client.request, client, "tools/call", { name = tool,
      arguments = { path = "/etc/hostname" } })
    if ok and not (type(r) == "table" and r.isError) then
      fail("%s read /etc/hostname outside its allowed directory", tool)
    end
    return { refused = ok and "isError result" or "JSON-RPC error" }
  end)
  check(rec, pre .. "logs", function()
    local log = client:log()
    if not log:find("running on stdio", 1, true) then
      fail("the server's stderr does not say it runs on stdio: %s", log:sub(1, 200))
    end
    if client.bad_lines > 0 then fail("%d stdout lines were not JSON-RPC", client.bad_lines) end
    return { stderr_lines = select(2, log:gsub("\n", "")), first = log:match("[^\n]+") }
  end)
  check(rec, pre .. "removed", function()
    local how = client:stop(5)
    run(sbx, "remove", string.format("rm -rf %s && test ! -e %s", host.q(dir), host.q(dir)))
    for _, p in ipairs(sbx.commands:list()) do
      local line = tostring(p.cmd) .. " " .. table.concat(p.args or {}, " ")
      if line:find(dir, 1, true) then fail("an MCP process is still running (pid %d)", p.pid) end
    end
    return { stopped = how, files_removed = true, processes_left = 0 }
  end)
end

-- ---- the run ----

local function body(ctx, rec, inst)
  if ctx.local_repo then
    check(rec, "repository.pinned_commit", function()
      if ctx.built_commit ~= M.PINNED_COMMIT then
        fail("tests/accept/skill-app commits as %s, the pin is %s (update M.PINNED_COMMIT in "
          .. "lib/abx/accept/skill_tools.lua when the fixture changes on purpose)",
          tostring(ctx.built_commit), M.PINNED_COMMIT)
      end
      return { commit = ctx.built_commit, deterministic = "fixed author, committer and date" }
    end)
  end
  check(rec, "sandbox.create", function()
    ctx.sbx = ctx.conn:create({ template = ctx.template, timeout = 900,
      metadata = { purpose = ctx.purpose } })
    -- the id is no credential but a resource id: masked wherever it would appear (the
    -- client registers the sandbox's tokens itself)
    core.add_secret(ctx.sbx.id)
    if ctx.local_repo then
      local info = ctx.sbx:get_info()
      local a = info.abx_network and info.abx_network.host_address
      if not a then fail("the sandbox has no link to the platform's hub (abxNetwork)") end
      ctx.repo_url = "git://" .. a .. ":9418/skill-app.git"
      core.add_secret(ctx.repo_url)
    end
    return { tagged = "e2e=<run id>, purpose" }
  end)
  fetch(ctx, rec)
  start_app(ctx, rec)
  preview(ctx, rec)
  -- npm after the repository and preview steps (the sandbox's timeout, 900 s, covers both
  -- bounded installs): the registry is the one outside dependency, so everything before it can
  -- be tested, and interrupted, without it (tests/accept/test_skill_tools.py).
  check(rec, "mcp.host_install", function()
    for _, v in ipairs(M.MCP_VERSIONS) do
      inst[v] = host.npm_install(ctx.dir, M.MCP_PACKAGE, v, M.NPM_TIMEOUT)
    end
    return { versions = M.MCP_VERSIONS }
  end)
  for _, v in ipairs(M.MCP_VERSIONS) do mcp_release(ctx, rec, v, inst[v]) end
end

-- The cleanup, recorded apart from the checks; never raises.
local function cleanup(ctx, rec, pinfo)
  local c = rec.cleanup
  c.errors = array()
  local function try(what, fn)
    local ok, err = pcall(fn)
    if not ok then c.errors[#c.errors + 1] = what .. ": " .. (core.is_error(err) and err.message
      or tostring(err)) end
  end
  for _, cl in ipairs(ctx.mcp_clients) do try("stop an MCP server", function() cl:stop(2) end) end
  if ctx.app and not ctx.app:done() then try("stop the app", function() ctx.app:kill() end) end
  if ctx.tracker and ctx.conn then
    local r = ctx.tracker:cleanup(ctx.conn)
    c.sandboxes_killed, c.sandboxes_swept = r.tracked, r.swept
    for _, e in ipairs(r.errors) do c.errors[#c.errors + 1] = e end
    try("list the run's sandboxes", function()
      c.sandboxes_remaining = #ctx.conn:list({ metadata = { e2e = ctx.run_id } })
      if c.sandboxes_remaining > 0 then
        c.errors[#c.errors + 1] = c.sandboxes_remaining .. " sandbox(es) tagged with the run remain"
      end
    end)
  end
  if pinfo and pinfo.stop then
    try("stop the local platform", function() pinfo.stop(#rec.failures > 0 or #c.errors > 0) end)
    c.platform_stopped = true
  end
  if ctx.git_root then
    local left = host.processes_with(ctx.git_root)
    c.git_server_processes_remaining = #left
    if #left > 0 then c.errors[#c.errors + 1] = #left .. " git server process(es) remain" end
  end
  if ctx.dir then
    local ok, out = host.remove(ctx.dir)
    c.host_files_removed = ok
    if not ok then c.errors[#c.errors + 1] = "removing the host work dir: " .. out end
  end
  c.mcp_processes_remaining = 0
  for _, f in ipairs(rec.failures) do
    if f.name:match("%.removed$") then c.mcp_processes_remaining = nil end
  end
end

-- Writes the record to `path` without replacing anything there: a temporary file beside it,
-- then link(2) (fails when `path` exists), then the temporary name removed.
local function write_report(path, rec)
  local parts = {}
  encode(rec, "", parts)
  local text = core.mask(table.concat(parts)) .. "\n"
  local tmp = path .. ".tmp-" .. core.random_hex(4)
  local f, err = io.open(tmp, "w")
  if not f then return nil, err end
  f:write(text)
  f:close()
  local ok, out = host.sh("ln -- " .. host.q(tmp) .. " " .. host.q(path))
  os.remove(tmp)
  if not ok then return nil, out end
  return true
end

local function usage_checks(args)
  if not args.output then return "skill-tools needs --output NEW.json" end
  if core.exists(args.output) or core.lstat(args.output) then
    return "--output " .. args.output .. ": exists; give a new file name (the report is never "
      .. "overwritten)"
  end
  local dir = args.output:match("^(.*)/[^/]*$")
  if args.output:sub(-1) == "/" then return "--output " .. args.output .. ": give a file name" end
  if dir and dir ~= "" and not core.isdir(dir) then
    return "--output " .. args.output .. ": no such directory " .. dir
  end
  if args.commit and not args.commit:match("^" .. string.rep("%x", 40) .. "$") then
    return "--commit must be 40 hex digits, got " .. args.commit
  end
  if (args.repo_url ~= nil) ~= (args.commit ~= nil) then
    return "--repo-url and --commit go together (the commit pins the repository)"
  end
  return nil
end

-- The run's context from the options and the environment (template, run id, purpose, the
-- fixture repository: served by the local platform, or a pinned public one for a remote
-- provider). Returns nil and a usage error (no report written) when they do not fit.
local function new_context(args, pname, psettings)
  local provider = require("abx.run.provider")
  local lookup = provider.lookup
  local ctx = { provider = pname, mcp_clients = {},
    template = args.template or lookup("ABX_SKILL_RUNTIME_TEMPLATE") or "base",
    purpose = lookup("ABX_SKILL_RUN_PREFIX") or "abx-skill-tools",
    run_id = lookup("E2E_RUN_ID") or ("skill-" .. core.random_hex(6)) }
  if not ctx.run_id:match("^[%w%-_]+$") then
    return nil, "E2E_RUN_ID may only contain letters, digits, '-' and '_'"
  end
  if not ctx.purpose:match("^[%w%-_.]+$") or #ctx.purpose > 63 then
    return nil, "ABX_SKILL_RUN_PREFIX may only contain letters, digits, '-', '_' and '.' (at most 63)"
  end
  ctx.local_repo = psettings.kind == "local"
  if ctx.local_repo then
    if args.repo_url then
      return nil, "--repo-url/--commit are for a remote provider: the local platform serves the "
        .. "fixture repository itself (--app-dir)"
    end
    if not core.isdir(args.app_dir) then
      return nil, "--app-dir " .. args.app_dir .. ": no such directory (run from the project "
        .. "root, or give the fixture's directory)"
    end
    ctx.app_dir, ctx.commit = args.app_dir, M.PINNED_COMMIT
    return ctx
  end
  if not args.repo_url then
    return nil, "a remote provider needs --repo-url URL and --commit SHA (the pinned public "
      .. "repository)"
  end
  ctx.repo_url, ctx.commit = args.repo_url, args.commit:lower()
  -- refused here, before any work and with no report: a usage error, like a bad option
  local r = provider.resolve(pname, psettings)
  if #r.missing > 0 then
    return nil, "provider " .. pname .. ": missing credentials [" .. table.concat(r.missing, ", ")
      .. "] (set them in the environment or .env)"
  end
  return ctx
end

-- Inside the guard: the host work dir, the fixture repository (local: built and served by the
-- platform's git server), the provider with a tracker on its connection, then the checks.
-- `st`: { code, pinfo, inst } (code 4 on missing credentials).
local function open_and_check(ctx, rec, st, cfg, pname, psettings)
  ctx.dir = host.workdir(ctx.run_id)
  local serve_args
  if ctx.local_repo then
    ctx.built_commit, ctx.git_root = host.build_repo(ctx.app_dir, ctx.dir)
    serve_args = { "--git-root", ctx.git_root }
  end
  local conn
  conn, st.pinfo = require("abx.run.provider").open(pname, psettings, { run_id = ctx.run_id,
    defaults = cfg.defaults, serve_args = serve_args })
  if not conn then
    rec.error = "missing credentials [" .. table.concat(st.pinfo.missing, ", ") .. "]"
    st.code = 4
    return
  end
  ctx.conn = conn
  ctx.tracker = require("abx.run.tracker").new(2, ctx.run_id)
  local owner = ctx.tracker:owner("skill-tools", 1, "test")
  conn.hooks = ctx.tracker:hooks(function() return owner end)
  body(ctx, rec, st.inst)
end

-- The checks ended early (open_and_check raised `gerr`): an interrupt, or an error outside any
-- check (the platform did not start) recorded as the failure "setup".
local function note_abort(rec, st, gerr, interrupted)
  local kind = core.is_error(gerr) and gerr.kind
  if interrupted or kind == "Interrupted" then
    rec.interrupted = true
  elseif #rec.failures == 0 then
    rec.failures[1] = { name = "setup", kind = kind or "Error",
      error = core.is_error(gerr) and gerr.message or tostring(gerr) }
    if kind == "InvalidArgument" then st.code = 4 end
  end
end

-- The verdict and the exit code (2 interrupted, 1 failures, 4 kept, 3 when the report cannot be
-- written), the report at args.output, and the closing lines on stderr.
local function conclude(args, rec, st)
  rec.ok = #rec.failures == 0 and #rec.cleanup.errors == 0 and not rec.interrupted
    and st.code ~= 4
  if st.code ~= 4 then st.code = rec.interrupted and 2 or (rec.ok and 0 or 1) end
  local wok, werr = write_report(args.output, rec)
  if not wok then
    core.ewrite("abxlua: --output " .. args.output .. ": " .. tostring(werr) .. "\n")
    if st.code == 0 then st.code = 3 end
  else
    core.ewrite(string.format("skill-tools: %d checks passed, %d failed; cleanup %s; report %s\n",
      #rec.checks, #rec.failures, #rec.cleanup.errors == 0 and "clean" or "with errors",
      args.output))
  end
  if rec.error then core.ewrite("abxlua: error: " .. rec.error .. "\n") end
end

-- The run, as the event loop's main task: the checks under a guard (an interrupt stops them),
-- then the cleanup (not interruptible, 180 s at most), then the report. Returns the exit code.
local function run_all(args, ctx, rec, cfg, pname, psettings)
  local st = { code = 3, inst = {} }
  local interrupted = false
  core.on_interrupt(function()
    interrupted = true
    core.ewrite("skill-tools: interrupted: stopping, then cleaning up (interrupt again to exit "
      .. "at once)\n")
  end)
  core.interrupt_note("skill-tools: interrupted twice: exiting without cleanup; sandboxes of "
    .. "this run carry metadata e2e=" .. ctx.run_id)
  local t0 = core.now()
  local gok, gerr = core.guard(nil, function(e) return e end, open_and_check, ctx, rec, st, cfg,
    pname, psettings)
  if not gok then note_abort(rec, st, gerr, interrupted) end
  core.ewrite("skill-tools: cleanup\n")
  core.guard({ timeout = 180, interruptible = false }, function(e) return e end, cleanup, ctx,
    rec, st.pinfo)
  rec.duration_s = math.floor((core.now() - t0) * 10 + 0.5) / 10
  conclude(args, rec, st)
  return st.code
end

function M.execute(args)
  local uerr = usage_checks(args)
  if uerr then return nil, uerr end
  local config = require("abx.run.config")
  local provider = require("abx.run.provider")
  local cfg = config.load(config.find(args.config))
  local pname, psettings = config.provider(cfg, args.provider)
  provider.preflight(pname, psettings)
  local ctx, cerr = new_context(args, pname, psettings)
  if not ctx then return nil, cerr end
  ctx.secret = core.random_hex(32)
  core.add_secret(ctx.secret)
  local rec = new_record(ctx)
  local code = 3
  local ok, errs = core.run(function()
    code = run_all(args, ctx, rec, cfg, pname, psettings)
  end)
  if not ok then
    core.ewrite("abxlua: " .. errs .. " internal task error(s)\n")
    return 3
  end
  return code
end

return M
