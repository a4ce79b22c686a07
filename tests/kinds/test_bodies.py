#!/usr/bin/env python3
"""Large and refused bodies: runs tests/kinds/bodies_case.lua against the hostile fake server of
tests/hostile (hostile_api.py: GET /files?path=/huge announces a 2 GiB Content-Length and
trickles; POST /files answers 413) and checks every case passed and the run stayed small.
Usage: test_bodies.py ABXLUA"""
import os, re, subprocess, sys, tempfile
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "hostile"))
import hostile_api

abx = os.path.abspath(sys.argv[1])
failures = []

def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)

srv = hostile_api.start()
port = srv.server_address[1]
proj = tempfile.mkdtemp()
os.makedirs(os.path.join(proj, "config"))
with open(os.path.join(proj, "config", "abxlua.yaml"), "w") as f:
    f.write("provider: hostile\ndefaults:\n  request_timeout: 8\n  test_timeout: 30\n"
            "providers:\n  hostile:\n    kind: remote\n    envd_routing: headers\n"
            "    domain: localhost\n")
env = dict(os.environ, ABX_SANDBOX_API_KEY="e2b_00112233445566778899",
           ABX_SANDBOX_BASE_URL="http://127.0.0.1:%d" % port,
           E2B_SANDBOX_URL="http://127.0.0.1:%d" % port, NO_COLOR="1")
cmd = ["/usr/bin/time", "-f", "maxrss_kb=%M", abx, "run", os.path.join(here, "bodies_case.lua"),
       "-j", "3"]
p = subprocess.run(cmd, cwd=proj, env=env, capture_output=True, text=True, timeout=120)
out = p.stdout + p.stderr
print(out)
m = re.search(r"maxrss_kb=(\d+)", out)
rss_mb = int(m.group(1)) / 1024 if m else None
check(p.returncode == 0, "every case ended in the expected typed error (exit %d)" % p.returncode)
check(re.search(r"^3 passed, 0 failed", out, re.M) is not None, "3 tests passed")
check(rss_mb is not None and rss_mb < 64, "peak RSS %.1f MiB < 64 MiB" % (rss_mb or -1))
srv.shutdown()
print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
