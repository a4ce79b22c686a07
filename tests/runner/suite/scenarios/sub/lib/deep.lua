-- A helper under a nested lib/ directory (scenarios/sub/lib/): not a scenario either.
return { depth = 2 }
