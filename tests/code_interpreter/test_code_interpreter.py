#!/usr/bin/env python3
"""The code-interpreter client (sbx:run_code and the contexts, lib/abx/client/code.lua over core.ndjson)
against fake_code_interpreter.py, reached as a remote provider:
  1. code_case.lua with envd_routing: headers (E2b-Sandbox-Id / E2b-Sandbox-Port: 49999);
  2. code_case.lua with envd_routing: host (Host 49999-<id>.localhost, connected to the fake);
  3. only the 64 MiB line case, under /usr/bin/time: a Protocol error with peak RSS under
     RSS_LIMIT_MB, so the 16 MiB line bound (README "Limits") holds memory down.
Each run must pass every test it selects; the API key and tokens must not appear in the output.
Usage: test_code_interpreter.py ABXLUA"""
import os, re, subprocess, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_code_interpreter
from abxtest import check, finish, project

abx = os.path.abspath(sys.argv[1])
here = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(here, "code_case.lua")
EXPECTED = 34
# engine ~15 MiB + the 16 MiB line buffer; buffering the whole 64 MiB line would pass 80 MiB.
# ASan's shadow memory and allocator add their share: the bound is set by the caller's build.
RSS_LIMIT_MB = int(os.environ.get("ABX_CODE_RSS_LIMIT_MB", "64"))
KEY = "e2b_00112233445566778899aabb"

srv = fake_code_interpreter.start()
port = srv.server_address[1]

def run(routing, extra_args, timed=False):
    proj = project("provider: fake\ndefaults:\n  request_timeout: 10\n  test_timeout: 60\n"
                   "providers:\n  fake:\n    kind: remote\n    envd_routing: %s\n"
                   "    domain: localhost\n    capabilities: [code_interpreter]\n" % routing)
    env = dict(os.environ, ABX_SANDBOX_API_KEY=KEY,
               ABX_SANDBOX_BASE_URL="http://127.0.0.1:%d" % port, NO_COLOR="1")
    env.pop("E2B_SANDBOX_URL", None)
    if routing == "headers":
        env["E2B_SANDBOX_URL"] = "http://127.0.0.1:%d" % port
    cmd = ([abx, "run", CASES, "-j", "4", "-r", "fE"] + extra_args)
    if timed:
        cmd = ["/usr/bin/time", "-f", "maxrss_kb=%M"] + cmd
    p = subprocess.run(cmd, cwd=proj, env=env, capture_output=True, text=True, timeout=600)
    out = p.stdout + p.stderr
    print(out)
    return p.returncode, out

for routing in ("headers", "host"):
    rc, out = run(routing, [])
    check(rc == 0, "%s routing: run exits 0 (exit %d)" % (routing, rc))
    check(re.search(r"^%d passed, 0 failed" % EXPECTED, out, re.M) is not None,
          "%s routing: %d passed, 0 failed" % (routing, EXPECTED))
    check(KEY not in out and not re.search(r"\btok[0-9a-f]{32}\b", out),
          "%s routing: key and access tokens masked" % routing)

rc, out = run("headers", ["-k", "over and 16 and bound"], timed=True)
m = re.search(r"maxrss_kb=(\d+)", out)
rss_mb = int(m.group(1)) / 1024 if m else None
check(rc == 0 and re.search(r"^1 passed, 0 failed", out, re.M) is not None,
      "the 64 MiB line alone: a Protocol error")
check(rss_mb is not None and rss_mb < RSS_LIMIT_MB,
      "the 64 MiB line alone: peak RSS %.1f MiB < %d MiB" % (rss_mb or -1, RSS_LIMIT_MB))
srv.shutdown()
finish()
