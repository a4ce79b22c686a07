-- abx.run.suite: what run, list and known-issues share: load the config and the known-issues catalog,
-- collect the scenario files, and apply the selection (-k, -m, --profile), then the shard
-- (--shard K/N).
local core = require("abx.core")
local config = require("abx.run.config")
local collect = require("abx.run.collect")
local select = require("abx.run.select")
local known_issues = require("abx.run.known_issues")

local M = {}

---Adds the selection options to an argparse command.
function M.add_selection_options(cmd)
  cmd:argument("paths", "Scenario files or directories (default: scenarios/; searched "
    .. "recursively for *.lua)."):args("*")
  cmd:option("-k", "Only tests whose name matches this expression (words are case-insensitive "
    .. "substrings; and, or, not, parentheses)."):target("keyword")
  cmd:option("-m", "Only tests whose markers match this expression (e.g. \"not e2e_slow\").")
    :target("markexpr")
  cmd:option("--profile", "A named selection from config `profiles:` (-m / -k given here win).")
  cmd:option("--config", "Config file (default: ABX_CONFIG, else the first config/abxlua.yaml "
    .. "found from the working directory up; its parent is the project root).")
end

---Adds --shard to an argparse command (run, list).
---Adds --flavor NAME (abx.run.flavor): the local provider as that platform's flavour.
function M.add_flavor_option(cmd)
  cmd:option("--flavor", "Run the local provider as another platform's flavour (`abxlua serve "
    .. "--flavor`: " .. table.concat(require("abx.run.flavor").NAMES, ", ") .. "), with the "
    .. "semantics and capabilities of the provider entry naming it (default: ABX_FLAVOR).")
    :argname("NAME")
end

function M.add_shard_option(cmd)
  cmd:option("--shard", "Run only part K of N of the selected tests (K/N, 1 <= K <= N): the "
    .. "shards of one selection are disjoint and together make the whole.")
end

---Parses "K/N". Returns k, n, or nil and a usage error.
function M.parse_shard(text)
  local k, n = tostring(text):match("^%s*(%d+)%s*/%s*(%d+)%s*$")
  k, n = tonumber(k), tonumber(n)
  if not k or n < 1 or k < 1 or k > n then
    return nil, "--shard must be K/N with 1 <= K <= N (e.g. 2/3), got " .. tostring(text)
  end
  return k, n
end

---Keeps shard k of n of `files` (after the selection), in place: the selected tests, and the
---files that failed to collect (each counted as one item named by its path), sorted by id
---(`file::name`, or the path), are dealt round-robin, so shard k keeps items k, k+n, k+2n, ...
---The shards of one selection are disjoint, their union is the whole, and sizes differ by at most
---one. A collection error is reported by its own shard only.
---@param files table[] collected files (abx.run.collect), tests already selected
---@param k integer
---@param n integer
function M.apply_shard(files, k, n)
  local items = {}
  for _, f in ipairs(files) do
    if f.error then items[#items + 1] = { id = f.path, file = f } end
    for _, t in ipairs(f.tests) do items[#items + 1] = { id = t.id, test = t } end
  end
  table.sort(items, function(a, b) return a.id < b.id end)
  local keep, keep_error = {}, {}
  for i, item in ipairs(items) do
    if (i - 1) % n + 1 == k then
      if item.test then keep[item.test] = true else keep_error[item.file] = true end
    end
  end
  for _, f in ipairs(files) do
    if f.error and not keep_error[f] then f.error = nil end
    local kept = {}
    for _, t in ipairs(f.tests) do
      if keep[t] then kept[#kept + 1] = t end
    end
    f.tests = kept
  end
end

-- Compiles -k, -m and --profile into one predicate, or nil when nothing is selected out.
-- Raises: InvalidArgument (usage error) for a bad expression or an unknown profile.
local function selection(args, cfg)
  local k, m = args.keyword, args.markexpr
  if args.profile then
    local prof = config.profile(cfg, args.profile)
    k = k or prof.k
    m = m or prof.m
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

---Loads config, catalog and files; applies the selection.
---@return table|nil suite { config, catalog, files, selection = {k, m, profile, paths} }
---@return string|nil usage error
---Raises: InvalidArgument for bad config, catalog or expressions (usage errors)
function M.load(args)
  local shard_k, shard_n
  if args.shard then
    shard_k, shard_n = M.parse_shard(args.shard)
    if not shard_k then return nil, shard_n end
  end
  local cfg_path = config.find(args.config)
  local cfg = config.load(cfg_path)
  -- the project root: where config/ was found (from a subdirectory too); the config's relative
  -- paths and the scenarios' package.path are taken from there
  local root = config.root(cfg_path)
  collect.set_root(root)
  if root ~= "." and type(cfg.known_issues) == "string" and cfg.known_issues:sub(1, 1) ~= "/" then
    cfg.known_issues = root .. "/" .. cfg.known_issues
  end
  local catalog = known_issues.load(cfg.known_issues)
  local pred, sel = selection(args, cfg)
  local paths = args.paths
  if #paths == 0 then paths = { M.default_path(root) } end
  sel.paths = paths
  local names, missing, helpers = collect.files(paths)
  if #missing > 0 then return nil, "no such file or directory: " .. table.concat(missing, ", ") end
  if #helpers > 0 then return nil, table.concat(helpers, "\nabxlua: error: ") end
  local files = {}
  for _, path in ipairs(names) do
    local f = collect.load(path, cfg.markers, catalog)
    if pred then
      local keep = {}
      for _, t in ipairs(f.tests) do
        if pred(t) then keep[#keep + 1] = t end
      end
      f.tests = keep
    end
    files[#files + 1] = f
  end
  if shard_k then
    M.apply_shard(files, shard_k, shard_n)
    sel.shard = shard_k .. "/" .. shard_n
  end
  return { config = cfg, catalog = catalog, files = files, selection = sel }
end

return M
