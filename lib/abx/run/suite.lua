-- abx.run.suite: what run, list and known-issues share: load the config and the known-issues catalog,
-- collect the scenario files named by paths and node ids (FILE::NAME, abx.run.nodeid), apply the
-- selection (-k, -m, --profile), then --lf / --ff (abx.run.cache), then the shard (--shard K/N,
-- abx.run.shard).
local core = require("abx.core")
local config = require("abx.run.config")
local collect = require("abx.run.collect")
local select = require("abx.run.select")
local known_issues = require("abx.run.known_issues")
local nodeid = require("abx.run.nodeid")
local cache = require("abx.run.cache")
local shard = require("abx.run.shard")

local M = {}

---Adds the selection options to an argparse command.
function M.add_selection_options(cmd)
  cmd:argument("paths", "Scenario files or directories (default: scenarios/; searched "
    .. "recursively for *.lua), or node ids FILE::NAME naming one test, as the reports print "
    .. "them."):args("*")
  cmd:option("-k", "Only tests whose name or file path matches this expression: phrases "
    .. "(case-insensitive substrings; quote one holding and/or/not: '\"does not exist\"'), "
    .. "and, or, not, parentheses. Empty: no filter."):target("keyword")
  cmd:option("-m", "Only tests whose markers match this expression (e.g. \"not e2e_slow\"). "
    .. "Empty: no filter."):target("markexpr")
  cmd:option("--profile", "A named selection from config `profiles:` (-m / -k given here win).")
  cmd:option("--config", "Config file (default: ABX_CONFIG, else the first config/abxlua.yaml "
    .. "found from the working directory up; its parent is the project root).")
end

---Adds --lf, --ff, --lfnf and --cache-clear (the cache of the last run, abx.run.cache) to an
---argparse command (run, list).
function M.add_cache_options(cmd)
  cmd:flag("--lf --last-failed", "Run only the tests that failed at the last run (or all when "
    .. "none failed), from .abxlua_cache/ at the project root."):target("lf")
  cmd:flag("--ff --failed-first", "Run all tests, the last run's failures first."):target("ff")
  cmd:option("--lfnf --last-failed-no-failures", "With --lf and no failure recorded: run all "
    .. "tests (all, the default), or none."):choices({ "all", "none" }):target("lfnf")
  cmd:flag("--cache-clear", "Forget the recorded failures (and durations) before the run.")
    :target("cache_clear")
  cmd:flag("--slow-first", "Start the files whose longest test took longest at the last run "
    .. "first (durations from .abxlua_cache/), so the longest chain of a -j run starts at once; "
    .. "a file's tests stay together and in order."):target("slow_first")
end

---Adds --flavor NAME (abx.run.flavor): the local provider as that platform's flavour.
function M.add_flavor_option(cmd)
  cmd:option("--flavor", "Run the local provider as another platform's flavour (`abxlua serve "
    .. "--flavor`: " .. table.concat(require("abx.run.flavor").NAMES, ", ") .. "), with the "
    .. "semantics and capabilities of the provider entry naming it (default: ABX_FLAVOR).")
    :argname("NAME")
end

---Adds --shard, --shard-strict and --shard-durations to an argparse command (run, list).
M.add_shard_option = shard.add_options
---Parses "K/N" (abx.run.shard.parse).
M.parse_shard = shard.parse
---Keeps shard k of n of `files` in place (abx.run.shard.apply).
M.apply_shard = shard.apply

