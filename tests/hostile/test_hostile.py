#!/usr/bin/env python3
"""Hostile answers end in typed errors with bounded memory: runs hostile_case.lua against
hostile_api.py under /usr/bin/time and checks every test passed and the peak RSS stayed under the
bound documented in README ("Limits"). Usage: test_hostile.py ABXLUA"""
import os, re, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_api

abx = os.path.abspath(sys.argv[1])
here = os.path.dirname(os.path.abspath(__file__))
RSS_LIMIT_MB = 200
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
cmd = ["/usr/bin/time", "-f", "maxrss_kb=%M", abx, "run", os.path.join(here, "hostile_case.lua"),
       "-j", "4"]
p = subprocess.run(cmd, cwd=proj, env=env, capture_output=True, text=True, timeout=300)
out = p.stdout + p.stderr
print(out)
m = re.search(r"maxrss_kb=(\d+)", out)
rss_mb = int(m.group(1)) / 1024 if m else None
check(p.returncode == 0, "every hostile case ended in the expected typed error (exit %d)" % p.returncode)
check(re.search(r"^14 passed, 0 failed", out, re.M) is not None, "14 tests passed")
check(rss_mb is not None and rss_mb < RSS_LIMIT_MB,
      "peak RSS %.1f MiB < %d MiB" % (rss_mb or -1, RSS_LIMIT_MB))
check("e2b_00112233445566778899" not in out, "the key is masked")
srv.shutdown()
print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
