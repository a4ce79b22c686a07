-- abx.run.recipe: template folders (scenarios/templates/<name>/): loading and checking
-- template.yaml, and turning it into the E2B build API requests the 2.51 SDK makes for the same
-- builder calls (sdk-src/template/index.ts, readycmd.ts; docs/protocol/e2b-v2-and-peers.md §2).
--
--   local recipe = require("abx.run.recipe")
--   local r = recipe.load("scenarios/templates/python-hello")   -- raises InvalidArgument
--   r.name, r.dir, r.file, r.script, r.tags, r.create (POST /v3/templates body without name),
--   r.build (TemplateBuildStartV2 body, filesHash set), r.copies ({src, dest, hash, step}),
--   r.hash (recipe hash), r.tag ("abx-" .. 12 hex)
--
-- The recipe (every key checked; an unknown key names the file, the key and the valid keys):
--   from | from_image   exactly one: a template name, or a Debian image (fromImage)
--   cpu, memory         optional: cpuCount, memoryMB (MiB), positive integers
--   tags                optional: extra tags deploy assigns besides "default"
--   steps               list; each a one-key map (run may add `user`):
--     apt: [pkgs]       RUN as root: apt-get update && DEBIAN_FRONTEND=... apt-get install -y pkgs
--     pip: [pkgs]       RUN as root: pip install pkgs (the SDK's pipInstall, g = true)
--     npm: [pkgs]       RUN as root: npm install -g pkgs (the SDK's npmInstall, g = true)
--     copy: {src, dest, user?, mode?}   COPY [src, dest, user or "", mode "0755" or ""] + filesHash
--     run: cmd | [cmds] (+ user)        RUN [cmds joined " && ", user?]
--     env: {K: "v"}     ENV [K1, v1, ...] (keys in sorted order: the YAML binding keeps no order)
--     workdir: path     WORKDIR [path];   user: name   USER [name]
--   start_cmd           optional string
--   ready_cmd           optional: a string, or {port: N} | {url: U, status?: N} | {process: P} |
--                       {file: F} | {timeout: seconds}: the SDK's waitFor* strings
--   ready_timeout       optional: seconds the ready_cmd may take at each sandbox start (and at
--                       the build's finalize), a number in 1..600 (rounded up to whole seconds);
--                       absent: the parent template's, else the local platform's 180. Sent as
--                       readyTimeout, an abxlua extension of the build body (E2B has no such
--                       field; its servers ignore unknown keys)
-- Every step carries force = false, and so does the build (the SDK without skipCache).
--   prebuilt: true      instead of all of the above: the provider's own template of the folder's
--                       name (an official one such as base or code-interpreter-v1); nothing is
--                       built, the run checks the provider has it and runs the script on it
--                       (r.prebuilt = true; no r.build, r.hash, r.tag)
local core = require("abx.core")
local cjson = require("cjson")
local errmap = require("abx.client.errmap")
local files = require("abx.client.template_files")

local M = {}

M.KEYS = { "from", "from_image", "cpu", "memory", "tags", "steps", "start_cmd", "ready_cmd",
  "ready_timeout", "prebuilt" }
M.STEP_KINDS = { "apt", "pip", "npm", "copy", "run", "env", "workdir", "user" }
M.COPY_KEYS = { "src", "dest", "user", "mode" }
M.READY_KINDS = { "port", "url", "process", "file", "timeout" }
-- the version of the recipe hash's input layout: changing the layout changes every tag
M.HASH_VERSION = "abx-recipe-1"

local function set_of(list)
  local s = {}
  for _, k in ipairs(list) do s[k] = true end
  return s
end
local KEY_SET, STEP_SET, COPY_SET, READY_SET =
  set_of(M.KEYS), set_of(M.STEP_KINDS), set_of(M.COPY_KEYS), set_of(M.READY_KINDS)

-- A template name (the folder's name): what E2B accepts as a template name/alias.
M.NAME_PATTERN = "^[a-z0-9][a-z0-9_-]*$"

-- The recipe being loaded and where each of its entries is (core.yaml_load with lines), so that
-- an error names the line of the key it is about.
local CUR = nil

-- The line of a key path ("steps[2].copy.src") in the recipe being loaded: the deepest entry of
-- the path that exists; nil when none does (a missing top-level key, the folder, the file).
local function line_of(key)
  if not CUR then return nil end
  local node, line = CUR.raw, nil
  for seg in key:gmatch("[^%.%[%]]+") do
    local k = math.tointeger(tonumber(seg)) or seg
    local at = type(node) == "table" and CUR.lines[node]
    if not (at and at[k]) then break end
    line, node = at[k], node[k]
  end
  return line
end

local function fail(file, key, msg)
  local line = line_of(key)
  errmap.raise("InvalidArgument", 0, string.format("%s%s: %s: %s", file,
    line and (":" .. line) or "", key, msg))
end

local function show(v)
  if type(v) == "string" then return string.format("%q", v) end
  if type(v) == "table" then return (#v > 0 or next(v) == nil) and "a list" or "a mapping" end
  return type(v) .. " " .. tostring(v)
end

local function is_list(v)
  if type(v) ~= "table" then return false end
  local n = 0
  for k in pairs(v) do
    if math.type(k) ~= "integer" then return false end
    n = n + 1
  end
  return n == #v
end

local function is_map(v)
  if type(v) ~= "table" then return false end
  for k in pairs(v) do
    if type(k) ~= "string" then return false end
  end
  return next(v) ~= nil
end

local function sorted_keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = tostring(k) end
  table.sort(ks)
  return ks
end

local function check_keys(file, where, t, valid_set, valid_list)
  for _, k in ipairs(sorted_keys(t)) do
    if not valid_set[k] then
      fail(file, where == "" and k or (where .. "." .. k), string.format("unknown key; remove it "
        .. "or use one of the valid keys (valid: %s)", table.concat(valid_list, ", ")))
    end
  end
end

local function want_string(file, key, v, example)
  if type(v) ~= "string" or v == "" then
    fail(file, key, string.format("must be a non-empty string, got %s (e.g. %s)", show(v), example))
  end
  return v
end

-- A list of non-empty strings (a single string is taken as a list of one, as the SDK does).
local function want_strings(file, key, v, example)
  if type(v) == "string" and v ~= "" then return { v } end
  if not is_list(v) or #v == 0 then
    fail(file, key, string.format("must be a non-empty list of strings, got %s (e.g. %s)", show(v),
      example))
  end
  for i, s in ipairs(v) do
    if type(s) ~= "string" or s == "" then
      fail(file, string.format("%s[%d]", key, i), string.format("must be a non-empty string, got "
        .. "%s (quote numbers: \"1.0\")", show(s)))
    end
  end
  return v
end

local function want_positive_int(file, key, v, example)
  if math.type(v) ~= "integer" or v < 1 then
    fail(file, key, string.format("must be a positive whole number, got %s (e.g. %s)", show(v),
      example))
  end
  return v
end

-- The SDK's shellQuote (sdk-src/utils.ts: Python shlex.quote's safe set [\w@%+=:,./-]).
function M.shell_quote(s)
  if s == "" then return "''" end
  if not s:find("[^%w_@%%+=:,./-]") then return s end
  return "'" .. s:gsub("'", "'\"'\"'") .. "'"
end

-- ready_cmd helpers, sdk-src/template/readycmd.ts.
local function ready_cmd(file, v)
  if type(v) == "string" then
    if v == "" then fail(file, "ready_cmd", "must not be empty (remove it, or give a command)") end
    return v
  end
  if not is_map(v) then
    fail(file, "ready_cmd", string.format("must be a command string or a mapping with one of %s, "
      .. "got %s", table.concat(M.READY_KINDS, ", "), show(v)))
  end
  local kind
  for _, k in ipairs(sorted_keys(v)) do
    if not READY_SET[k] and k ~= "status" then
      fail(file, "ready_cmd." .. k, string.format("unknown key; remove it or use one of the valid "
        .. "keys (valid: %s; status only with url)", table.concat(M.READY_KINDS, ", ")))
    end
    if READY_SET[k] then
      if kind then
        fail(file, "ready_cmd", string.format("has both %s and %s; give exactly one of %s", kind, k,
          table.concat(M.READY_KINDS, ", ")))
      end
      kind = k
    end
  end
  if not kind then
    fail(file, "ready_cmd", "needs one of " .. table.concat(M.READY_KINDS, ", ") .. " beside status")
  end
  if v.status ~= nil and kind ~= "url" then
    fail(file, "ready_cmd.status", "goes with url only (the expected HTTP status); remove it")
  end
  local x = v[kind]
  if kind == "port" then
    if math.type(x) ~= "integer" or x < 1 or x > 65535 then
      fail(file, "ready_cmd.port", "must be a port number 1..65535, got " .. show(x))
    end
    return string.format('[ -n "$(ss -Htuln sport = :%d)" ]', x)
  elseif kind == "url" then
    want_string(file, "ready_cmd.url", x, "http://localhost:8080/health")
    local status = v.status or 200
    if math.type(status) ~= "integer" or status < 100 or status > 599 then
      fail(file, "ready_cmd.status", "must be an HTTP status 100..599, got " .. show(v.status))
    end
    return string.format('curl -s -o /dev/null -w "%%{http_code}" %s | grep -q "%d"',
      M.shell_quote(x), status)
  elseif kind == "process" then
    want_string(file, "ready_cmd.process", x, "server.py")
    return "pgrep " .. M.shell_quote(x) .. " > /dev/null"
  elseif kind == "file" then
    want_string(file, "ready_cmd.file", x, "/tmp/ready")
    return "[ -f " .. M.shell_quote(x) .. " ]"
  end
  -- timeout: seconds here; the SDK's waitForTimeout takes ms and sleeps max(1, floor(ms/1000)) s
  if type(x) ~= "number" or x <= 0 then
    fail(file, "ready_cmd.timeout", "must be a positive number of seconds, got " .. show(x))
  end
  return string.format("sleep %d", math.max(1, math.floor(x)))
end

-- The largest ready_timeout (seconds): the local platform's ABX_READY_TIMEOUT_MAX_S
-- (platform/sandbox/template_start.h); the client's create_timeout default exceeds it (abx.run.config).
M.READY_TIMEOUT_MAX = 600

-- ready_timeout: a number of seconds in (0, READY_TIMEOUT_MAX], as whole seconds (rounded up).
local function ready_timeout(file, v)
  if type(v) ~= "number" or v ~= v or v <= 0 or v > M.READY_TIMEOUT_MAX then
    fail(file, "ready_timeout", string.format("must be a number of seconds from 1 to %d (how "
      .. "long ready_cmd may take at each sandbox start), got %s (e.g. ready_timeout: 240)",
      M.READY_TIMEOUT_MAX, show(v)))
  end
  return math.ceil(v)
end

-- Normalises a relative path lexically; nil when it climbs above its start.
local function normalize(p)
  local parts = {}
  for seg in p:gmatch("[^/]+") do
    if seg == ".." then
      if #parts == 0 then return nil end
      parts[#parts] = nil
    elseif seg ~= "." then
      parts[#parts + 1] = seg
    end
  end
  return table.concat(parts, "/")
end

-- copy src: relative, inside the template folder, no glob, no symlink leading out.
local function check_copy_src(file, key, dir, src)
  if src:sub(1, 1) == "/" then
    fail(file, key, string.format("%q is absolute; give a path relative to the template folder %s",
      src, dir))
  end
  if src:find("[*?%[%]{}]") then
    fail(file, key, string.format("%q has glob characters; name a file or directory (glob "
      .. "patterns are not supported)", src))
  end
  local norm = normalize(src)
  if norm == "" then
    fail(file, key, string.format("%q is the template folder itself; name a file or directory "
      .. "inside it", src))
  end
  if not norm then
    fail(file, key, string.format("%q leaves the template folder %s (..); copy only files inside "
      .. "it", src, dir))
  end
  local full = dir .. "/" .. (norm == "" and "." or norm)
  local st = core.lstat(full)
  if not st then
    fail(file, key, string.format("%q does not exist in the template folder %s; create it or fix "
      .. "the path", src, dir))
  end
  if st.type == "link" then
    fail(file, key, string.format("%q is a symlink; name the file or directory itself", src))
  end
  local root, real = core.realpath(dir), core.realpath(full)
  if not real or (real ~= root and real:sub(1, #root + 1) ~= root .. "/") then
    fail(file, key, string.format("%q resolves to %s, outside the template folder %s (a symlink "
      .. "leads out); copy only files inside it", src, tostring(real), root))
  end
  -- symlinks below it are stored as links (never followed); one whose target leads out of the
  -- template folder would make the template depend on the host, so it is refused too
  for _, p in ipairs(files.paths(dir, src)) do
    local pst = core.lstat(dir .. "/" .. p)
    if pst and pst.type == "link" then
      local base = p:match("^(.*)/[^/]*$") or ""
      local target = pst.target
      local inside = target:sub(1, 1) ~= "/" and normalize((base ~= "" and base .. "/" or "") .. target)
      if not inside then
        fail(file, key, string.format("%s is a symlink to %s, outside the template folder; make it "
          .. "point inside the folder or copy the file itself", p, target))
      end
      -- the SDK's glob lists a linked directory's entries under the link's path, an archive that
      -- does not extract (the entries would be written through the link): refused
      if core.isdir(dir .. "/" .. p) then
        fail(file, key, string.format("%s is a symlink to a directory (%s); the E2B SDK would "
          .. "archive the directory's entries under the link; copy the directory itself", p,
          target))
      end
    elseif pst and pst.type == "other" then
      fail(file, key, string.format("%s is not a regular file, directory or symlink", p))
    end
  end
  if core.lstat(dir .. "/.dockerignore") then
    fail(file, key, "the template folder has a .dockerignore, which the E2B SDK would apply and "
      .. "abxlua does not; remove it")
  end
end

-- The kind of step `s` (steps[i]: a one-key mapping, run may add user), or a recipe error.
local function step_kind(file, key, s)
  if not is_map(s) then
    fail(file, key, string.format("must be a one-key mapping, got %s (e.g. - run: \"make\"; kinds: "
      .. "%s)", show(s), table.concat(M.STEP_KINDS, ", ")))
  end
  local kinds = {}
  for _, k in ipairs(sorted_keys(s)) do
    if STEP_SET[k] then kinds[#kinds + 1] = k end
  end
  -- `user` is a kind of its own, and also the optional user of a run step
  if #kinds == 2 and s.run ~= nil and s.user ~= nil then kinds = { "run" } end
  for _, k in ipairs(sorted_keys(s)) do
    if not STEP_SET[k] then
      fail(file, key .. "." .. k, string.format("unknown step kind; use one of the valid keys "
        .. "(valid: %s; run may add user)", table.concat(M.STEP_KINDS, ", ")))
    end
  end
  if #kinds ~= 1 then
    fail(file, key, string.format("has %s; a step is exactly one of %s (only run may add user)",
      table.concat(kinds, " and "), table.concat(M.STEP_KINDS, ", ")))
  end
  return kinds[1]
end

-- An env step's value `v` (at key `k`): a mapping of variable names to strings -> ENV's args
-- (name, value, ... in name order).
local function env_args(file, k, v)
  if not is_map(v) then
    fail(file, k, "must be a mapping of variable names to strings, got " .. show(v)
      .. " (e.g. env: {PORT: \"8080\"})")
  end
  local args = {}
  for _, name in ipairs(sorted_keys(v)) do
    if not name:match("^[A-Za-z_][A-Za-z0-9_]*$") then
      fail(file, k .. "." .. name, "is not a variable name ([A-Za-z_][A-Za-z0-9_]*)")
    end
    if type(v[name]) ~= "string" then
      fail(file, k .. "." .. name, string.format("must be a string, got %s (quote it: %s: \"%s\")",
        show(v[name]), name, tostring(v[name])))
    end
    args[#args + 1] = name
    args[#args + 1] = v[name]
  end
  return args
end

-- A copy step (steps[i].copy = `v`, at key `k`) -> its COPY TemplateStep, with its record
-- { src, dest, hash, step } added to `copies`.
local function copy_step(file, dir, i, k, v, copies)
  if not is_map(v) then
    fail(file, k, "must be a mapping {src, dest, user?, mode?}, got " .. show(v)
      .. " (e.g. copy: {src: server/, dest: /opt/app/})")
  end
  check_keys(file, k, v, COPY_SET, M.COPY_KEYS)
  local src = want_string(file, k .. ".src", v.src, "server/")
  local dest = want_string(file, k .. ".dest", v.dest, "/opt/app/")
  check_copy_src(file, k .. ".src", dir, src)
  local user = ""
  if v.user ~= nil then user = want_string(file, k .. ".user", v.user, "user") end
  local mode = ""
  if v.mode ~= nil then
    if type(v.mode) ~= "string" or not v.mode:match("^0?[0-7][0-7][0-7]$") then
      fail(file, k .. ".mode", string.format("must be an octal mode in quotes, e.g. \"0755\", got %s",
        show(v.mode)))
    end
    local n = tonumber(v.mode, 8)
    -- the SDK sends mode only when non-zero, padded to four octal digits (padOctal)
    if n ~= 0 then mode = string.format("%04o", n) end
  end
  local hash = files.files_hash(dir, src, dest)
  copies[#copies + 1] = { src = src, dest = dest, hash = hash, step = i }
  return { type = "COPY", args = { src, dest, user, mode }, force = false, filesHash = hash }
end

-- One step -> one TemplateStep (and for copy, its record).
local function step_of(file, dir, i, s, copies)
  local key = string.format("steps[%d]", i)
  local kind = step_kind(file, key, s)
  local v = s[kind]
  local k = key .. "." .. kind
  if kind == "apt" then
    local pkgs = want_strings(file, k, v, "[python3-flask]")
    return { type = "RUN", args = { "apt-get update && DEBIAN_FRONTEND=noninteractive "
      .. "DEBCONF_NOWARNINGS=yes apt-get install -y " .. table.concat(pkgs, " "), "root" },
      force = false }, kind
  elseif kind == "pip" then
    local pkgs = want_strings(file, k, v, "[requests]")
    return { type = "RUN", args = { "pip install " .. table.concat(pkgs, " "), "root" },
      force = false }, kind
  elseif kind == "npm" then
    local pkgs = want_strings(file, k, v, "[\"@openai/codex@0.1.0\"]")
    return { type = "RUN", args = { "npm install -g " .. table.concat(pkgs, " "), "root" },
      force = false }, kind
  elseif kind == "run" then
    local cmds = want_strings(file, k, v, "\"make -C /opt/app\"")
    local args = { table.concat(cmds, " && ") }
    if s.user ~= nil then args[2] = want_string(file, key .. ".user", s.user, "root") end
    return { type = "RUN", args = args, force = false }, kind
  elseif kind == "env" then
    return { type = "ENV", args = env_args(file, k, v), force = false }, kind
  elseif kind == "workdir" then
    return { type = "WORKDIR", args = { want_string(file, k, v, "/opt/app") }, force = false }, kind
  elseif kind == "user" then
    return { type = "USER", args = { want_string(file, k, v, "user") }, force = false }, kind
  end
  return copy_step(file, dir, i, k, v, copies), kind
end

-- Canonical JSON (sorted keys), the recipe hash's input: the same content gives the same bytes.
local function canonical(v)
  if type(v) == "table" then
    if is_list(v) and (#v > 0 or getmetatable(v) == cjson.array_mt) then
      local parts = {}
      for i = 1, #v do parts[i] = canonical(v[i]) end
      return "[" .. table.concat(parts, ",") .. "]"
    end
    local parts = {}
    for _, k in ipairs(sorted_keys(v)) do
      parts[#parts + 1] = cjson.encode(k) .. ":" .. canonical(v[k])
    end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  return cjson.encode(v)
end
M.canonical = canonical

--- Loads and checks a template folder.
--- Raises: InvalidArgument "<file>: <key>: <problem and fix>" (the folder, its name, the YAML,
--- every key; line and column for YAML syntax errors, from core.yaml_load).
---@param dir string the template folder (scenarios/templates/<name>)
---@return table recipe (see the file header)
function M.load(dir)
  dir = dir:gsub("/+$", "")
  local name = dir:match("([^/]+)$")
  local file = dir .. "/template.yaml"
  if not core.isdir(dir) then fail(dir, "folder", "is not a directory") end
  if not name:match(M.NAME_PATTERN) then
    fail(dir, "folder", string.format("%q is not a template name: lower-case letters, digits, '-' "
      .. "and '_', starting with a letter or digit; rename the folder", name))
  end
  if not core.exists(file) then
    fail(file, "file", "missing; a template folder holds template.yaml (the recipe) and " .. name
      .. ".lua (its scenario)")
  end
  local script = dir .. "/" .. name .. ".lua"
  local raw, lines = core.yaml_load(file, true)
  CUR = { raw = raw, lines = lines }
  local ok, r = pcall(M._load, dir, name, file, script, raw)
  CUR = nil
  if not ok then error(r, 0) end
  return r
end

function M._load(dir, name, file, script, raw)
  if type(raw) ~= "table" or is_list(raw) and next(raw) ~= nil then
    fail(file, "top level", "must be a mapping of recipe keys (valid: " .. table.concat(M.KEYS, ", ")
      .. ")")
  end
  check_keys(file, "", raw, KEY_SET, M.KEYS)
  if not core.exists(script) then
    fail(file, "script", string.format("%s is missing; every template folder has its scenario "
      .. "script <name>.lua", script))
  end
  local r = { name = name, dir = dir, file = file, script = script, tags = {}, copies = {},
    kinds = {} }
  if raw.prebuilt ~= nil then
    if raw.prebuilt ~= true then
      fail(file, "prebuilt", "must be true (the provider's own template of this name), got "
        .. show(raw.prebuilt) .. "; for a template built from this folder remove it")
    end
    for _, k in ipairs(M.KEYS) do
      if k ~= "prebuilt" and raw[k] ~= nil then
        fail(file, k, "cannot go with prebuilt: true (nothing is built for a prebuilt template); "
          .. "remove it, or remove prebuilt to build the template from this recipe")
      end
    end
    r.prebuilt = true
    return r
  end
  local build = {}
  if (raw.from == nil) == (raw.from_image == nil) then
    fail(file, "from", raw.from == nil and "missing; give exactly one of from (a template name, "
      .. "e.g. base) and from_image (a Debian image, e.g. debian:bookworm)"
      or "from and from_image are both given; keep exactly one")
  end
  if raw.from ~= nil then
    build.fromTemplate = want_string(file, "from", raw.from, "base")
  else
    build.fromImage = want_string(file, "from_image", raw.from_image, "debian:bookworm")
  end
  r.create = {}
  if raw.cpu ~= nil then r.create.cpuCount = want_positive_int(file, "cpu", raw.cpu, "2") end
  if raw.memory ~= nil then
    r.create.memoryMB = want_positive_int(file, "memory", raw.memory, "1024")
  end
  if raw.tags ~= nil then
    r.tags = want_strings(file, "tags", raw.tags, "[v1]")
    for i, tg in ipairs(r.tags) do
      if not tg:match("^[%w][%w._-]*$") then
        fail(file, string.format("tags[%d]", i), string.format("%q is not a tag: letters, digits, "
          .. "'.', '_' and '-'", tg))
      end
      if tg == "default" or tg:match("^abx%-") then
        fail(file, string.format("tags[%d]", i), string.format("%q is given by abxlua itself "
          .. "(default on deploy, abx-<hash> on build); remove it", tg))
      end
    end
  end
  if not is_list(raw.steps) or #raw.steps == 0 then
    fail(file, "steps", raw.steps == nil and "missing; give a list of steps (kinds: "
      .. table.concat(M.STEP_KINDS, ", ") .. ")" or ("must be a non-empty list of steps, got "
      .. show(raw.steps)))
  end
  local steps = {}
  for i, s in ipairs(raw.steps) do
    steps[i], r.kinds[i] = step_of(file, dir, i, s, r.copies)
  end
  if raw.start_cmd ~= nil then
    build.startCmd = want_string(file, "start_cmd", raw.start_cmd, "\"python3 /opt/app/server.py\"")
  end
  if raw.ready_cmd ~= nil then build.readyCmd = ready_cmd(file, raw.ready_cmd) end
  if raw.ready_timeout ~= nil then build.readyTimeout = ready_timeout(file, raw.ready_timeout) end
  build.steps = steps
  build.force = false
  r.build = build
  -- the recipe hash: the parsed recipe as the build API sees it (every copy's files hash in its
  -- step) plus cpu, memory and the deploy tags
  r.hash = core.sha256(M.HASH_VERSION .. "\n" .. canonical({ create = r.create, build = build,
    tags = r.tags }))
  r.tag = "abx-" .. r.hash:sub(1, 12)
  return r
end

--- The body of POST /v3/templates for this recipe (the SDK's requestBuild without tags).
---@param r table from M.load
---@return table
function M.create_body(r)
  local b = { name = r.name .. ":" .. r.tag }
  for k, v in pairs(r.create) do b[k] = v end
  return b
end

--- Is `dir` a template folder (holds template.yaml)?
---@param dir string
---@return boolean
function M.is_template_dir(dir)
  return core.isdir(dir) and core.exists(dir .. "/template.yaml")
end

return M
