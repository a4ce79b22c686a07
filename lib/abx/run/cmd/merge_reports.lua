-- abx.run.cmd.merge_reports: `abxlua merge-reports DIR|FILE... [--json F] [--junit F] [--tap F]
-- [--ctrf F] [--html F] [--evidence DIR]`: the JSON reports of the shards of one run
-- (`abxlua run --shard K/N --json F`) merged into the report of one run (abx.run.merge), written
-- in the formats asked for. The JSON, CTRF and HTML writers take the merged JSON table; JUnit,
-- TAP and evidence take the run record rebuilt from it (abx.run.report.record).
-- Prints the merged shards on stderr and the counts line of `abxlua run` on stdout.
-- Exit codes: 0 merged and written, 3 a report could not be written, 4 usage error or inputs
-- that are not the shards of one run (the error names the files).
-- The --json results of `abxlua bench --segment K/N` merge too (abx.bench.merge): the tables and
-- thresholds of the whole benchmark, --json and --html only; exit 99 when a threshold is crossed.
local core = require("abx.core")
local common = require("abx.run.report.common")
local json = require("abx.json")

local M = {}

local HTML_MODULE = "abx.run.report.html"

---Adds the `merge-reports` command to the abxlua argparse parser (abx.run.cli).
---@param parser table
function M.configure(parser)
  local cmd = parser:command("merge-reports", "Merge the --json reports of the shards of one run "
    .. "(abxlua run --shard K/N --json FILE) into the reports of one run.")
  cmd:argument("inputs", "Shard reports, or the --json results of `abxlua bench --segment K/N`: "
    .. "FILEs, and DIRs (every *.json in them)."):args("+")
  cmd:option("--json", "Write the merged JSON report to FILE."):argname("FILE")
  cmd:option("--junit", "Write a JUnit XML report to FILE."):argname("FILE")
  cmd:option("--tap", "Write a TAP version 13 report to FILE."):argname("FILE")
  cmd:option("--ctrf", "Write a CTRF JSON report (ctrf.io) to FILE."):argname("FILE")
  cmd:option("--html", "Write the HTML report to FILE (" .. HTML_MODULE .. ").")
    :argname("FILE")
  cmd:option("--evidence", "Write a verification record DIR/<date>-<topic>.md (DIR is created).")
    :argname("DIR")
  cmd:option("--evidence-topic", "Topic of the --evidence file name.", "e2e-run"):argname("NAME")
    :target("evidence_topic")
  cmd:flag("--allow-partial", "Merge even when shards are missing (merged.missing lists them).")
    :target("allow_partial")
end

-- The outputs, in the order they are written: { flag, arg, write(path, merged, record) }.
local OUTPUTS = {
  { "--json", "json", function(path, doc)
    common.write_file("JSON report", path, require("abx.run.report.json").encode(doc) .. "\n")
  end },
  { "--junit", "junit", function(path, _, rec) require("abx.run.report.junit").write(path, rec) end },
  { "--tap", "tap", function(path, _, rec) require("abx.run.report.tap").write(path, rec) end },
  { "--ctrf", "ctrf", function(path, doc) require("abx.run.report.ctrf").write(path, doc) end },
  { "--html", "html", function(path, doc) require(HTML_MODULE).write(path, doc) end },
}

-- A usage error for the output options, or nil.
local function check_outputs(args)
  local path_error = require("abx.run.cmd.run").report_path_error
  for _, o in ipairs(OUTPUTS) do
    local err = args[o[2]] and path_error(o[1], args[o[2]])
    if err then return err end
  end
  if not args.evidence_topic:match("^[%w][%w._-]*$") then
    return "--evidence-topic may only contain letters, digits, '.', '_' and '-'"
  end
  return nil
end

