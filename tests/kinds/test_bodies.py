#!/usr/bin/env python3
"""Large and refused bodies: runs tests/kinds/bodies_case.lua against the hostile fake server of
tests/hostile (hostile_api.py: GET /files?path=/huge announces a 2 GiB Content-Length and
trickles; POST /files answers 413) and checks every case passed and the run stayed small.
Usage: test_bodies.py ABXLUA"""
import os, re, sys
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
sys.path.insert(0, os.path.join(here, "..", "hostile"))
import hostile_api
from abxtest import check, finish

abx = os.path.abspath(sys.argv[1])
code, out, rss_mb = hostile_api.run_case(abx, os.path.join(here, "bodies_case.lua"), 3, 120)
check(code == 0, "every case ended in the expected typed error (exit %d)" % code)
check(re.search(r"^3 passed, 0 failed", out, re.M) is not None, "3 tests passed")
check(rss_mb is not None and rss_mb < 64, "peak RSS %.1f MiB < 64 MiB" % (rss_mb or -1))
finish()
