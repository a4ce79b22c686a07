-- Planted-secret case (run by test_planted.py): every variable named in PLANTED_NAMES (comma
-- separated; set in the environment, .env or scenarios/.env by the test) is printed at collection,
-- by a test's output and failure message, through a sandbox command's stdout, and in the path of
-- a request to the platform. Nothing here calls t.secret before printing: the run must have
-- registered them all before collection, whatever the selection (-k, node id), -s or -j. The last
-- test calls t.secret late, as scenarios used to do to get masking at all.
local t = require("abx.test")
local provider = require("abx.run.provider")

local function planted()
  local out = {}
  for name in (os.getenv("PLANTED_NAMES") or ""):gmatch("[^,]+") do
    out[#out + 1] = { name = name, value = provider.lookup(name) or "(unset)" }
  end
  return out
end

local function lines(values)
  local s = {}
  for _, v in ipairs(values) do s[#s + 1] = v.name .. "=" .. v.value end
  return table.concat(s, "\n")
end

print("at collection:\n" .. lines(planted()))

t.test("prints the planted values", function()
  local values = planted()
  print(lines(values))
  io.stderr:write(lines(values) .. "\n")
  t.fail("planted:\n" .. lines(values))
end)

t.test("a sandbox command prints them", function(ctx)
  local values = planted()
  local words = {}
  for _, v in ipairs(values) do words[#words + 1] = "'" .. v.value .. "'" end
  local r = ctx.base_sandbox.commands:run("printf '%s\\n' " .. table.concat(words, " "))
  print(r.stdout)
  -- the platform sees each value in a request path (a serve that logs failed requests names it)
  pcall(function() ctx.conn:get_info(values[1].value) end)
  t.eq(r.stdout, "nothing")
end)

t.test("asks for them with t.secret, late", function()
  for _, v in ipairs(planted()) do t.secret(v.name) end
end)