-- An expression that is empty or all blanks selects nothing out (CI's -k "$FILTER").
local function given(expr)
  if expr == nil or not expr:find("%S") then return nil end
  return expr
end

-- Compiles -k, -m and --profile into one predicate, or nil when nothing is selected out.
-- Raises: InvalidArgument (usage error) for a bad expression or an unknown profile.
local function selection(args, cfg)
  local k, m = given(args.keyword), given(args.markexpr)
  if args.profile then
    local prof = config.profile(cfg, args.profile)
    -- an empty -k / -m is as if not given: the profile's applies
    k = k or given(prof.k)
    m = m or given(prof.m)
  end
  local preds = {}
  for _, sel in ipairs({ { k, "k" }, { m, "m" } }) do
    if sel[1] then
      local ok, pred = pcall(select.compile, sel[1], sel[2], cfg.markers)
      if not ok then core.error("InvalidArgument", 0, tostring(pred)) end
      preds[#preds + 1] = pred
    end
  end
  if #preds == 0 then return nil, { k = k, m = m, profile = args.profile } end
  return function(t)
    for _, pred in ipairs(preds) do
      if not pred(t) then return false end
    end
    return true
  end, { k = k, m = m, profile = args.profile }
end

---The scenarios/ directory of the project root, as a path from the working directory: relative
---("scenarios", "../../scenarios") when the root is the working directory or above it.
---@param root string abx.run.config.root
---@return string
function M.default_path(root)
  if root == "." then return "scenarios" end
  local cwd = core.realpath(".")
  local abs = core.realpath(root) or root
  if cwd and cwd:sub(1, #abs + 1) == abs .. "/" then
    local below = cwd:sub(#abs + 2)
    local _, depth = below:gsub("[^/]+", "")
    return string.rep("../", depth) .. "scenarios"
  end
  return abs .. "/scenarios"
end

-- The usage errors of the cache and shard options among themselves.
local function check_options(args)
  if args.lf and args.ff then return "--lf and --ff: give one (--ff already runs every test)" end
  if args.lfnf and not args.lf then return "--lfnf only goes with --lf" end
  if args.shard_strict and not args.shard then return "--shard-strict only goes with --shard K/N" end
  if args.shard_durations and #args.shard_durations > 0 and not args.shard then
    return "--shard-durations only goes with --shard K/N"
  end
  return nil
end

-- The identity of a selection before its shard is taken: the sha256 (hex) of its item ids (test
-- node ids, and the path of each file that failed to collect) sorted and joined by newlines, and
-- the number of items. Every shard of one selection reports the same pair (abxlua merge-reports
-- checks it), whatever the split.
local function identity(files)
  local ids = {}
  for _, f in ipairs(files) do
    if f.error then ids[#ids + 1] = f.path end
    for _, t in ipairs(f.tests) do ids[#ids + 1] = t.id end
  end
  table.sort(ids)
  return core.sha256(table.concat(ids, "\n")), #ids
end

-- Whether the selected files hold anything to report: a test or a collection error.
local function anything(files)
  for _, f in ipairs(files) do
    if f.error or #f.tests > 0 then return true end
  end
  return false
end

---Loads config, catalog and files; applies the selection, --lf/--ff and the shard.
---@return table|nil suite { config, catalog, files, selection = {k, m, profile, paths, shard
---  ("K/N"), hash (sha256 hex of the sorted item ids before the shard), items (their number)},
---  notes = lines for the header ("run-last-failure: ..."), first = { [test] = true } (--ff: run
---  these first), empty = { line?, code } | nil (nothing left to run on purpose: an empty shard,
---  --lfnf none; exit `code`), root (the project root), collected = { [path] = collected ok } }
---@return string|nil usage error
---Raises: InvalidArgument for bad config, catalog or expressions (usage errors)
function M.load(args)
  local oerr = check_options(args)
  if oerr then return nil, oerr end
  local shard_k, shard_n, durations
  if args.shard then
    shard_k, shard_n = shard.parse(args.shard)
    if not shard_k then return nil, shard_n end
    if args.shard_durations and #args.shard_durations > 0 then
      local derr
      durations, derr = shard.load_durations(args.shard_durations)
      if not durations then return nil, derr end
    end
  end
  local cfg_path = config.find(args.config)
  local cfg = config.load(cfg_path)
  config.use(cfg) -- what scenarios read through abx.run.config.current (08_providers)
  -- the project root: where config/ was found (from a subdirectory too); the config's relative
  -- paths and the scenarios' package.path are taken from there
  local root = config.root(cfg_path)
  collect.set_root(root)
  if root ~= "." and type(cfg.known_issues) == "string" and cfg.known_issues:sub(1, 1) ~= "/" then
    cfg.known_issues = root .. "/" .. cfg.known_issues
  end
  local catalog = known_issues.load(cfg.known_issues, cfg.known_issue_languages)
  local pred, sel = selection(args, cfg)
  local paths = args.paths
  if #paths == 0 then paths = { M.default_path(root) } end
  sel.paths = paths
  local split, serr = nodeid.split(paths, collect.normalize)
  if not split then return nil, serr end
  local names, missing, helpers = collect.files(split.files)
  if #missing > 0 then return nil, "no such file or directory: " .. table.concat(missing, ", ") end
  if #helpers > 0 then return nil, table.concat(helpers, "\nabxlua: error: ") end
  local whole = {}
  for _, p in ipairs(#split.plain > 0 and (collect.files(split.plain)) or {}) do whole[p] = true end
  local files, collected = {}, {}
  for _, path in ipairs(names) do
    local f = collect.load(path, cfg.markers, catalog)
    collected[path] = f.error == nil
    local ids = not whole[path] and split.ids[path]
    if ids then
      local kerr = nodeid.keep(f, ids)
      if kerr then return nil, kerr end
    end
    if pred then
      local keep = {}
      for _, t in ipairs(f.tests) do
        if pred(t) then keep[#keep + 1] = t end
      end
      f.tests = keep
    end
    files[#files + 1] = f
  end
  local s = { config = cfg, catalog = catalog, files = files, selection = sel, notes = {},
    first = {}, root = cache.root(cfg), collected = collected }
  if args.cache_clear then cache.clear(s.root) end
  if args.lf or args.ff then
    local status, first = cache.select(files, s.root, args.lf and "lf" or "ff", args.lfnf or "all")
    s.notes[#s.notes + 1] = status
    s.first = first
    if args.lf and args.lfnf == "none" and not anything(files) then s.empty = { code = 0 } end
  end
  sel.hash, sel.items = identity(files)
  if shard_k then
    local total = shard.apply(files, shard_k, shard_n, durations)
    sel.shard = shard_k .. "/" .. shard_n
    if durations then sel.shard_durations = args.shard_durations end
    if total > 0 and not anything(files) then
      s.empty = { code = args.shard_strict and 5 or 0, line = string.format("shard %d/%d is empty: "
        .. "%d tests selected in all, %d shards%s", shard_k, shard_n, total, shard_n,
        args.shard_strict and " (--shard-strict: exit 5)" or "") }
    end
  end
  -- after the shard: the order within a shard, never which tests it holds
  if args.slow_first then s.notes[#s.notes + 1] = cache.slow_first(files, s.root) end
  return s
end

return M
