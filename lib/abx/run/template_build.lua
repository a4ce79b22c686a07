-- abx.run.template_build: builds and deploys a recipe (abx.run.recipe) through the E2B build API
-- (abx.client.template), with a progress line per step and the build's log streamed as it comes.
-- Shared by `abxlua template` (abx.run.cmd.template) and the runner (template folders).
--
--   local tb = require("abx.run.template_build")
--   local res = tb.build(conn, r, { deploy = true, out = function(line) ... end,
--     record_dir = dir, verbose = true })
--   -- res = { name, tag, status = "cached" | "built", seconds, template_id, build_id,
--   --         steps = { {index, kind, cached, seconds} }, log = { lines },
--   --         all_cached = true when built but every step was CACHED }
--
-- The content tag: a recipe is built as "<name>:abx-<12 hex of its hash>" (abx.run.recipe); when
-- the template already has that tag the build is skipped ("cached"). Deploy then assigns
-- "default" and the recipe's tags to "<name>:abx-<hash>" (POST /templates/tags), so that
-- Sandbox.create("<name>") gets this build. Progress: the platform's step header lines,
-- E2B's orchestrator format "[CACHED ][builder k/n] <step> [<hash>]" (e2b-dev/infra
-- packages/orchestrator/pkg/template/build/phases/phase.go layerInfo), each step reported
-- when the next begins or the build ends.
local core = require("abx.core")
local cjson = require("cjson")
local template = require("abx.client.template")

local M = {}

-- How many log lines of a failed build its error and the runner's failures keep.
M.LOG_TAIL = 30

local function fmt_time(s) return string.format("%.1fs", s) end

--- The record of the last build of each template, under the state dir:
--- <dir>/<name>.json {template_id, build_id, tag, provider} and <dir>/<name>.log (its log).
---@param state string|nil core.state_dir()
---@param provider string
---@return string|nil dir
function M.record_dir(state, provider)
  if not state or not provider:match("^[%w._-]+$") then return nil end
  local dir = state .. "/template-builds/" .. provider
  -- POSIX single quotes hold anything but a single quote, which becomes '\''
  local ok = os.execute("mkdir -p -m 0700 '" .. dir:gsub("'", "'\\''") .. "'")
  return ok and dir or nil
end

local function write_file(path, text)
  local f = io.open(path, "wb")
  if f then f:write(text); f:close() end
end

--- The last build recorded for `name`, or nil.
---@return table|nil {template_id, build_id, tag, log_path}
function M.last_record(dir, name)
  if not dir then return nil end
  local text = core.read_file(dir .. "/" .. name .. ".json")
  if not text then return nil end
  local ok, rec = pcall(cjson.decode, text)
  if not ok or type(rec) ~= "table" then return nil end
  rec.log_path = dir .. "/" .. name .. ".log"
  return rec
end

