-- Cases for tests/runner/ki_lang.sh: one test per catalog entry, each failing with NotFound (the
-- defect its entry pins), so each is xfailed when its entry can be used.
local t = require("abx.test")
local core = require("abx.core")

t.test("pinned by a complete entry", { known_issue = "KI-950", raises = "NotFound" }, function()
  core.error("NotFound", 404, "gone")
end)

t.test("pinned by an entry without Chinese", { known_issue = "KI-951", raises = "NotFound" },
  function() core.error("NotFound", 404, "gone") end)
