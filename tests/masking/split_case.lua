-- Masking case with every secret cut in two (run by test_masking.py against leaky_api.py): the
-- answers arrive in pieces, the command's output in chunks that a scenario writes as they come,
-- and the error's trace excerpt and a traced header end inside a secret. Nothing of a secret, not
-- even one half, may reach any output.
local t = require("abx.test")

t.test("secrets split across reads, chunks and trace lines stay masked", function(ctx)
  local sbx = ctx.conn:create({ template = "base" })
  local r = sbx.commands:run("echo split", {
    on_stdout = function(chunk) io.write(chunk) end,
    on_stderr = function(chunk) io.stderr:write(chunk) end,
  })
  print(r.stdout)
  io.stdout:write(r.stderr)
  ctx.conn:get_info("isplit")
end)
