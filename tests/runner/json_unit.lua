-- Runner case: abx.json, the engine's one JSON encoder (MCP, --json output, reports): empty and
-- marked arrays, sequences, sorted object keys, numbers, escapes, the clean hook, the refusals,
-- and decode's UTF-8 check; each output is read back with cjson.
-- Expected: 5 passed, exit 0.
-- expect-no-line: ^(FAILED|ERROR)
local t = require("abx.test")
local cjson = require("cjson")
local json = require("abx.json")

t.test("arrays: marked (empty or not) and plain sequences; other tables are sorted objects", function()
  t.eq(json.encode(json.array()), "[]")
  t.eq(json.encode({}), "{}")
  t.eq(json.encode({ "a", "b" }), '["a","b"]')
  t.eq(json.encode({ tools = json.array(), b = 1, a = { 1, json.null } }),
    '{"a":[1,null],"b":1,"tools":[]}')
  t.eq(json.encode(json.array({ { x = true } })), '[{"x":true}]')
end)

t.test("numbers round-trip and strings escape quotes, backslashes and control characters", function()
  t.eq(json.encode({ 3, 2.0, -0.5, 2 ^ 60 }), "[3,2,-0.5,1.152921504606847e+18]")
  t.eq(json.encode(0.1), "0.1")
  local third = 1 / 3
  t.eq(tonumber(json.encode(third)), third)
  t.eq(json.encode('q"\\\n\t\1/é'), '"q\\"\\\\\\n\\t\\u0001/é"')
  t.eq(cjson.decode(json.encode({ s = 'q"\\\n\127' })).s, 'q"\\\n\127')
  t.eq(json.encode({ k = "v" }, { clean = function(s) return s:upper() end }), '{"K":"V"}')
end)

-- the encoder's refusals are plain Lua errors (a programming mistake, not a platform answer)
local function refused(fn, pattern)
  local ok, err = pcall(fn)
  t.eq(ok, false)
  t.match(tostring(err), pattern)
end

t.test("values JSON cannot hold are errors that name them", function()
  refused(function() json.encode(0 / 0) end, "cannot encode the number")
  refused(function() json.encode({ 1, 2, x = 3 }) end, "object key 1 is not a string")
  refused(function() json.encode({ f = print }) end, "cannot encode a function")
end)

t.test("decode: JSON values, an error for bad JSON and for bytes that are not UTF-8", function()
  t.eq(json.decode('{"a":[1,2]}').a[2], 2)
  local v, err = json.decode("{")
  t.eq(v, nil)
  t.ok(err)
  v, err = json.decode('"\255"')
  t.eq(v, nil)
  t.eq(err, "the text is not valid UTF-8")
end)

t.test("decode_keep_arrays: empty arrays stay arrays, integers integers; strings untouched", function()
  local text = '{"a":[],"b":{},"c":[ ],"d":"x[]y\\"[]","e":[[],{"f":[]}],"g":[1,2.5],"h":6}'
  local v = assert(json.decode_keep_arrays(text))
  t.eq(json.encode(v), '{"a":[],"b":{},"c":[],"d":"x[]y\\"[]","e":[[],{"f":[]}],"g":[1,2.5],"h":6}')
  t.eq(math.type(v.h), "integer")
  t.eq(math.type(v.g[1]), "integer")
  -- a document holding the marker string itself keeps it
  t.eq(json.encode(json.decode_keep_arrays('["abx.json:empty-array",[]]')), '["abx.json:empty-array",[]]')
  local bad, err = json.decode_keep_arrays('{"a":')
  t.eq(bad, nil)
  t.ok(err)
  t.eq(select(2, json.decode_keep_arrays('"\255"')), "the text is not valid UTF-8")
end)
