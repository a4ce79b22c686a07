#!/usr/bin/env python3
"""Serve's log (issue 22 item 4, platform/util/log.h): every line starts with its UTC time; a
failed, unanswered or slow request is one line with method, path (never the query string),
status, time in ms and sandbox id; a sandbox's start and stop are lines with their reason; a
template's readiness wait is a line with its outcome and the time waited; no API key, access
token or envd access token is in it.

Serve runs as the engine runs it (stdout and stderr appended to one file) with --faults: a 503 on
GET /v2/sandboxes, a 5.2 s delay on GET /templates (a slow request) and no answer to
GET /sandboxes/iheld (the client gives up after 1 s). The sandboxes: one paused,
resumed (connect), forked, then killed by DELETE, one ended by its 1 s TTL, one of a template built here with start and ready commands,
left running until serve stops. Needs root and bubblewrap (exit 77 otherwise).
Usage: test_serve_log_lines.py ABXLUA"""
import http.client, json, os, re, signal, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import check, finish, needs_platform

abx = os.path.abspath(sys.argv[1])
needs_platform()
tmp = tempfile.mkdtemp()
log = os.path.join(tmp, "serve.log")
faults = os.path.join(tmp, "faults.yaml")
with open(faults, "w") as f:
    f.write("faults:\n"
            "  - route: \"GET /v2/sandboxes\"\n    limit: 1\n    action: {status: 503}\n"
            "  - route: \"GET /templates\"\n    limit: 1\n    action: {delay_ms: 5200}\n"
            "  - route: \"GET /sandboxes/iheld\"\n    action: {no_answer: true}\n")
api_key = "e2b_" + os.urandom(20).hex()
token = "sk_e2b_" + os.urandom(20).hex()
env = dict(os.environ, ABX_LOCAL_API_KEY=api_key, ABX_LOCAL_ACCESS_TOKEN=token)
r, w = os.pipe()
fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600) # as engine/platform.c does
proc = subprocess.Popen([abx, "serve", "--port", "0", "--ready-fd", str(w), "--faults", faults,
                         "--state-dir", os.path.join(tmp, "state"),
                         "--build-cache", os.path.join(tmp, "cache")],
                        pass_fds=[w], env=env, stdout=fd, stderr=fd)
os.close(w)
os.close(fd)
line = os.fdopen(r).readline()
if not line:
    proc.wait(timeout=30)
    print(open(log).read())
    sys.exit("serve did not start")
ready = json.loads(line)
port = ready["port"]


def call(method, path, body=None, headers=None, key=True, timeout=120):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = dict(headers or {})
    if key:
        h["X-API-Key"] = api_key
    data = json.dumps(body).encode() if body is not None else None
    if data is not None:
        h["Content-Type"] = "application/json"
    c.request(method, path, body=data, headers=h)
    resp = c.getresponse()
    raw = resp.read()
    c.close()
    try:
        return resp.status, json.loads(raw) if raw else None
    except ValueError:
        return resp.status, raw


def log_text():
    return open(log, encoding="utf-8", errors="replace").read()


def wait_for(pattern, what, seconds=60):
    """Waits (bounded) until `pattern` is in the log: a TTL ends on serve's clock, not ours."""
    end = time.time() + seconds
    while time.time() < end and not re.search(pattern, log_text(), re.M):
        time.sleep(0.2)
    check(re.search(pattern, log_text(), re.M) is not None, what)


