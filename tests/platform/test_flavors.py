#!/usr/bin/env python3
"""`abxlua serve --flavor NAME`: each E2B-compatible platform's wire differences (issue 12 part 3).

Usage: test_flavors.py [path/to/abxlua]

Per flavour: routes served and missing (a missing route is 404 "not found", a served one with an
unknown sandbox is 404 "Sandbox ... doesn't exist"), status codes, TTL bounds, the credential
refusal, and one create -> command through envd -> kill round trip. Sources per rule:
platform/util/flavor.h, docs/PLATFORM.md "Flavours" (docs/protocol/e2b-v2-and-peers.md §5,
docs/protocol/e2b-control-plane.md §8.1).
Exit 1 when a check failed, 77 when skipped.
"""
import os
import subprocess
import sys
import time
from datetime import datetime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_platform as tp  # noqa: E402

failures = []
GHOST = "/sandboxes/i" + "a" * 20


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def ttl(s, sid):
    st, _, j = s.json("GET", "/sandboxes/" + sid)
    if st != 200:
        return -1
    end = datetime.strptime(j["endAt"].replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")
    return end.timestamp() - time.time()


def route_missing(s, method, path, body=None):
    st, _, j = s.json(method, path, body if body is not None else ({} if method != "GET" else None))
    return st == 404 and isinstance(j, dict) and j.get("message") == "not found"


def routes(s, name, missing, served):
    for m, p in missing:
        check(route_missing(s, m, p), "%s: %s %s is 404 not found" % (name, m, p))
    for m, p in served:
        check(not route_missing(s, m, p), "%s: %s %s is served" % (name, m, p))


def round_trip(s, name, create_path="/sandboxes", body=None, token_ok=True):
    st, _, j = s.json("POST", create_path, body or {"templateID": "base", "timeout": 60})
    check(st == 201, "%s: create via %s -> 201 (%d %r)" % (name, create_path, st, j))
    if st != 201:
        return None, None
    sid = j["sandboxID"]
    code, out, _ = tp.run_in(s, sid, "echo flavour-$((6*7))", token=j.get("envdAccessToken"))
    check(code == 0 and out.strip() == "flavour-42", "%s: command through envd (%r %r)" % (name, code, out))
    return sid, j


def kill(s, name, sid):
    st, _, _ = s.request("DELETE", "/sandboxes/" + sid)
    check(st == 204, "%s: kill -> 204 (%d)" % (name, st))


def e2b_refusal(s, name):
    st, _, j = s.json("GET", "/v2/sandboxes", key="e2b_" + "0" * 40)
    check(st == 401 and j == {"code": 401, "message": "Invalid API key"},
          "%s: wrong key -> 401 Invalid API key (%d %r)" % (name, st, j))
    st, _, j = s.json("GET", "/v2/sandboxes", key=False)
    check(st == 401 and j.get("message") == "authorization header is missing",
          "%s: no key -> 401 (%d %r)" % (name, st, j))


def f_e2b(s):
    n = "e2b"
    e2b_refusal(s, n)
    routes(s, n, [], [("POST", "/v2/sandboxes"), ("GET", "/sandboxes"), ("GET", "/volumes"),
                      ("GET", GHOST + "/metrics"), ("GET", "/v2/templates"), ("POST", GHOST + "/fork")])
    st, _, j = s.json("POST", "/sandboxes", {"templateID": "base", "timeout": 90000})
    check(st == 400 and "24 hours" in j["message"], "e2b: timeout 90000 -> 400 (%d %r)" % (st, j))
    sid, j = round_trip(s, n)
    if sid:
        check(j["envdVersion"] != "0.2.0" and "envdAccessToken" not in j, "e2b: own envdVersion, no token")
        st, _, _ = s.request("POST", "/sandboxes/%s/pause" % sid)
        check(st == 204, "e2b: pause -> 204 (%d)" % st)
        st, _, j = s.json("POST", "/sandboxes/%s/resume" % sid, {"timeout": 60})
        check(st == 201 and j["sandboxID"] == sid, "e2b: resume -> 201 with the Sandbox (%d)" % st)
        kill(s, n, sid)


def f_fc(s, n="alicloud-fc", express=False):
    e2b_refusal(s, n)
    vols = [("POST", "/volumes"), ("GET", "/volumes"), ("GET", "/volumes/v1"), ("DELETE", "/volumes/v1")]
    if express:
        routes(s, n, vols + [("GET", GHOST + "/metrics")],
               [("POST", "/v2/sandboxes"), ("POST", GHOST + "/snapshots"), ("GET", "/snapshots")])
    else:
        routes(s, n, vols + [("POST", GHOST + "/snapshots"), ("GET", "/snapshots")],
               [("POST", "/v2/sandboxes"), ("GET", GHOST + "/metrics")])
    st, _, j = s.json("POST", "/sandboxes", {"templateID": "base", "volumeMounts": [{"name": "v", "path": "/data"}]})
    check(st == 400 and "volumeMounts" in j["message"], "%s: volumeMounts -> 400 (%d %r)" % (n, st, j))
    sid, _ = round_trip(s, n)
    if not sid:
        return
    for what in ("pause", "resume"):
        st, _, j = s.json("POST", "/sandboxes/%s/%s" % (sid, what), {"timeout": 60} if what == "resume" else {})
        check(st == 403 and "allowlist" in j["message"], "%s: %s -> 403 allowlist (%d %r)" % (n, what, st, j))
    st, _, j = s.json("PUT", "/sandboxes/%s/network" % sid, {"allowInternetAccess": False})
    check(st == 204, "%s: PUT network allowInternetAccess -> 204 (%d %r)" % (n, st, j))
    if express:
        st, _, j = s.json("POST", "/sandboxes/%s/snapshots" % sid, {})
        check(st == 403 and "allowlist" in j["message"], "%s: snapshot -> 403 allowlist (%d)" % (n, st))
    else:
        rows = []
        for _ in range(12):
            st, _, rows = s.json("GET", "/sandboxes/%s/metrics" % sid)
            if st != 200 or rows:
                break
            time.sleep(0.5)
        check(st == 200 and rows and all(r["diskUsed"] == 0 and r["diskTotal"] == 0 and r["memCache"] == 0
                                         and r["memTotal"] > 0 for r in rows),
              "%s: metrics CPU/memory only, disk and cache 0 (%d, %d rows)" % (n, st, len(rows or [])))
    kill(s, n, sid)


def f_acs(s):
    n = "acs"
    e2b_refusal(s, n)
    routes(s, n, [("POST", "/v2/sandboxes"), ("POST", "/v2" + GHOST + "/connect"),
                  ("GET", "/sandboxes"), ("POST", GHOST + "/refreshes"), ("GET", GHOST + "/metrics"),
                  ("GET", "/v2/templates"), ("GET", "/volumes")],
           [("GET", "/v2/sandboxes"), ("PUT", GHOST + "/network"), ("GET", "/snapshots"), ("GET", "/templates"),
            ("GET", "/kruise/api/v2/sandboxes")])
    for t in (29, 2592001):
        st, _, j = s.json("POST", "/sandboxes", {"templateID": "base", "timeout": t})
        check(st == 400 and "between 30 and 2592000" in j["message"], "acs: timeout %d -> 400 (%d %r)" % (t, st, j))
    st, _, j = s.json("POST", "/sandboxes", {"templateID": "base", "timeout": 0})
    check(st == 201, "acs: timeout 0 -> 201 (%d %r)" % (st, j))
    if st == 201:
        left = ttl(s, j["sandboxID"])
        check(290 < left <= 300, "acs: timeout 0 means 300 s (%.1f)" % left)
        kill(s, n, j["sandboxID"])
    sid, _ = round_trip(s, n, "/kruise/api/sandboxes", {"templateID": "base", "timeout": 600})
    if not sid:
        return
    st, _, body = s.request("GET", "/kruise/%s/49983/health" % sid, key=False)
    check(st in (200, 204), "acs: path route /kruise/<id>/49983/health reaches envd (%d %r)" % (st, body[:100]))
    st, _, body = s.request("GET", "/kruise/%s/notaport/health" % sid, key=False)
    check(st == 400, "acs: a malformed path route -> 400 (%d)" % st)
    st, _, _ = s.request("POST", "/kruise/api/sandboxes/%s/timeout" % sid, {"timeout": 60})
    left = ttl(s, sid)
    check(st == 204 and left > 590, "acs: POST timeout 60 does not shorten 600 (%d, %.1f)" % (st, left))
    st, _, j = s.json("POST", "/sandboxes/%s/timeout" % sid, {"timeout": 10})
    check(st == 400, "acs: POST timeout 10 -> 400 (%d)" % st)
    st, _, _ = s.request("POST", "/sandboxes/%s/pause" % sid)
    check(st == 204, "acs: pause -> 204 (%d)" % st)
    st, _, body = s.request("POST", "/sandboxes/%s/resume" % sid, {"timeout": 60})
    check(st == 204 and body == b"", "acs: resume -> 204 without a body (%d %r)" % (st, body[:100]))
    left = ttl(s, sid)
    check(290 < left <= 300, "acs: resume lives at least 300 s (%.1f)" % left)
    code, out, _ = tp.run_in(s, sid, "echo back")
    check(code == 0 and out.strip() == "back", "acs: command after resume")
    kill(s, n, sid)


def f_cube(s):
    n = "cubesandbox"
    st, _, j = s.json("GET", "/v2/sandboxes", key="e2b_" + "0" * 40)
    check(st == 200, "cubesandbox: any key is accepted (%d %r)" % (st, j))
    st, _, j = s.json("GET", "/sandboxes", key=False)
    check(st == 200, "cubesandbox: no key is accepted too (%d)" % st)
    routes(s, n, [("POST", "/v2/sandboxes"), ("POST", "/v2" + GHOST + "/connect"), ("POST", GHOST + "/fork"),
                  ("PUT", GHOST + "/network"), ("GET", GHOST + "/metrics"), ("POST", "/v3/templates"),
                  ("GET", "/v2/templates"), ("GET", "/volumes"), ("GET", "/snapshots")],
           [("GET", "/sandboxes"), ("GET", "/v2/sandboxes"), ("POST", GHOST + "/refreshes"),
            ("GET", "/templates"), ("GET", "/cubeapi/v1/sandboxes")])
    sid, j = round_trip(s, n, "/cubeapi/v1/sandboxes",
                        {"templateID": "base", "envVars": {"FOO": "bar"}, "secure": True, "autoPause": True})
    if not sid:
        return
    check(j["envdVersion"] == "0.2.0" and j.get("envdAccessToken", 1) is None and j["trafficAccessToken"] is None,
          "cubesandbox: envdVersion 0.2.0, null tokens (%r)" % j)
    left = ttl(s, sid)
    check(10 < left <= 15, "cubesandbox: default timeout 15 s (%.1f)" % left)
    code, out, _ = tp.run_in(s, sid, "echo \"[$FOO]\"")
    check(out.strip() == "[]", "cubesandbox: envVars dropped (%r)" % out)
    st, _, j = s.json("GET", "/sandboxes/" + sid)
    check(j.get("lifecycle", {}).get("onTimeout") == "kill", "cubesandbox: autoPause dropped (%r)" % j.get("lifecycle"))
    st, _, j = s.json("POST", "/sandboxes/%s/connect" % sid, {"timeout": 600})
    left = ttl(s, sid)
    check(st == 200 and left <= 15, "cubesandbox: connect 200 without extending the TTL (%d, %.1f)" % (st, left))
    st, _, _ = s.request("POST", "/sandboxes/%s/timeout" % sid, {"timeout": 120})
    check(st == 204, "cubesandbox: timeout -> 204 (%d)" % st)
    st, _, _ = s.request("POST", "/sandboxes/%s/pause" % sid)
    check(st == 204, "cubesandbox: pause -> 204 (%d)" % st)
    st, _, j = s.json("POST", "/sandboxes/%s/connect" % sid, {"timeout": 120})
    check(st == 200 and j and j.get("sandboxID") == sid, "cubesandbox: connect after pause resumes with 200 (%d)" % st)
    st, _, _ = s.request("POST", "/sandboxes/%s/pause" % sid)
    st2, _, j = s.json("POST", "/sandboxes/%s/resume" % sid, {"timeout": 120})
    check(st == 204 and st2 == 201, "cubesandbox: pause 204, resume 201 (%d %d)" % (st, st2))
    kill(s, n, sid)


FLAVORS = [("e2b", f_e2b), ("alicloud-fc", f_fc), ("alicloud-express", lambda s: f_fc(s, "alicloud-express", True)),
           ("acs", f_acs), ("cubesandbox", f_cube)]


def main():
    p = subprocess.run([tp.BIN, "serve", "--flavor", "opensandboxx"], capture_output=True, timeout=10)
    check(p.returncode == 4 and b"e2b|alicloud-fc|alicloud-express|acs|cubesandbox|opensandbox" in p.stderr,
          "unknown --flavor -> exit 4 naming the valid ones (%d %r)" % (p.returncode, p.stderr[:200]))
    p = subprocess.run([tp.BIN, "serve", "--help"], capture_output=True, timeout=10)
    check(b"--flavor" in p.stdout, "serve --help documents --flavor")
    s = tp.start_for_checks("freezer")
    if isinstance(s, int):
        return s
    s.stop()
    only = os.environ.get("FLAVORS")
    for name, fn in FLAVORS:
        if only and name not in only.split(","):
            continue
        s = tp.Server(args=("--flavor", name))
        t0 = time.time()
        try:
            fn(s)
        except Exception as e:  # noqa: BLE001 - report and go on with the next flavour
            check(False, "%s: %s: %s" % (name, type(e).__name__, e))
        finally:
            code, _, err = s.stop()
            check(code == 0, "%s: serve exits 0 (%r %s)" % (name, code, err.decode(errors="replace")[-300:]))
        print("--- %s %.1fs" % (name, time.time() - t0))
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
