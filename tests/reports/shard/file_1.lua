-- Reports case (sharding): tests spread over three files for --shard K/N.
local t = require("abx.test")

t.test("alpha 1", function() end)
t.test("beta 1", function() end)
t.test("gamma 1", function() end)
t.test("delta 1", function() end)
