#!/usr/bin/env python3
"""GET /sandboxes/{id}/logs and GET /v2/sandboxes/{id}/logs (platform/api/api_logs.c,
sandbox_log.h): the lifecycle entries of a sandbox (started, paused, resumed) in E2B's shapes,
the query parameters and their 400s, 404 for unknown sandboxes, a killed sandbox's log kept.
Source: docs/protocol/e2b-control-plane.md §3.4 (the two logs rows), §3.3 SandboxLogEntry.
Usage: test_sandbox_logs.py ABXLUA"""
import json, os, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import abxtest
from abxtest import check, finish, api

abx = os.path.abspath(sys.argv[1])
abxtest.needs_platform()
tmp = tempfile.mkdtemp(prefix="abx-logs-")
proc, ready = abxtest.start_serve(abx, env=dict(os.environ, TMPDIR=tmp),
                                  log=os.path.join(tmp, "serve.log"))
try:
    st, sb = api(ready, "POST", "/sandboxes", {"templateID": "base", "timeout": 120})
    check(st == 201, "create (%s)" % st)
    sid = sb["sandboxID"]
    check(api(ready, "POST", "/sandboxes/%s/pause" % sid)[0] == 204, "pause")
    check(api(ready, "POST", "/sandboxes/%s/connect" % sid, {"timeout": 120})[0] == 201, "resume")

    st, v2 = api(ready, "GET", "/v2/sandboxes/%s/logs" % sid)
    logs = v2["logs"] if v2 else []
    check(st == 200 and [e["message"].split(" ")[1] for e in logs] == ["started", "paused", "resumed"],
          "v2: started, paused, resumed, oldest first: %s" % [e["message"] for e in logs])
    labels = {"logger": "orchestrator", "service": "orchestrator", "sandboxID": sid,
              "instanceID": sid, "envID": "base", "source": "platform"}
    check(all(set(e) == {"timestamp", "level", "message", "fields"} and e["level"] == "info"
              and e["fields"] == labels and e["timestamp"].endswith("Z") for e in logs),
          "v2 entries are SandboxLogEntry {timestamp, level, message, fields}, fields E2B's "
          "labels: %s" % [e.get("fields") for e in logs])
    check(logs and "template base" in logs[0]["message"], "the start names the template")

    st, v1 = api(ready, "GET", "/sandboxes/%s/logs" % sid)
    check(st == 200 and set(v1) == {"logs", "logEntries"} and v1["logEntries"] == logs
          and all(set(l) == {"timestamp", "line"} for l in v1["logs"]),
          "v1: {logs: [{timestamp, line}], logEntries: [SandboxLogEntry]}")
    # Each v1 line is the JSON object E2B's orchestrator writes: `e2b sandbox logs` (packages/cli
    # src/commands/sandbox/logs.ts printLog) does JSON.parse(line), line.level.toUpperCase(),
    # line.logger.replaceAll(...), and prints the rest.
    def parsed(l):
        try:
            return json.loads(l["line"])
        except ValueError:
            return None
    lines = [parsed(l) for l in (v1 or {}).get("logs", [])]
    check(lines and all(isinstance(o, dict) for o in lines),
          "v1 lines are JSON objects: %s" % [l["line"] for l in (v1 or {}).get("logs", [])][:1])
    check(all(isinstance(o, dict) and o.get("level") in ("debug", "info", "warn", "error")
              and isinstance(o.get("logger"), str) for o in lines)
          and [o.get("message") if isinstance(o, dict) else None for o in lines] == [e["message"] for e in logs]
          and all(isinstance(o, dict) and dict(e["fields"], timestamp=e["timestamp"], level=e["level"],
                                               message=e["message"]) == o for o, e in zip(lines, logs)),
          "v1 line = {timestamp, level, message} + the entry's fields")

    st, b = api(ready, "GET", "/v2/sandboxes/%s/logs?direction=backward&limit=1" % sid)
    check(st == 200 and [e["message"] for e in b["logs"]] == ["sandbox resumed"], "backward, limit 1")
    st, b = api(ready, "GET", "/v2/sandboxes/%s/logs?level=warn" % sid)
    check(st == 200 and b["logs"] == [], "level=warn: no info entries")
    st, b = api(ready, "GET", "/v2/sandboxes/%s/logs?search=paused" % sid)
    check(st == 200 and len(b["logs"]) == 1, "search")
    st, b = api(ready, "GET", "/v2/sandboxes/%s/logs?cursor=9000000000000" % sid)
    check(st == 200 and b["logs"] == [], "a cursor after the last entry: none")
    st, b = api(ready, "GET", "/sandboxes/%s/logs?start=0&limit=2" % sid)
    check(st == 200 and len(b["logEntries"]) == 2, "v1 start and limit")
    for q in ("limit=1001", "limit=-1", "limit=x", "cursor=abc", "direction=up", "level=fatal",
              "search=" + "a" * 257):
        check(api(ready, "GET", "/v2/sandboxes/%s/logs?%s" % (sid, q))[0] == 400, "v2 %s is a 400" % q[:20])
    check(api(ready, "GET", "/sandboxes/%s/logs?start=-5" % sid)[0] == 400, "v1 start=-5 is a 400")
    check(api(ready, "GET", "/v2/sandboxes/nosuchsandbox0/logs")[0] == 404, "unknown sandbox: 404")
    check(api(ready, "DELETE", "/sandboxes/%s" % sid)[0] == 204, "kill")
    # E2B answers a killed sandbox's logs (e2b-dev/infra handlers/sandbox_logs.go: a
    # Loki query, no check that it runs); `e2b sandbox logs -f` asks once more after the kill
    st, k = api(ready, "GET", "/sandboxes/%s/logs" % sid)
    check(st == 200 and [e["message"] for e in k["logEntries"]] == [e["message"] for e in logs]
          and all("envID" not in e["fields"] and e["fields"]["sandboxID"] == sid for e in k["logEntries"]),
          "a killed sandbox's logs are kept (%s): %s" % (st, k))
    st, k = api(ready, "GET", "/v2/sandboxes/%s/logs?search=resumed" % sid)
    check(st == 200 and [e["message"] for e in k["logs"]] == ["sandbox resumed"], "v2 of the killed one")
    check(api(ready, "GET", "/v2/sandboxes/nosuchsandbox0/logs")[0] == 404, "still 404: unknown")
finally:
    proc.terminate()
    proc.wait(timeout=30)

# By flavour: CubeAPI serves logs v1/v2 (its own prefix too), OpenKruise (acs) has no logs route
# (docs/protocol/e2b-v2-and-peers.md §5 route lists)
for flavor, want, prefix in (("cubesandbox", 200, "/cubeapi/v1"), ("acs", 404, "/kruise/api")):
    proc, ready = abxtest.start_serve(abx, "--flavor", flavor, env=dict(os.environ, TMPDIR=tmp),
                                      log=os.path.join(tmp, "serve-%s.log" % flavor))
    try:
        st, sb = api(ready, "POST", "/sandboxes", {"templateID": "base", "timeout": 120})
        check(st == 201, "%s: create (%s)" % (flavor, st))
        sid = sb["sandboxID"] if sb else "none"
        for path in ("/sandboxes/%s/logs", "/v2/sandboxes/%s/logs"):
            for pre in ("", prefix):
                got = api(ready, "GET", pre + path % sid)[0]
                check(got == want, "%s: GET %s is %d (got %s)" % (flavor, pre + path, want, got))
        check(api(ready, "DELETE", "/sandboxes/%s" % sid)[0] == 204, "%s: kill" % flavor)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
finish()