try:
    st, sb = call("POST", "/sandboxes", {"templateID": "base", "secure": True, "timeout": 300})
    check(st == 201, "create: %d %r" % (st, sb))
    sid, envd_token = sb["sandboxID"], sb.get("envdAccessToken") or ""
    check(len(envd_token) >= 8, "the sandbox has an envd access token")
    st, _ = call("GET", "/sandboxes/inothere?api_key=QUERYSECRET123")
    check(st == 404, "GET a missing sandbox: %d" % st)
    st, _ = call("GET", "/v2/sandboxes")
    check(st == 503, "the injected 503: %d" % st)
    st, _ = call("GET", "/templates")
    check(st == 200, "the delayed GET /templates: %d" % st)
    try:
        call("GET", "/sandboxes/iheld", timeout=1)
        check(False, "the held request got an answer")
    except (TimeoutError, OSError):
        pass
    # the ingress: nothing listens on 8080 in the sandbox (502 "port is not open")
    st, _ = call("GET", "/app?token=QUERYSECRET456", key=False,
                 headers={"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "8080",
                          "X-Access-Token": envd_token})
    check(st == 502, "the ingress to a closed port: %d" % st)
    st, _ = call("POST", "/sandboxes/%s/pause" % sid)
    check(st == 204, "pause: %d" % st)
    st, _ = call("POST", "/sandboxes/%s/connect" % sid, {"timeout": 300})
    check(st in (200, 201), "connect (resume): %d" % st)
    st, forks = call("POST", "/sandboxes/%s/fork" % sid, {"count": 1, "timeout": 60})
    fork_id = ((forks or [{}])[0].get("sandbox") or {}).get("sandboxID", "?") \
        if isinstance(forks, list) else "?"
    check(st == 201 and fork_id != "?", "fork: %d %r" % (st, forks))
    st, _ = call("DELETE", "/sandboxes/" + sid)
    check(st == 204, "kill: %d" % st)
    st, short = call("POST", "/sandboxes", {"templateID": "base", "timeout": 1})
    check(st == 201, "create with a 1 s TTL: %d" % st)
    # a template with start and ready commands (the build API, no steps)
    st, tr = call("POST", "/v3/templates", {"name": "ready-log"})
    check(st == 202, "template request: %d %r" % (st, tr))
    st, j = call("POST", "/v2/templates/%s/builds/%s" % (tr["templateID"], tr["buildID"]),
                 {"fromTemplate": "base", "startCmd": "sleep 1000",
                  "readyCmd": "sleep 1; test -d /tmp", "steps": []})
    check(st == 202, "build start: %d %r" % (st, j))
    end, status = time.time() + 300, None
    while time.time() < end:
        st, j = call("GET", "/templates/%s/builds/%s/status" % (tr["templateID"], tr["buildID"]))
        status = j.get("status") if isinstance(j, dict) else None
        if status in ("ready", "error"):
            break
        time.sleep(0.5)
    check(status == "ready", "the build is ready: %r" % status)
    st, kept = call("POST", "/sandboxes", {"templateID": "ready-log", "timeout": 300})
    check(st == 201, "create from the built template: %d %r" % (st, kept))
    wait_for(r"sandbox %s stopped: TTL expired$" % short["sandboxID"], "the TTL's stop is logged")
finally:
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=120)

text = log_text()
print(text[-6000:])
lines = text.splitlines()
stamp = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z abxlua serve: ")
bad = [l for l in lines if not stamp.match(l)]
check(lines and not bad, "every line starts with an ISO 8601 UTC time with ms (%r)" % bad[:3])


def has(pattern, what):
    check(re.search(pattern, text, re.M) is not None, what)


has(r"request GET /sandboxes/inothere status=404 ms=\d+ total_ms=\d+ sandbox=inothere$",
    "the 404: method, path, status, ms, sandbox id")
has(r"request GET /v2/sandboxes status=503 ms=\d+ total_ms=\d+$", "the injected 503")
has(r"request GET /sandboxes/iheld status=none ms=\d+ total_ms=\d+ sandbox=iheld( ended=\S+)?( \(slow\))?$",
    "the request left without an answer: status=none")
m = re.search(r"request GET /templates status=200 ms=(\d+) total_ms=\d+ \(slow\)$", text, re.M)
check(m is not None and int(m.group(1)) >= 5000, "the slow request, >= 5000 ms")
has(r"request GET /app status=502 ms=\d+ total_ms=\d+ sandbox=%s$" % sid,
    "the ingress's 502 names its sandbox")
check("QUERYSECRET" not in text, "no query string is logged")
has(r"sandbox %s started: created from template base in \d+ ms$" % sid, "the start, created")
has(r"sandbox %s stopped: killed by API$" % sid, "the stop, killed by API")
has(r"sandbox %s stopped: paused by API \(memory kept\)$" % sid, "the stop, paused by API")
has(r"sandbox %s started: resumed \(memory kept\)$" % sid, "the start, resumed")
has(r"sandbox %s started: forked from template base in \d+ ms$" % fork_id, "the start, forked")
has(r"sandbox %s: template ready-log ready after \d+ ms \(start/ready commands\)$" % kept.get("sandboxID", "?"),
    "the readiness wait, with its outcome and time")
has(r"sandbox b\w+ started: build from template ready-log in \d+ ms$", "a build's sandbox starts: build")
has(r"sandbox b\w+ stopped: its build step ended$", "and stops")
has(r"sandbox %s stopped: serve shut down$" % kept.get("sandboxID", "?"), "the stop at shutdown")
for name, secret in (("API key", api_key), ("access token", token), ("envd token", envd_token)):
    check(secret not in text, "the %s is not in the log" % name)
finish()
