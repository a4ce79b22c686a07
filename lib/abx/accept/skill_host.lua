-- abx.accept.skill_host: what `abxlua accept skill-tools` does on the host, before and after the
-- sandbox: the deterministic fixture repository (a bare git repository made from the project's
-- tests/accept/skill-app with a fixed author, committer and date, so its commit hash is pinned),
-- the npm installs of the MCP server releases (package-lock integrity checked), HMAC-SHA256,
-- and the process scan that proves no git server child is left.
-- Host commands run through abx.run.process (core.process_start: the loop keeps running, so an
-- interrupt is seen at once and the child's process group is killed; not os.execute or
-- io.popen, which block the loop and leave the child running); each is bounded by its deadline.
local core = require("abx.core")
local cjson = require("cjson")
local process = require("abx.run.process")

local M = {}

-- The fixed identity and date of the fixture's commit: with the same files they give the same hash.
M.GIT_ENV = "env -i PATH=/usr/bin:/bin HOME=/nonexistent GIT_CONFIG_NOSYSTEM=1 "
  .. "GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C "
  .. "GIT_AUTHOR_NAME='abxlua fixture' GIT_AUTHOR_EMAIL=fixture@abxlua.invalid "
  .. "GIT_AUTHOR_DATE='2026-01-01T00:00:00+0000' "
  .. "GIT_COMMITTER_NAME='abxlua fixture' GIT_COMMITTER_EMAIL=fixture@abxlua.invalid "
  .. "GIT_COMMITTER_DATE='2026-01-01T00:00:00+0000' "

