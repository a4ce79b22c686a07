#!/usr/bin/env python3
"""Retries against a misbehaving control plane (fake_api.py): a lost create answer is resolved by
the attempt tag (no duplicate), 503 on list is retried, 429 on kill waits Retry-After, and every
retry is logged; the test's trace (--trace on, docs/reports/traces.md) numbers each retry's
attempt. Usage: test_retry.py ABXLUA"""
import json, os, subprocess, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_api
from abxtest import check, finish, project, remote_config

abx = os.path.abspath(sys.argv[1])
here = os.path.dirname(os.path.abspath(__file__))

srv = fake_api.start()
port = srv.server_address[1]
proj = project(remote_config("fake"))
env = dict(os.environ, ABX_SANDBOX_API_KEY="e2b_0123456789abcdef",
           ABX_SANDBOX_BASE_URL="http://127.0.0.1:%d" % port, NO_COLOR="1")
report = os.path.join(tempfile.mkdtemp(), "retry.json")
p = subprocess.run([abx, "run", "--trace", "on", "--json", report, os.path.join(here, "retry_case.lua")],
                   cwd=proj, env=env,
                   capture_output=True, text=True, timeout=120)
out = p.stdout + p.stderr
print(out)
log = srv.state.log
posts = [e for e in log if e[1] == "POST"]
deletes = [e for e in log if e[1] == "DELETE"]
check(p.returncode == 0, "the run passed (exit %d)" % p.returncode)
check(len(posts) == 1, "exactly one POST /sandboxes was sent (%d)" % len(posts))
check(len(srv.state.sandboxes) == 0, "no sandbox is left on the fake platform")
check(any(e[1] == "GET" and e[3] == 503 for e in log), "a list answered 503")
check(len(deletes) >= 2 and deletes[0][3] == 429, "the first DELETE got 429 and was retried")
if len(deletes) >= 2:
    check(deletes[1][0] - deletes[0][0] >= 0.95, "the retry waited Retry-After (%.2fs)"
          % (deletes[1][0] - deletes[0][0]))
check("adopted sandbox" in out, "the adoption is logged")
check("retry 1/3 of GET /v2/sandboxes after HTTP 503" in out, "the list retry is logged")
check("retry 1/3 of DELETE /sandboxes/" in out, "the kill retry is logged")
check("e2b_0123456789abcdef" not in out, "the key is masked")
try:
    trace = json.load(open(report))["tests"][0]["trace"] or []
except (OSError, ValueError, IndexError, KeyError):
    trace = []
kills = [(e["status"], e["attempt"]) for e in trace if e["method"] == "DELETE"]
# (the list answered 503 is the preflight's, before any test: in no test's trace)
posts_t = [(e["status"], e["error"], e["attempt"], e["response"]) for e in trace if e["method"] == "POST"]
check(posts_t[:1] == [(None, "Transport", 1, None)],
      "the trace shows the create whose answer was lost: no status, no response, Transport (%s)" % posts_t)
check(kills[:2] == [(429, 1), (204, 2)] or (kills[:1] == [(429, 1)] and len(kills) >= 2 and kills[1][1] == 2),
      "the trace numbers the kill's attempts: 429 on 1, then attempt 2 (%s)" % kills)
check(all(v == "***" for e in trace for k, v in e["request"]["headers"].items() if k.lower() == "x-api-key"),
      "the trace masks the key")
srv.shutdown()
finish()
