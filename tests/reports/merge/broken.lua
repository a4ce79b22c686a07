-- Reports case (merge-reports): a file that fails to collect (a syntax error on line 5), one
-- item of the selection reported by its own shard.
local t = require("abx.test")

t.test("never collected", function( end)