-- The command line as it could be typed again (for the evidence record).
local function command_line(args)
  local q = require("abx.run.cmd.run").shell_word
  local parts = { "abxlua", "merge-reports" }
  if args.allow_partial then parts[#parts + 1] = "--allow-partial" end
  for _, o in ipairs(OUTPUTS) do
    if args[o[2]] then parts[#parts + 1] = o[1] .. " " .. q(args[o[2]]) end
  end
  if args.evidence then parts[#parts + 1] = "--evidence " .. q(args.evidence) end
  for _, p in ipairs(args.inputs) do parts[#parts + 1] = q(p) end
  return table.concat(parts, " ")
end

local function describe(merged)
  local parts = {}
  for _, s in ipairs(merged.merged.shards) do
    parts[#parts + 1] = string.format("%d/%d %s", s.index, merged.merged.total, s.file)
  end
  local line = string.format("abxlua: merged %d of %d shards (%s)", #merged.merged.shards,
    merged.merged.total, table.concat(parts, ", "))
  if #merged.merged.missing > 0 then
    local ks = {}
    for _, k in ipairs(merged.merged.missing) do ks[#ks + 1] = k .. "/" .. merged.merged.total end
    line = line .. "; missing (--allow-partial): " .. table.concat(ks, ", ")
  end
  return line
end

---Runs `abxlua merge-reports` with its parsed arguments.
---Raises: InvalidArgument (exit 4) naming the files when the inputs are not the shards of one run.
---@param args table argparse's result
---@return integer|nil exit code (0 written, 3 a report not written), or nil and a usage error
---@return string|nil
-- The decoded inputs when they are `abxlua bench --segment` results (abx.bench.merge), else nil.
local function bench_segments(inputs)
  local paths = require("abx.run.merge").files(inputs)
  local docs = {}
  for i, p in ipairs(paths) do
    local f = io.open(p, "rb")
    local doc = f and json.decode(f:read("a"))
    if f then f:close() end
    if not require("abx.bench.merge").is_bench(doc) then
      if i == 1 then return nil end
      core.error("InvalidArgument", 0, string.format("%s is not an abxlua bench result while %s is: "
        .. "merge the segments of one benchmark, or the shards of one run", p, paths[1]))
    end
    docs[i] = doc
  end
  return docs, paths
end

-- The segments of one benchmark joined: its tables and thresholds printed, --json written.
-- 0, 99 when a threshold is crossed (abxlua bench's codes), 3 a file not written.
local function merge_bench(args, docs, paths)
  for _, o in ipairs(OUTPUTS) do
    if o[2] ~= "json" and o[2] ~= "html" and args[o[2]] then
      return nil, o[1] .. " is a report of a run; the segments of a benchmark merge into --json "
        .. "and --html only"
    end
  end
  if args.evidence then return nil, "--evidence is a report of a run; give --json for a benchmark" end
  local output = require("abx.bench.output")
  local r, evaluated, held = require("abx.bench.merge").run(docs, paths, { allow_partial = args.allow_partial })
  core.ewrite(string.format("abxlua: merged %d of %d segments of a benchmark%s\n", #docs, r.merged.total,
    #r.merged.missing > 0 and ("; missing (--allow-partial): " .. table.concat(r.merged.missing, ", ")) or ""))
  for _, line in ipairs(output.tables(r)) do core.write(line .. "\n") end
  if #evaluated > 0 then core.write("thresholds:\n") end
  local threshold = require("abx.bench.threshold")
  for _, e in ipairs(evaluated) do core.write("  " .. threshold.line(e) .. "\n") end
  for _, w in ipairs({ { "json", "JSON result", function() return output.document(r) .. "\n" end },
    { "html", "HTML page", function() return require("abx.bench.html").page(r) end } }) do
    if args[w[1]] then
      local ok, e = pcall(common.write_file, w[2], args[w[1]], w[3]())
      if not ok then
        core.ewrite("abxlua: --" .. w[1] .. ": " .. (core.is_error(e) and e.message or tostring(e)) .. "\n")
        return 3
      end
    end
  end
  return held and 0 or require("abx.run.cmd.bench").EXIT_THRESHOLDS
end

function M.execute(args)
  local err = check_outputs(args)
  if err then return nil, err end
  local bench_docs, bench_paths = bench_segments(args.inputs)
  if bench_docs then return merge_bench(args, bench_docs, bench_paths) end
  local merged = require("abx.run.merge").run(args.inputs, { allow_partial = args.allow_partial })
  core.ewrite(describe(merged) .. "\n")
  local record = require("abx.run.report.record").from_document(merged)
  local code = 0
  local function try(what, fn)
    local ok, e = pcall(fn)
    if not ok then
      code = 3
      core.ewrite("abxlua: " .. what .. ": " .. (core.is_error(e) and e.message or tostring(e)) .. "\n")
    end
  end
  for _, o in ipairs(OUTPUTS) do
    local path = args[o[2]]
    if path then try(o[1], function() o[3](path, merged, record) end) end
  end
  if args.evidence then
    try("--evidence", function()
      local path = require("abx.run.report.evidence").write(args.evidence, record,
        { topic = args.evidence_topic, command = command_line(args) })
      core.ewrite("abxlua: evidence record written to " .. path .. "\n")
    end)
  end
  core.write(require("abx.run.console").counts_line(merged.counts, merged.duration,
    merged.retries) .. "\n")
  return code
end

return M
