-- abx.run.mutants: the local platform's mutant catalogue as the engine sees it (`abxlua serve
-- --mutant list`, the one definition: platform/util/mutant.c; docs/mutants.md) and the selection
-- of mutants for a run (`abxlua run --mutant`) or a mutation run (`abxlua mutate --mutants`).
--
-- A catalogue row: { name, source, wire, flavors = {flavour...}, requires = {capability...},
-- layer = "api"|"ingress"|"envd" }. A mutant applies to a run when the run's flavour (e2b when
-- none is given) is one of its flavours and the provider has every capability it requires (a
-- suite cannot see a lie about pause on a provider it never pauses).
local core = require("abx.core")
local json = require("abx.json")
local process = require("abx.run.process")

local M = {}

-- The flavour of a local run given no --flavor (serve's default: platform/util/flavor.h).
M.DEFAULT_FLAVOR = "e2b"

local ROW_FIELDS = { name = "string", source = "string", wire = "string", layer = "string",
  flavors = "table", requires = "table" }

-- Checks one row of serve's catalogue; raises Protocol naming the field.
local function check_row(i, row)
  if type(row) ~= "table" then
    core.error("Protocol", 0, string.format("abxlua serve --mutant list: row %d is a %s, not an "
      .. "object", i, type(row)))
  end
  for field, kind in pairs(ROW_FIELDS) do
    if type(row[field]) ~= kind or (kind == "string" and row[field] == "") then
      core.error("Protocol", 0, string.format("abxlua serve --mutant list: row %d (%s) has no %s "
        .. "%s", i, tostring(row.name), kind == "table" and "list" or "text", field))
    end
  end
end

---The catalogue, from this engine's own `abxlua serve --mutant list` (one definition, in C).
---Must be called from a task (core.run).
---@return table[] rows in serve's order (see the module comment for a row's fields)
---Raises: Protocol when serve's answer is not the catalogue; Timeout after 60 s.
function M.catalogue()
  local r = process.run({ process.abxlua(), "serve", "--mutant", "list" }, { timeout = 60 })
  if r.exit_code ~= 0 then
    core.error("Protocol", 0, string.format("abxlua serve --mutant list exited %d: %s",
      r.exit_code, (r.stderr:match("[^\n]*%S[^\n]*") or "")))
  end
  local ok, rows = pcall(json.decode, r.stdout)
  if not ok or type(rows) ~= "table" or #rows == 0 then
    core.error("Protocol", 0, "abxlua serve --mutant list did not print a JSON array of mutants")
  end
  for i, row in ipairs(rows) do check_row(i, row) end
  return rows
end

local function index(rows)
  local by = {}
  for _, row in ipairs(rows) do by[row.name] = row end
  return by
end

local function names_of(rows)
  local names = {}
  for _, row in ipairs(rows) do names[#names + 1] = row.name end
  return table.concat(names, ", ")
end

---Why mutant `row` cannot lie on a run of `flavor` (its flavours leave that one out), or nil.
---@param row table a catalogue row
---@param flavor string|nil the run's flavour (nil: M.DEFAULT_FLAVOR)
---@return string|nil
function M.off_flavor(row, flavor)
  flavor = flavor or M.DEFAULT_FLAVOR
  for _, f in ipairs(row.flavors) do
    if f == flavor then return nil end
  end
  return string.format("not on flavour %s (only %s)", flavor, table.concat(row.flavors, ", "))
end

---Why mutant `row` does not apply to a run of `flavor` with `capabilities`, or nil when it does.
---@param row table a catalogue row
---@param flavor string|nil the run's flavour (nil: M.DEFAULT_FLAVOR)
---@param capabilities table<string, boolean> the provider's capability set
---@return string|nil
function M.not_applicable(row, flavor, capabilities)
  local off = M.off_flavor(row, flavor)
  if off then return off end
  local lacking = {}
  for _, cap in ipairs(row.requires) do
    if not capabilities[cap] then lacking[#lacking + 1] = cap end
  end
  if #lacking > 0 then
    return "the provider lacks capability " .. table.concat(lacking, ", ")
  end
  return nil
end

---The mutants a list names: "all" (every row), or NAME[:N] separated by commas, each a row's
---name (N: the row's parameter, checked by serve). Returns the selected { row =, arg = "NAME[:N]" }
---in the list's order, or nil and an error naming the valid names.
---@param rows table[] the catalogue
---@param text string
---@return table[]|nil, string|nil
function M.select(rows, text)
  local by, out, seen = index(rows), {}, {}
  if text == "all" then
    for _, row in ipairs(rows) do out[#out + 1] = { row = row, arg = row.name } end
    return out
  end
  for part in (text or ""):gmatch("[^,%s]+") do
    local name = part:match("^([^:]+)")
    local row = by[name]
    if not row then
      return nil, string.format("unknown mutant '%s' (valid: all, or any of %s; docs/mutants.md)",
        name, names_of(rows))
    end
    if seen[name] then return nil, string.format("mutant '%s' is named twice", name) end
    seen[name] = true
    out[#out + 1] = { row = row, arg = part }
  end
  if #out == 0 then
    return nil, "no mutant named (valid: all, or any of " .. names_of(rows) .. ")"
  end
  return out
end

return M
