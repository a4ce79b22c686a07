#!/usr/bin/env python3
"""A gateway's bare 502 in front of envd (issue 27 part 4; e2b-dev/E2B#1262): runs gateway_case.lua
against `abxlua serve --faults RULES` as a remote provider, the rules answering envd requests with
a bare HTML 502 (Content-Type text/html, not forwarded):

  - on 1 of 3 file reads and writes, Stat, ListDir, process List and health checks: the calls are
    retried with backoff and the test passes; the JSON report and the summary count the retries;
  - on every file read: Unavailable after 4 attempts, one line of the HTML, never SandboxGone;
  - on every process Start: Unavailable after 4 attempts (a Start is sent again only when envd
    lists no process with its tag: the gateway's page means it never reached envd);
  - on 1 of 2 process Starts: each command runs exactly once.

Needs root and /usr/bin/bwrap (the local platform). Usage: test_gateway.py ABXLUA"""
import json, os, re, subprocess, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import check, finish, needs_platform, project, remote_config, start_serve

needs_platform()
abx = os.path.abspath(sys.argv[1])
here = os.path.dirname(os.path.abspath(__file__))
CASE = os.path.join(here, "gateway_case.lua")
HTML = "<html><body><h1>502 Bad Gateway</h1></body></html>"
work = tempfile.mkdtemp(prefix="abx-gateway-")
proj = project("defaults:\n  jobs: 1\n" + remote_config("here"), work)


def rules(routes, every, after=False):
    text = "faults:\n"
    for r in routes:
        text += ('  - route: "%s"\n    every: %d\n    action: {status: 502, body: \'%s\', '
                 'headers: {Content-Type: text/html}%s}\n'
                 % (r, every, HTML, ", after: true" if after else ""))
    return text


def run(name, k, text):
    path = os.path.join(work, name + ".yaml")
    with open(path, "w") as f:
        f.write(text)
    serve, ready = start_serve(abx, "--faults", path, log=os.path.join(work, name + ".log"))
    report = os.path.join(work, name + ".json")
    env = dict(os.environ, ABX_SANDBOX_API_KEY=ready["api_key"], ABX_SANDBOX_BASE_URL=ready["url"],
               E2B_SANDBOX_URL=ready["url"], NO_COLOR="1")
    for v in ("E2B_API_KEY", "E2B_API_URL", "E2B_DOMAIN", "ABX_PROVIDER", "ABX_CONFIG", "ABX_FLAVOR",
              "CI", "E2E_RUN_ID"):
        env.pop(v, None)
    try:
        p = subprocess.run([abx, "run", "-k", k, "--json", report, CASE], cwd=proj, env=env,
                           capture_output=True, text=True, timeout=300)
    finally:
        serve.terminate()
        serve.wait(timeout=60)
    out = p.stdout + p.stderr
    print("--- %s: exit %d\n%s" % (name, p.returncode, out))
    try:
        doc = json.load(open(report))
    except (OSError, ValueError):
        doc = {}
    return p, out, doc


p, out, doc = run("some", "gateway some", rules(
    ["GET /files", "POST /files", "POST /filesystem.Filesystem/Stat",
     "POST /filesystem.Filesystem/ListDir", "POST /process.Process/List", "GET /health"], 3))
check(p.returncode == 0, "1 of 3 answered 502: the test passes (exit %d)" % p.returncode)
retries = doc.get("retries")
check(isinstance(retries, int) and retries >= 6, "the JSON report counts the retries (%s)" % retries)
check(re.search(r"^1 passed, 0 failed, 0 skipped, 0 xfailed, %s retries in " % retries, p.stdout,
                re.M) is not None, "the summary line counts them")
for route in ("GET /files", "POST /files", "POST /filesystem.Filesystem/Stat", "GET /health"):
    check("of %s after HTTP 502 (a gateway's bare answer)" % route in out,
          "a retry of %s is logged" % route)

p, out, doc = run("read", "gateway always read", rules(["GET /files"], 1))
check(p.returncode == 1, "every read answered 502: the test fails (exit %d)" % p.returncode)
check("Unavailable: GET /files answered 502: 502 Bad Gateway (a gateway's answer, no platform "
      "JSON) after 4 attempts" in out, "the read is Unavailable after 4 attempts, one line of HTML")
check("SandboxGone" not in out and "<h1>" not in out, "never SandboxGone, no markup")

p, out, doc = run("start", "gateway always start", rules(["POST /process.Process/Start"], 1))
check(p.returncode == 1, "every Start answered 502: the test fails (exit %d)" % p.returncode)
check("Unavailable: POST /process.Process/Start answered 502: 502 Bad Gateway (a gateway's answer, "
      "no platform JSON) after 4 attempts" in out, "a Start is Unavailable after 4 attempts")
check("retry 1/3 of POST /process.Process/Start" in out, "a Start no process carries the tag of is sent again")

p, out, doc = run("start2", "gateway every other start", rules(["POST /process.Process/Start"], 2))
check(p.returncode == 0, "1 of 2 Starts answered 502: each command runs once, the test passes (exit %d)"
      % p.returncode)
check(isinstance(doc.get("retries"), int) and doc["retries"] >= 3, "the Starts were retried (%s)"
      % doc.get("retries"))
# Calls that change state: sent again only when the state shows the first did no work (the
# gateway's page came first: "state"), or answered from the state when it did ("after": envd did
# the work and the gateway lost its answer). Every 2nd Move, SendSignal, CreateWatcher and upload.
STATE = ["POST /filesystem.Filesystem/Move", "POST /process.Process/SendSignal",
         "POST /filesystem.Filesystem/CreateWatcher", "POST /files"]
for name, after in (("state", False), ("state-after", True)):
    p, out, doc = run(name, "gateway state calls", rules(STATE, 2, after))
    check(p.returncode == 0, "%s: every 2nd state call answered 502, the test passes (exit %d)"
          % (name, p.returncode))
    check("not retried" not in out, "%s: no call was left unretried" % name)
    for route in STATE:
        check("of %s after HTTP 502 (a gateway's bare answer)" % route in out
              or (after and route != "POST /files"),
              "%s: a retry of %s is logged" % (name, route))
    if after:
        check("abxlua serve: fault" in open(os.path.join(work, name + ".log")).read(),
              "%s: serve logged its faults" % name)
finish()
