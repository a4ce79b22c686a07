#!/usr/bin/env python3
"""The v2 lifecycle routes of `abxlua serve` and the limits and filters around them (issue 10).

Usage: test_v2.py [path/to/abxlua]

POST /v2/sandboxes applies the defaults the e2b 2.51 SDK no longer sends (timeout 300 s, every
sandbox secured); POST /v2/sandboxes/{id}/connect takes an optional body (200 running with the TTL
only extended, 201 resumed, timeout 0 → 400); a timeout above 24 h is a 400, never a clamp;
autoPause/autoPauseMemory/autoResume are validated; GET /v2/sandboxes filters on startedAfter and
sends X-Total-Running. Sources: docs/protocol/e2b-v2-and-peers.md §1.2-1.4,
docs/protocol/e2b-control-plane.md §3.2-3.4. Exit 1 when a check failed, 77 when skipped.
"""
import os
import sys
import time
import urllib.parse
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_platform as tp  # noqa: E402

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def ts(v):
    return datetime.strptime(v.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def ttl(s, sid):
    st, _, j = s.json("GET", "/sandboxes/" + sid)
    if st != 200:
        check(False, "get %s: %d %r" % (sid, st, j))
        return 0, {}
    return ts(j["endAt"]) - time.time(), j


def main():
    if os.geteuid() != 0 or not os.access("/usr/bin/bwrap", os.X_OK):
        print("skipped: needs root and /usr/bin/bwrap")
        sys.exit(77)
    s = tp.Server()
    made = []
    try:
        # --- create v2: server-side defaults ---------------------------------------------------
        st, _, j = s.json("POST", "/v2/sandboxes", {"templateID": "base"})
        check(st == 201, "v2 create with only templateID: 201 (got %d %r)" % (st, j))
        sid = j["sandboxID"]
        made.append(sid)
        check(bool(j.get("envdAccessToken")), "v2 create always returns envdAccessToken")
        check(j.get("envdVersion") and j.get("clientID"), "v2 answer has envdVersion and clientID")
        left, d = ttl(s, sid)
        check(290 < left <= 300, "v2 default timeout is 300 s (endAt - now = %.1f)" % left)
        check(d["lifecycle"]["onTimeout"] == "kill", "no autoPause: onTimeout kill")
        code, out, _ = tp.run_in(s, sid, "echo v2", token=j["envdAccessToken"])
        check(code == 0 and out.strip() == "v2", "a command runs in a v2 sandbox with its token")
        try:
            tp.run_in(s, sid, "true")
            check(False, "envd of a v2 sandbox refuses a request without the access token")
        except AssertionError as e:
            check("401" in str(e), "envd of a v2 sandbox refuses a request without the token: %s" % e)

        st, _, j = s.json("POST", "/v2/sandboxes", {"templateID": "base", "secure": False})
        check(st == 201 and j.get("envdAccessToken"), "v2 ignores secure:false: still secured")
        made.append(j["sandboxID"])

        st, _, j = s.json("POST", "/sandboxes", {"templateID": "base"})
        check(st == 201 and "envdAccessToken" not in j, "v1 create without secure: no token")
        made.append(j["sandboxID"])
        left, _ = ttl(s, j["sandboxID"])
        check(5 < left <= 15, "v1 default timeout stays 15 s (%.1f)" % left)

        # --- limits and validation -------------------------------------------------------------
        for path in ("/sandboxes", "/v2/sandboxes"):
            st, _, j = s.json("POST", path, {"templateID": "base", "timeout": 86401})
            check(st == 400 and "cannot be greater than 24 hours" in j.get("message", ""),
                  "%s timeout 86401: 400 'Timeout cannot be greater than 24 hours' (%d %r)" % (path, st, j))
            st, _, j = s.json("POST", path, {"templateID": "base", "timeout": 0})
            check(st == 400 and "greater than 0" in j.get("message", ""), "%s timeout 0: 400" % path)
        bad = [({"autoPauseMemory": False}, "autoPauseMemory without autoPause"),
               ({"autoPause": True, "autoPauseMemory": False, "autoResume": {"enabled": True}},
                "autoPauseMemory false with autoResume"),
               ({"autoResume": True}, "autoResume not an object"),
               ({"autoResume": {"enabled": "yes"}}, "autoResume.enabled not a boolean"),
               ({"autoPause": "yes"}, "autoPause not a boolean")]
        for extra, what in bad:
            body = {"templateID": "base"}
            body.update(extra)
            st, _, j = s.json("POST", "/v2/sandboxes", body)
            check(st == 400, "%s: 400 (got %d %r)" % (what, st, j))
        st, _, j = s.json("POST", "/v2/sandboxes",
                          {"templateID": "base", "autoPause": True, "autoResume": {"enabled": True}})
        check(st == 201, "autoPause with autoResume: 201")
        made.append(j["sandboxID"])
        st, _, j = s.json("POST", "/sandboxes/%s/timeout" % sid, {"timeout": 90000})
        check(st == 400 and "24 hours" in j.get("message", ""), "POST /timeout 90000: 400, not clamped")

        # --- connect v2 --------------------------------------------------------------------------
        st, _, j = s.json("POST", "/v2/sandboxes/%s/connect" % sid)
        check(st == 200 and j["sandboxID"] == sid and j.get("envdAccessToken"),
              "v2 connect without a body on a running sandbox: 200 with its token (%d)" % st)
        st, _, _ = s.json("POST", "/v2/sandboxes/%s/connect" % sid, {"timeout": 10})
        left, _ = ttl(s, sid)
        check(st == 200 and left > 250, "connect timeout 10 never shortens the TTL (%.1f s left)" % left)
        st, _, _ = s.json("POST", "/v2/sandboxes/%s/connect" % sid, {"timeout": 1000})
        left, _ = ttl(s, sid)
        check(st == 200 and 990 < left <= 1000, "connect timeout 1000 extends the TTL (%.1f)" % left)
        for body, what in (({"timeout": 0}, "timeout 0"), ({"timeout": 90000}, "timeout 90000"),
                           ({"timeout": "x"}, "timeout a string"), ({"memory": "no"}, "memory a string")):
            st, _, j = s.json("POST", "/v2/sandboxes/%s/connect" % sid, body)
            check(st == 400, "v2 connect %s: 400 (got %d %r)" % (what, st, j))
        st, _, _ = s.json("POST", "/v2/sandboxes/iunknown0000000000000/connect", {})
        check(st == 404, "v2 connect of an unknown sandbox: 404 (got %d)" % st)
        st, _, _ = s.json("POST", "/sandboxes/%s/pause" % sid)
        check(st == 204, "pause: 204")
        st, _, j = s.json("POST", "/v2/sandboxes/%s/connect" % sid, {})
        check(st == 201, "v2 connect of a paused sandbox resumes it: 201 (got %d %r)" % (st, j))
        left, _ = ttl(s, sid)
        check(290 < left <= 300, "a resumed sandbox gets the default 300 s (%.1f)" % left)
        code, out, _ = tp.run_in(s, sid, "echo back", token=j["envdAccessToken"])
        check(code == 0 and out.strip() == "back", "the resumed sandbox runs commands")

        # --- list v2: startedAfter, X-Total-Running ---------------------------------------------
        def listed(query):
            st, hd, j = s.json("GET", "/v2/sandboxes?" + query)
            return st, hd, [x["sandboxID"] for x in j] if st == 200 else j
        past = (datetime.now(timezone.utc) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        future = (datetime.now(timezone.utc) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S+00:00")
        st, hd, ids = listed("startedAfter=" + urllib.parse.quote(past))
        check(st == 200 and set(made) <= set(ids), "startedAfter an hour ago lists every sandbox")
        check(hd.get("x-total-running") == str(len(made)),
              "X-Total-Running counts the running matches (%r, %d made)" % (hd.get("x-total-running"), len(made)))
        st, _, ids = listed("startedAfter=" + urllib.parse.quote(future))
        check(st == 200 and ids == [], "startedAfter in the future lists none (%r)" % (ids,))
        st, _, ids = listed("state=paused")
        st2, hd2, _ = listed("state=paused")
        check(st == 200 and "x-total-running" not in hd2, "no X-Total-Running without running requested")
        st, _, j = listed("startedAfter=yesterday")
        check(st == 400, "startedAfter not RFC3339: 400 (got %d)" % st)
    finally:
        for sid in made:
            s.request("DELETE", "/sandboxes/" + sid)
        rc, _, err = s.stop()
        check(rc == 0, "serve exits 0 (%r)" % rc)
    print("%d failure(s)" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
