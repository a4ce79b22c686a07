-- Reports case (sharding): tests spread over three files for --shard K/N.
local t = require("abx.test")

t.test("alpha 3", function() end)
t.test("beta 3", function() end)
t.test("gamma 3", function() end)
t.test("delta 3", function() end)
