-- Reports case (sharding): tests spread over three files for --shard K/N.
local t = require("abx.test")

t.test("alpha 2", function() end)
t.test("beta 2", function() end)
t.test("gamma 2", function() end)
t.test("delta 2", function() end)
