-- 09_mcp_lifecycle: `abxlua mcp` driven by the Lua MCP client (abx.mcp) over the run's own
-- connection: real creation, allowlisted metadata (a key off the allowlist refused), list
-- visibility (the only eventual step), TTL (end time matches the requested timeout), command and
-- file use through the tools, ownership at shutdown (a sandbox the scenario made survives, the
-- server's own are gone).
-- Fixtures: ctx.conn, ctx.sandbox_factory, ctx.run_id. Markers: none. Requires: nothing.
-- Protocol: MCP specification 2025-11-25 basic/lifecycle, server/tools; lib/abx/mcp/*.
local t = require("abx.test")
local mcp = require("abx.mcp")
local sandbox = require("abx.sandbox")

t.test("the MCP server creates, uses and at shutdown kills only its own sandboxes", function(ctx)
  local external = ctx.sandbox_factory({ timeout = 120 })
  local c = mcp.spawn({ conn = ctx.conn, run_id = ctx.run_id, args = { "--metadata-allow", "owner" } })
  ctx.finally(function() c:close() end)
  t.eq(c:initialize().protocolVersion, "2025-11-25")
  local created = c:tool("create_sandbox", { timeout = 120, metadata = { owner = "qa" } })
  local id = created.sandbox_id
  t.eq(created.metadata.owner, "qa")
  local span = sandbox.parse_time(created.end_at) - sandbox.parse_time(created.started_at)
  t.ok(math.abs(span - 120) <= 2, "end time matches the requested timeout (" .. span .. " s)")
  local bad = c:call_tool("create_sandbox", { metadata = { team = "x" } })
  t.eq(bad.isError, true)
  t.match(bad.content[1].text, "metadata key \"team\" is not allowed")
  t.eventually(function()
    local l = c:tool("list_sandboxes", {})
    t.eq(#l.sandboxes, 1)
    t.eq(l.sandboxes[1].sandbox_id, id)
  end, { timeout = 40, interval = 1 })
  t.eq(c:tool("write_file", { sandbox_id = id, path = "/tmp/m.txt", content = "hi mcp" }).bytes, 6)
  t.eq(c:tool("read_file", { sandbox_id = id, path = "/tmp/m.txt" }).content, "hi mcp")
  -- output ending in a newline: OpenSandbox's execd sends lines, and a last line without its
  -- terminator gains one (abx.client.opensandbox_execd), so "hi mcp" alone differs there
  local r = c:tool("run_command", { sandbox_id = id, command = "cat /tmp/m.txt; echo; exit 3" })
  t.eq(r.exit_code, 3)
  t.eq(r.stdout, "hi mcp\n")
  t.eq(c:call_tool("kill_sandbox", { sandbox_id = external.id }).isError, true)
  t.eq(c:close().code, 0)
  t.eq(ctx.conn:get_info(external.id).state, "running")
  local ok, err = pcall(ctx.conn.get_info, ctx.conn, id)
  t.ok(not ok and (err.kind == "NotFound" or err.kind == "SandboxNotFound"),
    "the server's sandbox is gone after its shutdown")
end)