-- Tracks step headers in the log and reports each finished step.
local function progress(r, out, res)
  local n = #r.build.steps
  local cur, started = nil, nil
  local p = {}
  local function finish(now, failed)
    if not cur then return end
    local s = { index = cur.index, kind = r.kinds[cur.index] or "?", cached = cur.cached,
      seconds = now - started, failed = failed }
    res.steps[#res.steps + 1] = s
    out(string.format("%s: step %d/%d %s %s", r.name, s.index, n, s.kind, failed
      and ("FAILED after " .. fmt_time(s.seconds)) or s.cached and "CACHED" or fmt_time(s.seconds)))
    cur = nil
  end
  function p.line(msg, step)
    if step == "finalize" then finish(core.now()) return end
    local k = msg:match("^%[builder (%d+)/%d+%]")
    local ck = msg:match("^CACHED %[builder (%d+)/%d+%]")
    if k or ck then
      local now = core.now()
      finish(now)
      cur, started = { index = tonumber(k or ck), cached = ck ~= nil }, now
    end
  end
  -- the build ended; `failed`: the step in flight is where it failed (or was interrupted)
  function p.done(failed) finish(core.now(), failed) end
  return p
end

--- Builds (and with `deploy`, deploys) a recipe. Never builds what the template already has
--- under the recipe's content tag.
--- Raises: what abx.client.template raises; a failed build is Sandbox/BuildError whose message
--- is the build's reason and whose `log_tail` holds the last M.LOG_TAIL log lines.
---@param conn abx.Connection
---@param r table abx.run.recipe
---@param opts {deploy?: boolean, out: fun(line: string), record_dir?: string, verbose?: boolean,
---  provider?: string}
---@return table res (see the file header)
function M.build(conn, r, opts)
  local out = opts.out
  local res = { name = r.name, tag = r.tag, steps = {}, log = {} }
  local t0 = core.now()
  local id = template.get_id(conn, r.name)
  local cached = false
  if id then
    for _, tg in ipairs(template.tags(conn, id)) do
      if tg.tag == r.tag then cached = true; res.build_id = tg.build_id end
    end
  end
  res.template_id = id
  if cached then
    res.status = "cached"
    out(string.format("%s: %s:%s is built already (cached)", r.name, r.name, r.tag))
  else
    local b = template.request_build(conn, require("abx.run.recipe").create_body(r))
    res.template_id, res.build_id = b.template_id, b.build_id
    out(string.format("%s: build %s of template %s (%s:%s)", r.name, b.build_id, b.template_id,
      r.name, r.tag))
    if opts.record_dir then
      write_file(opts.record_dir .. "/" .. r.name .. ".json", cjson.encode({
        template_id = b.template_id, build_id = b.build_id, tag = r.tag,
        provider = opts.provider }))
    end
    -- uploads in step order (the SDK sends them in parallel; one at a time keeps the order of
    -- the requests fixed, which the API does not care about)
    for _, c in ipairs(r.copies) do
      local how = template.upload_files(conn, b.template_id, { ctx = r.dir, src = c.src,
        hash = c.hash })
      out(string.format("%s: copy %s: %s", r.name, c.src, how == "cached"
        and "files already on the platform" or "uploaded"))
    end
    template.trigger_build(conn, b.template_id, b.build_id, r.build)
    local p = progress(r, out, res)
    local log_f = opts.record_dir and io.open(opts.record_dir .. "/" .. r.name .. ".log", "wb")
    local ok, err = pcall(template.wait, conn, b.template_id, b.build_id, {
      on_log = function(e)
        local msg = type(e.message) == "string" and e.message or cjson.encode(e)
        res.log[#res.log + 1] = msg
        if log_f then log_f:write(msg, "\n"); log_f:flush() end
        p.line(msg, e.step)
        if opts.verbose ~= false then out(r.name .. " | " .. msg) end
      end })
    if log_f then log_f:close() end
    p.done(not ok)
    if not ok then
      if core.is_error(err) then
        local tail = {}
        for i = math.max(1, #res.log - M.LOG_TAIL + 1), #res.log do tail[#tail + 1] = res.log[i] end
        err.log_tail = tail
        err.message = string.format("template %s: build failed%s: %s", r.name,
          err.step and (" at step " .. tostring(err.step)) or "", err.message)
      end
      error(err, 0)
    end
    res.status = "built"
    -- every step came from the platform's layer cache (a platform that forgets its templates
    -- between runs, like the local one, but keeps its build cache): shown as cached
    local all = #res.steps > 0
    for _, st in ipairs(res.steps) do all = all and st.cached end
    res.all_cached = all
  end
  if opts.deploy then
    local tags = { "default" }
    for _, tg in ipairs(r.tags) do tags[#tags + 1] = tg end
    template.assign_tags(conn, r.name .. ":" .. r.tag, tags)
    out(string.format("%s: deployed %s:%s as %s", r.name, r.name, r.tag, table.concat(tags, ", ")))
  end
  res.seconds = core.now() - t0
  return res
end

return M
