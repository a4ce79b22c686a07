-- A helper under a nested lib/ directory (tests/runner/suite/scenarios/sub/lib/): not a scenario either.
return { depth = 2 }
