-- The red suite of runner:mutate_cli: a clean run that fails, so mutate stops before any mutant.
local t = require("abx.test")

t.test("this test fails on a truthful platform", function() t.eq(1, 2) end)
