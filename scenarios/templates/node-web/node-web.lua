-- node-web: the template's own check, run by `abxlua run scenarios/templates/` once the recipe
-- is built. Fixture: ctx.template_sandbox (a sandbox of this folder's template). Markers: none.
-- The app (app/server.js) is reached through the sandbox's port URL as a client outside reaches
-- it: sbx:http(3000, ...) routes by <port>-<id>.<domain> or the E2b-Sandbox-* headers
-- (docs/protocol/e2b-control-plane.md §7.1, §7.4).
local t = require("abx.test")
local cjson = require("cjson")

local PORT = 3000

local function decoded(r)
  local ok, v = pcall(cjson.decode, r.body or "")
  t.ok(ok and type(v) == "table", "a JSON object: " .. tostring(r.body))
  return v
end

t.test("node-web serves its page, a JSON route and a POST echo at its port URL", function(ctx)
  local sbx = ctx.template_sandbox
  t.match(sbx:port_url(PORT), "^https?://" .. PORT .. "%-" .. sbx.id:gsub("%p", "%%%0"))
  local page = sbx:http(PORT, { path = "/" })
  t.eq(page.status, 200)
  t.match(page.headers["content-type"] or "", "^text/html")
  t.match(page.body, "<h1>node%-web</h1>")
  local info = sbx:http(PORT, { path = "/api/info" })
  t.eq(info.status, 200)
  t.match(info.headers["content-type"] or "", "^application/json")
  local j = decoded(info)
  t.eq(j.name, "node-web")
  t.match(j.node, "^v%d+%.")
  t.eq(j.greeting, "hello from node-web", "the recipe's env step reached the app")
  local body = cjson.encode({ hello = "world", n = 3 })
  local echo = sbx:http(PORT, { method = "POST", path = "/api/echo", body = body,
    headers = { ["Content-Type"] = "application/json" } })
  t.eq(echo.status, 200)
  local e = decoded(echo)
  t.eq(e.method, "POST")
  t.eq(e.length, #body)
  t.eq(e.body.hello, "world")
  t.eq(math.tointeger(e.body.n), 3)
  local text = decoded(sbx:http(PORT, { method = "POST", path = "/api/echo", body = "plain text",
    headers = { ["Content-Type"] = "text/plain" } }))
  t.eq(text.body, "plain text")
  t.eq(sbx:http(PORT, { method = "POST", path = "/api/echo", body = "{",
    headers = { ["Content-Type"] = "application/json" } }).status, 400)
  t.eq(sbx:http(PORT, { path = "/missing" }).status, 404)
  local na = sbx:http(PORT, { method = "DELETE", path = "/api/info" })
  t.eq(na.status, 405)
  t.eq(na.headers["allow"], "GET")
end)

t.test("node-web's process runs as the template user", function(ctx)
  local sbx = ctx.template_sandbox
  local j = decoded(sbx:http(PORT, { path = "/api/info" }))
  t.eq(j.user, "user")
  t.eq(math.tointeger(j.uid), 1000)
  local ps = sbx.commands:run("ps -o user=,args= -p " .. math.tointeger(j.pid))
  t.eq(ps.exit_code, 0, "the app's pid is a process of the sandbox")
  t.match(ps.stdout, "^user +node /opt/node%-web/server%.js")
  t.eq(sbx.commands:run("node --version").stdout, j.node .. "\n", "the node on PATH served it")
end)
