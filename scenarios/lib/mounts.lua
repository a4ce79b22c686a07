-- scenarios/lib/mounts.lua: what 09_volume_mounts and 10_storage_state share: proving that a
-- path in a sandbox is a kernel mount of the expected mode (not a plain directory), and a volume
-- a test owns and deletes.
-- Protocol: proc(5) /proc/[pid]/mountinfo (fields: mount id, parent id, major:minor, root, mount
-- point, mount options, optional fields, "-", fs type, source, super options);
-- docs/protocol/e2b-control-plane.md §5 (volumes).
local t = require("abx.test")

local M = {}

---The lines of the sandbox's /proc/self/mountinfo whose mount point is exactly `path`.
---Raises: the assertion failure when reading mountinfo fails.
---@param sbx abx.Sandbox
---@param path string an absolute path without a trailing slash
---@return string[] lines
function M.lines(sbx, path)
  local r = sbx.commands:run("cat /proc/self/mountinfo")
  t.eq(r.exit_code, 0, "cat /proc/self/mountinfo: " .. r.stderr)
  local found = {}
  for line in r.stdout:gmatch("[^\n]+") do
    local point = line:match("^%S+ %S+ %S+ %S+ (%S+)")
    if point == path then found[#found + 1] = line end
  end
  return found
end

---The per-mount options of a mountinfo line (field 6) as a set: {rw = true, nosuid = true, ...}.
---@param line string
---@return table<string, boolean>
function M.options(line)
  local field = line:match("^%S+ %S+ %S+ %S+ %S+ (%S+)") or ""
  local set = {}
  for o in field:gmatch("[^,]+") do set[o] = true end
  return set
end

---True when `path` is a mount point by util-linux `mountpoint` (a device differing from the
---parent's, or a bind of the same device listed in mountinfo), with its output.
---@param sbx abx.Sandbox
---@param path string
---@return boolean, string
function M.is_mount_point(sbx, path)
  local r = sbx.commands:run("mountpoint " .. path)
  return r.exit_code == 0, r.stdout .. r.stderr
end

---Asserts that `path` is exactly one kernel mount whose per-mount options say `mode` ("rw" or
---"ro"), and that `mountpoint` agrees: the check a test makes before it touches the mount, so a
---plain directory at the path (or a mount of the other mode) cannot pass.
---Raises: an assertion failure naming the path and what was found.
---@param sbx abx.Sandbox
---@param path string
---@param mode "rw"|"ro"
---@return string line the mountinfo line
function M.verify(sbx, path, mode)
  local lines = M.lines(sbx, path)
  t.eq(#lines, 1, "mountinfo lines with mount point exactly " .. path)
  local opts = M.options(lines[1])
  local other = mode == "rw" and "ro" or "rw"
  t.ok(opts[mode] and not opts[other], string.format("%s is mounted %s, not %s: %s", path,
    opts[other] and other or "?", mode, lines[1]))
  local ok, out = M.is_mount_point(sbx, path)
  t.ok(ok, "mountpoint " .. path .. ": " .. out)
  return lines[1]
end

---A volume for this test, deleted at teardown after the sandboxes `sandboxes()` returns (those
---that mount it) are killed: a volume cannot be deleted while mounted.
---@param ctx table the test's ctx
---@param what string a short word for the name
---@param sandboxes? fun(): table the sandboxes mounting it (may hold nils)
---@return {volume_id: string, name: string}
function M.new_volume(ctx, what, sandboxes)
  local name = ("abx-" .. what .. "-" .. ctx.run_id .. "-" .. tostring(math.random(1, 1e6))):sub(1, 60)
  local v = ctx.conn:create_volume(name)
  ctx.finally(function()
    for _, sbx in pairs(sandboxes and sandboxes() or {}) do sbx:kill() end
    ctx.conn:delete_volume(v.volume_id)
  end)
  return v
end

return M