---Quotes a string for /bin/sh.
---@param s any
---@return string
function M.q(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

---Runs a shell command on the host, its stderr with its stdout, in its own process group
---(core.process_start): at the deadline, or when the run is interrupted, the whole group is
---killed. Not timeout(1): it moves the command into a group of its own, out of that kill.
---@param cmd string
---@param timeout? number seconds (default 120)
---@return boolean ok (exit 0), string output, integer|nil exit code (-N: killed by signal N)
---Raises: Timeout naming the command; Interrupted as the run's interrupt.
function M.sh(cmd, timeout)
  timeout = timeout or 120
  local ok, r = pcall(process.run, { "/bin/sh", "-c", cmd .. " 2>&1" }, { timeout = timeout })
  if not ok then
    if core.is_error(r) and r.kind == "Timeout" then
      core.error("Timeout", 0, string.format("%s: did not end within %g s", cmd, timeout))
    end
    error(r, 0)
  end
  return r.exit_code == 0, r.stdout .. r.stderr, r.exit_code
end

-- sh, or an error naming what failed and the tail of its output.
local function must(what, cmd, timeout)
  local ok, out, code = M.sh(cmd, timeout)
  if not ok then
    core.error("Sandbox", 0, string.format("%s failed (exit %s): %s", what, tostring(code),
      out:sub(-600)))
  end
  return out
end

---A new private directory for this run's host files: $TMPDIR (or /tmp)/abxlua-skill-<run id>.
---@param run_id string
---@return string path
function M.workdir(run_id)
  local tmp = core.getenv("TMPDIR")
  if not tmp or tmp == "" then tmp = "/tmp" end
  local dir = tmp .. "/abxlua-skill-" .. run_id
  must("creating " .. dir, "mkdir -m 0700 " .. M.q(dir))
  return dir
end

---Removes a directory tree made by this runner.
---@param dir string
---@return boolean ok, string output
function M.remove(dir)
  return M.sh("rm -rf -- " .. M.q(dir))
end

---Builds the fixture repository: `src`'s files committed once on branch main with M.GIT_ENV's
---identity and date, then cloned bare as <root>/skill-app.git. Returns the commit hash.
---Raises: Sandbox naming the git step that failed.
---@param src string the app's directory (tests/accept/skill-app)
---@param dir string this run's work dir (the bare repository goes under <dir>/git)
---@return string commit, string root (the --git-root)
function M.build_repo(src, dir)
  local work, root = dir .. "/repo-work", dir .. "/git"
  local git = M.GIT_ENV .. "git"
  must("copying " .. src, "mkdir -p " .. M.q(root) .. " && cp -R -- " .. M.q(src) .. " "
    .. M.q(work))
  must("git init", git .. " -C " .. M.q(work) .. " init -q -b main")
  must("git add", git .. " -C " .. M.q(work) .. " add -A")
  must("git commit", git .. " -C " .. M.q(work) .. " commit -q -m 'skill-app fixture'")
  local commit = must("git rev-parse", git .. " -C " .. M.q(work) .. " rev-parse HEAD")
    :match("^(%x+)%s*$")
  must("git clone --bare", git .. " clone -q --bare " .. M.q(work) .. " "
    .. M.q(root .. "/skill-app.git"))
  M.remove(work)
  return commit, root
end

---Installs one release of an npm package into <dir>/mcp-<version> with the ordinary npm client
---(no install scripts), checks what package-lock.json records for it (version, sha512 integrity)
---and what was installed, and packs package.json, package-lock.json and node_modules into
---<dir>/mcp-<version>.tgz. Raises: Sandbox naming the step and what it found.
---@param dir string
---@param package string e.g. "@modelcontextprotocol/server-filesystem"
---@param version string exact
---@param timeout integer seconds for npm install
---@return table { integrity, resolved_host, packages (count in the lock), tarball (path), bytes }
function M.npm_install(dir, package, version, timeout)
  local d = dir .. "/mcp-" .. version
  must("mkdir " .. d, "mkdir -p " .. M.q(d))
  local f = assert(io.open(d .. "/package.json", "w"))
  f:write(cjson.encode({ name = "abx-skill-mcp", version = "0.0.0", private = true }), "\n")
  f:close()
  must("npm install " .. package .. "@" .. version, "cd " .. M.q(d) .. " && npm install "
    .. "--no-audit --no-fund --ignore-scripts --save-exact --no-update-notifier "
    .. M.q(package .. "@" .. version), timeout)
  local lock = cjson.decode(assert(core.read_file(d .. "/package-lock.json")))
  local entry = type(lock.packages) == "table" and lock.packages["node_modules/" .. package]
  if type(entry) ~= "table" or entry.version ~= version then
    core.error("Sandbox", 0, string.format("package-lock.json records %s %s, not %s", package,
      type(entry) == "table" and tostring(entry.version) or "nothing", version))
  end
  if type(entry.integrity) ~= "string" or not entry.integrity:match("^sha512%-") then
    core.error("Sandbox", 0, "package-lock.json has no sha512 integrity for " .. package)
  end
  local installed = cjson.decode(assert(core.read_file(d .. "/node_modules/" .. package
    .. "/package.json")))
  if installed.version ~= version then
    core.error("Sandbox", 0, string.format("node_modules has %s %s, not %s", package,
      tostring(installed.version), version))
  end
  local n = 0
  for k in pairs(lock.packages) do if k ~= "" then n = n + 1 end end
  local tgz = d .. ".tgz"
  must("tar " .. d, "tar -C " .. M.q(d) .. " -czf " .. M.q(tgz)
    .. " package.json package-lock.json node_modules")
  local st = core.lstat(tgz)
  return { integrity = entry.integrity, packages = n, tarball = tgz, bytes = st and st.size,
    resolved_host = type(entry.resolved) == "string" and entry.resolved:match("^%a+://([^/]+)")
      or nil }
end

local function hex2bin(h)
  return (h:gsub("%x%x", function(x) return string.char(tonumber(x, 16)) end))
end

---HMAC-SHA256 (RFC 2104 with SHA-256, block size 64) of `msg` under `key`, lower-case hex.
---@param key string
---@param msg string
---@return string
function M.hmac_sha256(key, msg)
  if #key > 64 then key = hex2bin(core.sha256(key)) end
  key = key .. string.rep("\0", 64 - #key)
  local ipad = key:gsub(".", function(c) return string.char(c:byte() ~ 0x36) end)
  local opad = key:gsub(".", function(c) return string.char(c:byte() ~ 0x5c) end)
  return core.sha256(opad .. hex2bin(core.sha256(ipad .. msg)))
end

---Host processes whose command line contains `text` (this process excluded).
---@param text string
---@return integer[] pids
function M.processes_with(text)
  local found, me = {}, core.read_file("/proc/self/stat")
  me = me and me:match("^(%d+)")
  for _, d in ipairs(core.readdir("/proc") or {}) do
    if d:match("^%d+$") and d ~= me then
      local cmd = core.read_file("/proc/" .. d .. "/cmdline")
      if cmd and cmd:find(text, 1, true) then found[#found + 1] = tonumber(d) end
    end
  end
  return found
end

return M
