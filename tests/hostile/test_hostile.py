#!/usr/bin/env python3
"""Hostile answers end in typed errors with bounded memory: runs hostile_case.lua against
hostile_api.py under /usr/bin/time and checks every test passed and the peak RSS stayed under the
bound documented in README ("Limits"). Usage: test_hostile.py ABXLUA"""
import os, re, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_api
from abxtest import check, finish

abx = os.path.abspath(sys.argv[1])
here = os.path.dirname(os.path.abspath(__file__))
RSS_LIMIT_MB = 200

code, out, rss_mb = hostile_api.run_case(abx, os.path.join(here, "hostile_case.lua"), 4, 300)
check(code == 0, "every hostile case ended in the expected typed error (exit %d)" % code)
check(re.search(r"^15 passed, 0 failed", out, re.M) is not None, "15 tests passed")
check(rss_mb is not None and rss_mb < RSS_LIMIT_MB,
      "peak RSS %.1f MiB < %d MiB" % (rss_mb or -1, RSS_LIMIT_MB))
check(hostile_api.KEY not in out, "the key is masked")
finish()
