-- Reports case (merge-reports): more independent passing tests, so each of three shards holds
-- several items.
local t = require("abx.test")

for _, name in ipairs({ "alpha", "beta", "gamma", "delta" }) do
  t.test(name, function() t.eq(#name > 0, true) end)
end
