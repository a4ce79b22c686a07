#!/usr/bin/env python3
"""`abxlua serve --flavor opensandbox`: OpenSandbox's lifecycle API and ingress (issue 12 part 3).

Usage: test_flavor_opensandbox.py [path/to/abxlua]

Every route and status of platform/opensandbox/opensandbox.h on real sandboxes: the credential refusal, X-Request-ID,
E2B's routes 404, bad bodies 400 naming the field, create 202 Pending -> Running, the entrypoint
and resourceLimits honoured, the data plane through the ingress (URI mode and the
OpenSandbox-Ingress-To header, envd's own port; unknown port, sandbox and route), endpoints with
and without secureAccess, list filters and pagination, renew-expiration, pause/resume states,
delete, snapshots (create, get, list, delete, restore from snapshotId and their refusals), the egress
sidecar's policy API on port 18080 (GET/POST/PATCH/DELETE /policy, their effect on traffic, their
refusals) and create's networkPolicy, and the
expiry of a running and of a paused sandbox. Sources: opensandbox-group/OpenSandbox specs/
sandbox-lifecycle.yml and the OpenSandbox server and ingress named in platform/opensandbox/opensandbox.h.
Exit 1 when a check failed, 77 when skipped.
"""
import base64
import http.client
import json
import os
import re
import struct
import sys
import time
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_platform as tp  # noqa: E402

failures = []
ENVD = 49983
GOOD = {"image": {"uri": "base"}, "entrypoint": ["tail", "-f", "/dev/null"],
        "resourceLimits": {"cpu": "500m", "memory": "512Mi"}, "timeout": 600}


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


class OS:
    def __init__(self, s):
        self.s = s

    def req(self, method, path, body=None, key=True, headers=None):
        h = dict(headers or {})
        if key is True:
            h["OPEN-SANDBOX-API-KEY"] = self.s.key
        elif key:
            h["OPEN-SANDBOX-API-KEY"] = key
        return self.s.json(method, path, body, key=False, headers=h)

    def create(self, **fields):
        body = dict(GOOD)
        body.update(fields)
        return self.req("POST", "/v1/sandboxes", body)

    def state(self, sid):
        st, _, j = self.req("GET", "/v1/sandboxes/" + sid)
        return j["status"]["state"] if st == 200 else st

    def wait(self, sid, want, passing, secs=30):
        """Poll until state `want`; every state seen on the way must be in `passing`."""
        seen = []
        deadline = time.time() + secs
        while time.time() < deadline:
            st = self.state(sid)
            if not seen or seen[-1] != st:
                seen.append(st)
            if st == want:
                return all(x in passing or x == want for x in seen), seen
            time.sleep(0.1)
        return False, seen


def ts(s):
    return datetime.strptime(s.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")


def iso(dt):
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_in(s, sid, cmd, token=None):
    """bash -c cmd through envd's process.Process/Start, routed by OpenSandbox-Ingress-To."""
    msg = json.dumps({"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}}).encode()
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
    c.request("POST", "/process.Process/Start", b"\x00" + struct.pack(">I", len(msg)) + msg, {
        "Content-Type": "application/connect+json", "Connect-Protocol-Version": "1",
        "OpenSandbox-Ingress-To": "%s-%d" % (sid, ENVD),
        "Authorization": "Basic " + base64.b64encode(b"root:").decode(),
        **({"X-Access-Token": token} if token else {})})
    r = c.getresponse()
    data = r.read()
    c.close()
    if r.status != 200:
        return r.status, None, data.decode(errors="replace")
    out, code = b"", None
    while len(data) >= 5:
        flags, n = struct.unpack(">BI", data[:5])
        ev = json.loads(data[5:5 + n] or b"{}").get("event", {})
        data = data[5 + n:]
        if "data" in ev:
            out += base64.b64decode(ev["data"].get("stdout", ""))
        if "end" in ev:
            code = ev["end"].get("exitCode", 0)
    return r.status, code, out.decode(errors="replace")


def t_auth_and_shape(o):
    s = o.s
    st, hd, j = o.req("GET", "/v1/sandboxes", key=False)
    check(st == 401 and j.get("code") == "MISSING_API_KEY" and "OPEN-SANDBOX-API-KEY" in j.get("message", "")
          and re.match(r"^[0-9a-f]{32}$", hd.get("x-request-id", "")),
          "no key -> 401 MISSING_API_KEY with X-Request-ID (%d %r %r)" % (st, j, hd.get("x-request-id")))
    st, _, j = o.req("GET", "/v1/sandboxes", key="e2b_" + "0" * 40)
    check(st == 401 and j == {"code": "INVALID_API_KEY", "message": "Authentication credentials are "
                              "invalid. Check your API key and try again."}, "wrong key -> 401 INVALID_API_KEY (%d %r)" % (st, j))
    st, _, j = s.json("GET", "/v1/sandboxes")  # E2B's X-API-Key is not OpenSandbox's header
    check(st == 401 and j.get("code") == "MISSING_API_KEY", "X-API-Key alone -> 401 (%d %r)" % (st, j))
    st, hd, _ = o.req("GET", "/v1/sandboxes", headers={"X-Request-ID": "  trace-42 "})
    check(st == 200 and hd.get("x-request-id") == "trace-42", "X-Request-ID echoed, trimmed (%r)" % hd.get("x-request-id"))
    st, _, j = s.json("GET", "/health", key=False)
    check(st == 200 and j == {"status": "healthy"}, "GET /health without a key (%d %r)" % (st, j))
    for m, p in [("GET", "/v2/sandboxes"), ("POST", "/sandboxes"), ("GET", "/sandboxes"),
                 ("GET", "/templates"), ("GET", "/v1/snapshots/a/b"), ("GET", "/v1/snapshotsx")]:
        st, hd, j = o.req(m, p, {} if m == "POST" else None)
        check(st == 404 and j.get("code") == "NOT_FOUND" and "x-request-id" in hd,
              "%s %s -> 404 NOT_FOUND (%d %r)" % (m, p, st, j))
    st, _, j = o.req("PUT", "/v1/sandboxes")
    check(st == 405 and j.get("code") == "METHOD_NOT_ALLOWED", "PUT /v1/sandboxes -> 405 (%d %r)" % (st, j))


def t_bad_bodies(o):
    def bad(fields, drop, code, needle, what):
        body = dict(GOOD)
        body.update(fields)
        for k in drop:
            body.pop(k)
        st, _, j = o.req("POST", "/v1/sandboxes", body)
        ok = st == 400 and isinstance(j, dict) and j.get("code") == code and needle in j.get("message", "")
        check(ok, "bad body: %s -> 400 %s naming %r (%d %r)" % (what, code, needle, st, j))
    inv = "SANDBOX::INVALID_PARAMETER"
    bad({}, ["entrypoint"], inv, "Entrypoint is required", "no entrypoint")
    bad({"entrypoint": []}, [], "DOCKER::INVALID_ENTRYPOINT", "at least one command", "empty entrypoint")
    bad({"entrypoint": ["a", 1]}, [], inv, "entrypoint[1]", "entrypoint not strings")
    bad({}, ["image"], inv, "Exactly one of image or snapshotId", "no image")
    # an image that is no local template: the real Docker runtime's pull failure (500)
    st, _, j = o.req("POST", "/v1/sandboxes", dict(GOOD, image={"uri": "nosuch"}))
    check(st == 500 and isinstance(j, dict) and j.get("code") == "DOCKER::SANDBOX_IMAGE_PULL_FAILED"
          and "known: base" in j.get("message", ""),
          "unknown image.uri -> 500 DOCKER::SANDBOX_IMAGE_PULL_FAILED naming the known ones (%d %r)" % (st, j))
    bad({"image": {"uri": "base", "auth": {"username": "u", "password": "p"}}}, [],
        "SANDBOX::API_NOT_SUPPORTED", "image.auth", "image.auth")
    bad({"image": {"uri": "base", "tag": "x"}}, [], inv, "image.tag", "unknown image field")
    bad({"foo": 1}, [], inv, "unknown field 'foo'", "unknown field")
    bad({"timeout": 59}, [], inv, "'timeout'", "timeout below 60")
    bad({"timeout": "60"}, [], inv, "'timeout'", "timeout a string")
    bad({"timeout": 86401}, [], inv, "exceeds configured maximum of 86400s", "timeout above the cap")
    bad({}, ["resourceLimits"], inv, "resourceLimits is required", "no resourceLimits")
    bad({"resourceLimits": {"cpu": "500m", "memory": "512Mi", "gpu": "1"}}, [], inv,
        "resourceLimits.gpu", "gpu")
    bad({"resourceLimits": {"cpu": "fast"}}, [], inv, "resourceLimits.cpu", "cpu malformed")
    bad({"resourceLimits": {"cpu": "500m", "memory": "500M"}}, [], inv, "resourceLimits.memory", "memory not MiB")
    bad({"resourceLimits": {"memory": 512}}, [], inv, "resourceLimits.memory", "memory a number")
    bad({"env": {"A": 1}}, [], inv, "env.A", "env value not a string")
    bad({"metadata": {"opensandbox.io/x": "y"}}, [], "SANDBOX::INVALID_METADATA_LABEL", "reserved prefix",
        "reserved metadata key")
    bad({"metadata": {"k": "has space"}}, [], "SANDBOX::INVALID_METADATA_LABEL", "has space", "metadata value")
    bad({"secureAccess": "yes"}, [], inv, "secureAccess", "secureAccess not a boolean")
    bad({"platform": {"os": "windows", "arch": "amd64"}}, [], inv, "platform.os", "platform.os")
    bad({"snapshotId": "snap_1"}, [], inv, "Exactly one of image or snapshotId", "image and snapshotId")
    bad({"snapshotId": 7}, ["image"], inv, "snapshotId", "snapshotId not a string")
    st, _, j = o.req("POST", "/v1/sandboxes", dict({k: v for k, v in GOOD.items() if k != "image"}, snapshotId="snap_1"))
    check(st == 404 and j == {"code": "SNAPSHOT::NOT_FOUND", "message": "Snapshot snap_1 not found"},
          "create from an unknown snapshotId -> 404 SNAPSHOT::NOT_FOUND (%d %r)" % (st, j))
    for f in ("volumes", "credentialProxy"):
        bad({f: [{"name": "v"}] if f == "volumes" else {"enabled": True}}, [], "SANDBOX::API_NOT_SUPPORTED", f, f)
    bad({"networkPolicy": {"defaultAction": "maybe"}}, [], inv, "defaultAction", "networkPolicy.defaultAction")
    bad({"networkPolicy": {"egress": [{"action": "allow"}]}}, [], inv, "target cannot be empty", "rule without target")
    bad({"networkPolicy": {"egress": [{"action": "allow", "target": "x.org", "port": 1}]}}, [], inv,
        "unknown rule field port", "rule field")
    bad({"extensions": {"poolRef": "p"}}, [], "SANDBOX::API_NOT_SUPPORTED", "extensions", "extensions")
    st, _, j = o.req("POST", "/v1/sandboxes", "{not json")
    check(st == 400 and j.get("code") == inv, "body not JSON -> 400 (%d %r)" % (st, j))
    st, _, j = o.req("GET", "/v1/sandboxes")
    check(st == 200 and j["pagination"]["totalItems"] == 0, "no refused create left a sandbox (%r)" % (j,))


def t_create_and_data_plane(o, ctx):
    s = o.s
    st, hd, j = o.create(metadata={"suite": "os", "n": "1"}, env={"OS_ENV": "from-create"}, secureAccess=True,
                         entrypoint=["python3", "-m", "http.server", "8080", "--bind", "127.0.0.1"])
    sid = j.get("id", "") if isinstance(j, dict) else ""
    check(st == 202 and j["status"]["state"] == "Pending" and hd.get("location") == "/v1/sandboxes/" + sid
          and "image" not in j and j["entrypoint"][0] == "python3" and j["metadata"] == {"suite": "os", "n": "1"}
          and "x-request-id" in hd, "create -> 202 Pending, Location, no image (%d %r %r)" % (st, hd.get("location"), j))
    if st != 202:
        return None
    created = ts(j["createdAt"])
    check(abs((ts(j["expiresAt"]) - created).total_seconds() - 600) < 0.01, "expiresAt = createdAt + timeout")
    ok, seen = o.wait(sid, "Running", ("Pending",))
    check(ok, "GET polls Pending -> Running (%r)" % (seen,))
    st, _, g = o.req("GET", "/v1/sandboxes/" + sid)
    check(st == 200 and g["image"] == {"uri": "base"} and g["status"]["reason"] and "lastTransitionAt" in g["status"]
          and g["createdAt"] == j["createdAt"], "GET has image, status, createdAt (%r)" % (g,))
    code = None
    for _ in range(50):  # the entrypoint (a web server) takes a moment
        code = s.request("GET", "/sandboxes/%s/port/8080/" % sid, key=False)[0]
        if code == 200:
            break
        time.sleep(0.2)
    check(code == 200, "the entrypoint runs: its server answers through /sandboxes/<id>/port/8080/ (%r)" % code)
    st, hd, body = s.request("GET", "/sandboxes/%s/port/%d/health" % (sid, ENVD), key=False)
    check(st == 204, "envd's /health through /sandboxes/<id>/port/49983/health -> 204 (%d %r)" % (st, body))
    st, _, body = s.request("GET", "/health", key=False, headers={"OpenSandbox-Ingress-To": "%s-%d" % (sid, ENVD)})
    check(st == 204, "header OpenSandbox-Ingress-To: <id>-49983 -> envd /health 204 (%d %r)" % (st, body))
    token = ctx["token"] = None
    st, _, e = o.req("GET", "/v1/sandboxes/%s/endpoints/44772" % sid)
    token = (e.get("headers") or {}).get("X-EXECD-ACCESS-TOKEN") if st == 200 else None
    check(st == 200 and e["endpoint"] == "127.0.0.1:%d/sandboxes/%s/port/44772" % (s.port, sid)
          and re.match(r"^[0-9a-f]{32}$", token or ""), "endpoints/44772 of a secureAccess sandbox: endpoint and X-EXECD-ACCESS-TOKEN (%d %r)" % (st, e))
    st, _, e = o.req("GET", "/v1/sandboxes/%s/endpoints/8080" % sid)
    check(st == 200 and e == {"endpoint": "127.0.0.1:%d/sandboxes/%s/port/8080" % (s.port, sid)},
          "endpoints/8080: no headers (%d %r)" % (st, e))
    hst, code, out = run_in(s, sid, "echo $OS_ENV; cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us "
                            "/sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/cpu/cpu.shares 2>/dev/null",
                            token=token)
    lines = out.split()
    check(hst == 200 and code == 0 and lines[:1] == ["from-create"], "env reaches the sandbox; envd takes the access token (%r %r %r)" % (hst, code, out))
    if len(lines) == 5:
        check(int(lines[1]) * 2 == int(lines[2]) and int(lines[3]) == 512 << 20,
              "resourceLimits 500m / 512Mi are the cgroup limits (%r)" % lines[1:])
        check(lines[4] == "512", "500m weighs half a CPU: cpu.shares 512 (cgroup.h Weights), got %r" % lines[4])
    else:
        print("skip resourceLimits in the cgroups: no cpu/memory hierarchy in the sandbox (%r)" % lines)
    hst, _, _ = run_in(s, sid, "true")
    check(hst == 401, "secureAccess: envd without the token -> 401 (%r)" % hst)
    st, hd, body = s.request("GET", "/sandboxes/%s/port/8081/x" % sid, key=False)
    check(st == 502 and body == b"", "port nothing listens on -> 502, empty body, as Go's ReverseProxy (%d %r)" % (st, body))
    ghost = "i" + "z" * 20
    st, hd, body = s.request("GET", "/sandboxes/%s/port/%d/health" % (ghost, ENVD), key=False)
    check(st == 404 and body == b"OpenSandbox Ingress: sandbox not found: %s\n" % ghost.encode()
          and hd.get("content-type", "").startswith("text/plain"), "unknown sandbox -> 404 OpenSandbox Ingress text (%d %r)" % (st, body))
    st, _, body = s.request("GET", "/sandboxes/%s/port/99999/x" % sid, key=False)
    check(st == 400 and body.startswith(b"OpenSandbox Ingress: invalid ingress route"), "bad port in the URI -> 400 (%d %r)" % (st, body))
    st, _, body = s.request("GET", "/", key=False, headers={"OpenSandbox-Ingress-To": "noport"})
    check(st == 400 and b"invalid ingress route" in body, "malformed OpenSandbox-Ingress-To -> 400 (%d %r)" % (st, body))
    st, _, body = s.request("GET", "/health", key=False, headers={"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": str(ENVD)})
    check(st == 200 and json.loads(body) == {"status": "healthy"}, "E2B's header routing is not served (%d %r)" % (st, body))
    for port, code, what in [("0", "DOCKER::INVALID_PORT", "port 0"), ("x", "SANDBOX::INVALID_PARAMETER", "port x")]:
        st, _, e = o.req("GET", "/v1/sandboxes/%s/endpoints/%s" % (sid, port))
        check(st == 400 and e.get("code") == code, "endpoints/%s -> 400 %s (%d %r)" % (port, code, st, e))
    st, _, e = o.req("GET", "/v1/sandboxes/%s/endpoints/8080?expires=9999999999" % sid)
    check(st == 400 and e.get("code") == "SANDBOX::API_NOT_SUPPORTED", "endpoints ?expires -> 400 API_NOT_SUPPORTED (%d %r)" % (st, e))
    st, _, e = o.req("GET", "/v1/sandboxes/%s/endpoints/8080" % ghost)
    check(st == 404 and e == {"code": "DOCKER::SANDBOX_NOT_FOUND", "message": "Sandbox %s not found." % ghost},
          "endpoints of an unknown sandbox -> 404 (%d %r)" % (st, e))
    return sid


def t_failed(o):
    st, _, j = o.create(entrypoint=["no-such-program-xyz", "arg"], metadata={"suite": "failed"})
    sid = j.get("id") if isinstance(j, dict) else None
    check(st == 202 and j["status"]["state"] == "Pending", "create with a missing program -> 202 Pending (%d %r)" % (st, j))
    if not sid:
        return
    ok, seen = o.wait(sid, "Failed", ("Pending",))
    st, _, g = o.req("GET", "/v1/sandboxes/" + sid)
    check(ok and g["status"]["reason"] == "PROVISIONING_ERROR" and "no-such-program-xyz: command not found"
          in g["status"]["message"], "it becomes Failed, PROVISIONING_ERROR naming the program (%r %r)" % (seen, g.get("status")))
    st, _, j = o.req("GET", "/v1/sandboxes?state=failed&metadata=suite%3Dfailed")
    check(st == 200 and [x["id"] for x in j["items"]] == [sid], "state=failed lists it (%r)" % (j,))
    st, _, j = o.req("POST", "/v1/sandboxes/%s/pause" % sid)
    check(st == 409, "pause of a Failed sandbox -> 409 (%d %r)" % (st, j))
    st, _, _ = o.req("DELETE", "/v1/sandboxes/" + sid)
    check(st == 204 and o.state(sid) == 404, "delete of a Failed sandbox -> 204, then 404 (%d)" % st)


def t_list(o, first):
    ids = [first]
    for n in ("2", "3"):
        st, _, j = o.create(metadata={"suite": "os", "n": n})
        check(st == 202, "create %s -> 202 (%d)" % (n, st))
        ids.append(j["id"])
        time.sleep(0.01)  # distinct createdAt: the list is newest first
    for sid in ids[1:]:
        check(o.wait(sid, "Running", ("Pending",))[0], "sandbox %s Running" % sid)
    q = "/v1/sandboxes?metadata=suite%3Dos&pageSize=2"
    st, _, j = o.req("GET", q)
    check(st == 200 and [x["id"] for x in j["items"]] == [ids[2], ids[1]] and j["pagination"] ==
          {"page": 1, "pageSize": 2, "totalItems": 3, "totalPages": 2, "hasNextPage": True},
          "list page 1 of 2, newest first (%r)" % (j,))
    st, _, j = o.req("GET", q + "&page=2")
    check(st == 200 and [x["id"] for x in j["items"]] == [ids[0]] and j["pagination"]["hasNextPage"] is False
          and j["pagination"]["page"] == 2, "list page 2 (%r)" % (j.get("pagination"),))
    st, _, j = o.req("GET", "/v1/sandboxes?metadata=suite%3Dos%26n%3D2")
    check(st == 200 and [x["id"] for x in j["items"]] == [ids[1]], "metadata filter, two keys (AND) (%r)" % (j,))
    st, _, j = o.req("GET", "/v1/sandboxes?state=running&state=Paused&metadata=suite%3Dos")
    check(st == 200 and j["pagination"]["totalItems"] == 3, "state filter, OR and case-insensitive (%r)" % (j.get("pagination"),))
    st, _, j = o.req("GET", "/v1/sandboxes?state=Paused&metadata=suite%3Dos")
    check(st == 200 and j["items"] == [] and j["pagination"]["totalPages"] == 0, "state=Paused: none of them yet (%r)" % (j,))
    for qs, what in [("pageSize=0", "pageSize 0"), ("pageSize=201", "pageSize 201"), ("page=0", "page 0"), ("page=x", "page x")]:
        st, _, j = o.req("GET", "/v1/sandboxes?" + qs)
        check(st == 400 and j.get("code") == "SANDBOX::INVALID_PARAMETER" and qs.split("=")[0] in j.get("message", ""),
              "list %s -> 400 naming it (%d %r)" % (what, st, j))
    st, _, j = o.req("GET", "/v1/sandboxes?metadata=broken")
    check(st == 400 and j.get("code") == "INVALID_METADATA_FORMAT", "metadata without '=' -> 400 (%d %r)" % (st, j))
    return ids


def t_renew(o, sid):
    path = "/v1/sandboxes/%s/renew-expiration" % sid
    st, _, cur = o.req("GET", "/v1/sandboxes/" + sid)
    new = iso(ts(cur["expiresAt"]) + timedelta(hours=1))
    st, _, j = o.req("POST", path, {"expiresAt": new})
    check(st == 200 and j == {"expiresAt": new.replace("Z", ".000Z")}, "renew -> 200 {expiresAt} (%d %r)" % (st, j))
    st, _, g = o.req("GET", "/v1/sandboxes/" + sid)
    check(g.get("expiresAt") == new.replace("Z", ".000Z"), "GET shows the renewed expiresAt (%r)" % g.get("expiresAt"))
    st, _, j = o.req("POST", path, {"expiresAt": iso(datetime.now(timezone.utc) - timedelta(minutes=1))})
    check(st == 400 and j == {"code": "DOCKER::INVALID_EXPIRATION", "message": "New expiration time must be in the future."},
          "renew into the past -> 400 (%d %r)" % (st, j))
    st, _, j = o.req("POST", path, {"expiresAt": iso(datetime.now(timezone.utc) + timedelta(minutes=5))})
    check(st == 400 and j.get("code") == "DOCKER::EXPIRATION_NOT_EXTENDED", "renew before the current expiresAt -> 400 (%d %r)" % (st, j))
    for body, what in [({"expiresAt": "tomorrow"}, "malformed"), ({}, "missing"), ({"expiresAt": new, "x": 1}, "extra field")]:
        st, _, j = o.req("POST", path, body)
        check(st == 400 and j.get("code") == "SANDBOX::INVALID_PARAMETER" and "expiresAt" in j.get("message", ""),
              "renew %s -> 400 naming expiresAt (%d %r)" % (what, st, j))
    st, _, j = o.req("POST", "/v1/sandboxes/%s/renew-expiration" % ("i" + "q" * 20), {"expiresAt": new})
    check(st == 404 and j.get("code") == "DOCKER::SANDBOX_NOT_FOUND", "renew unknown -> 404 (%d %r)" % (st, j))


def t_snapshots(o, sid, paused):
    """Snapshots (platform/opensandbox/snapshot.c) of running sandbox `sid`; `paused` is a paused one."""
    s = o.s
    hst, code, _ = run_in(s, sid, "echo snap-v1 > /etc/abx-snap")
    check(hst == 200 and code == 0, "write a file before the snapshot (%r %r)" % (hst, code))
    st, hd, j = o.req("POST", "/v1/sandboxes/%s/snapshots" % sid, {"name": "first snap"})
    snap = j.get("id", "") if isinstance(j, dict) else ""
    check(st == 202 and re.match(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$", snap)
          and hd.get("location") == "/v1/snapshots/" + snap and j["sandboxId"] == sid and j["name"] == "first snap"
          and j["status"]["state"] == "Ready" and "createdAt" in j,
          "snapshot -> 202 Snapshot (uuid4 id, Location, sandboxId, name, Ready) (%d %r)" % (st, j))
    if st != 202:
        return
    run_in(s, sid, "echo snap-v2 > /etc/abx-snap")  # after the snapshot: not in it
    st, _, g = o.req("GET", "/v1/snapshots/" + snap)
    check(st == 200 and g == j, "GET /v1/snapshots/{id} -> the Snapshot (%d %r)" % (st, g))
    st, _, un = o.req("POST", "/v1/sandboxes/%s/snapshots" % sid)  # no body: {} (unnamed)
    check(st == 202 and "name" not in un, "snapshot without a body -> 202, no name (%d %r)" % (st, un))
    st, _, lj = o.req("GET", "/v1/snapshots?sandboxId=%s&pageSize=1" % sid)
    check(st == 200 and [x["id"] for x in lj["items"]] == [un.get("id")] and lj["pagination"]["totalItems"] == 2
          and lj["pagination"]["hasNextPage"] is True, "list ?sandboxId&pageSize=1: newest first, hasNextPage (%r)" % (lj,))
    st, _, lj = o.req("GET", "/v1/snapshots?sandboxId=%s&page=2&pageSize=1&state=Ready" % sid)
    check(st == 200 and [x["id"] for x in lj["items"]] == [snap] and lj["pagination"]["hasNextPage"] is False,
          "list page 2, state=Ready (%r)" % (lj,))
    st, _, lj = o.req("GET", "/v1/snapshots?state=Creating")
    check(st == 200 and lj["items"] == [], "state=Creating lists none (%r)" % (lj,))
    for q, what in [("state=Bogus", "state"), ("pageSize=201", "pageSize"), ("page=0", "page")]:
        st, _, e = o.req("GET", "/v1/snapshots?" + q)
        check(st == 400 and e.get("code") == "SANDBOX::INVALID_PARAMETER" and what in e.get("message", ""),
              "list ?%s -> 400 naming %s (%d %r)" % (q, what, st, e))
    for body, what in [({"nam": "x"}, "unknown field 'nam'"), ({"name": ""}, "'name'"), ([1], "JSON object")]:
        st, _, e = o.req("POST", "/v1/sandboxes/%s/snapshots" % sid, body)
        check(st == 400 and e.get("code") == "SANDBOX::INVALID_PARAMETER" and what in e.get("message", ""),
              "snapshot body %r -> 400 naming %s (%d %r)" % (body, what, st, e))
    st, _, e = o.req("POST", "/v1/sandboxes/%s/snapshots" % ("i" + "q" * 20))
    check(st == 404 and e.get("code") == "DOCKER::SANDBOX_NOT_FOUND", "snapshot of an unknown sandbox -> 404 (%d %r)" % (st, e))
    st, _, e = o.req("POST", "/v1/sandboxes/%s/snapshots" % paused)
    check(st == 409 and e == {"code": "SNAPSHOT::INVALID_SOURCE_STATE", "message": "Snapshot can only be created from a Running sandbox."},
          "snapshot of a paused sandbox -> 409 (%d %r)" % (st, e))
    body = {k: v for k, v in GOOD.items() if k not in ("image", "entrypoint")}
    st, _, c = o.req("POST", "/v1/sandboxes", dict(body, snapshotId=snap, metadata={"from": "snap"}))
    clone = c.get("id", "") if isinstance(c, dict) else ""
    check(st == 202 and "snapshotId" not in c and c["entrypoint"] == ["tail", "-f", "/dev/null"],
          "create from snapshotId without entrypoint -> 202, the default restore entrypoint (%d %r)" % (st, c))
    check(o.wait(clone, "Running", ("Pending",))[0], "the restored sandbox runs")
    st, _, g = o.req("GET", "/v1/sandboxes/" + clone)
    check(g.get("snapshotId") == snap and "image" not in g, "GET of the restored sandbox: snapshotId, no image (%r)" % (g,))
    hst, code, out = run_in(s, clone, "cat /etc/abx-snap")
    check(code == 0 and out == "snap-v1\n", "the restored sandbox has the file as it was at the snapshot (%r %r)" % (code, out))
    st, _, e = o.req("DELETE", "/v1/snapshots/" + snap)
    check(st == 409 and e.get("code") == "SNAPSHOT::INVALID_STATE", "delete a snapshot in use -> 409 (%d %r)" % (st, e))
    o.req("DELETE", "/v1/sandboxes/" + clone)
    for sn in (snap, un.get("id")):
        st, hd, body = o.req("DELETE", "/v1/snapshots/" + sn)
        check(st == 204 and body is None and "x-request-id" in hd, "delete snapshot -> 204 (%d %r)" % (st, body))
    st, _, e = o.req("DELETE", "/v1/snapshots/" + snap)
    check(st == 404 and e == {"code": "SNAPSHOT::NOT_FOUND", "message": "Snapshot %s not found" % snap},
          "delete twice -> 404 SNAPSHOT::NOT_FOUND (%d %r)" % (st, e))
    st, _, e = o.req("GET", "/v1/snapshots/" + snap)
    check(st == 404 and e.get("code") == "SNAPSHOT::NOT_FOUND", "GET a deleted snapshot -> 404 (%d %r)" % (st, e))
    st, _, e = o.req("PUT", "/v1/snapshots/" + snap)
    check(st == 405, "PUT /v1/snapshots/{id} -> 405 (%d)" % st)


PROBE = ("import socket, sys\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.settimeout(3)\n"
         "try:\n    s.connect((sys.argv[1], 9)); s.send(b'x'); s.recv(1); print('answered')\n"
         "except ConnectionRefusedError:\n    print('reached')\nexcept Exception as e:\n"
         "    print('blocked', type(e).__name__)\n")


def egress(o, sid, method="GET", body=None, header=False, rest="/policy"):
    """A request to the egress sidecar (port 18080) through the ingress: URI mode or the header."""
    if header:
        return o.s.request(method, rest, body=None if body is None else json.dumps(body).encode(), key=False,
                           headers={"OpenSandbox-Ingress-To": "%s-18080" % sid, "Content-Type": "application/json"})
    return o.s.request(method, "/sandboxes/%s/port/18080%s" % (sid, rest),
                       body=None if body is None else json.dumps(body).encode(), key=False,
                       headers={"Content-Type": "application/json"})


def t_egress(o, sid, paused):
    """The egress sidecar's policy API (platform/opensandbox/egress.c) on running sandbox `sid`."""
    s = o.s
    st, _, g = o.req("GET", "/v1/sandboxes/" + sid)
    host = (g.get("abxNetwork") or {}).get("hostAddress")
    check(st == 200 and host, "GET has the abxNetwork extension with the link's host side (%r)" % (g,))
    run_in(s, sid, "cat > /tmp/probe.py <<'EOF'\n%sEOF" % PROBE)
    probe = lambda: run_in(s, sid, "python3 /tmp/probe.py %s" % host)[2].strip()  # noqa: E731
    st, hd, body = egress(o, sid)
    j = json.loads(body or b"{}")
    check(st == 200 and j == {"status": "ok", "mode": "allow_all", "enforcementMode": "dns+nft",
                              "policy": {"defaultAction": "allow", "egress": []}},
          "GET /policy of a sandbox made without networkPolicy: allow-all (%d %r)" % (st, body))
    check(probe() == "reached", "allow-all: the link's host side is reached")
    st, _, body = egress(o, sid, "POST", {"defaultAction": "ALLOW", "egress": [{"action": "deny", "target": host}]})
    check(st == 200 and json.loads(body) == {"status": "ok", "mode": "allow_with_rules", "enforcementMode": "dns+nft"},
          "POST /policy replaces the policy (%d %r)" % (st, body))
    got = probe()
    check(got.startswith("blocked"), "a deny rule for the host side blocks it (%r)" % got)
    st, _, body = egress(o, sid, "PATCH", [{"action": "allow", "target": host}, {"action": "deny", "target": host},
                                           {"action": "deny", "target": "example.org"}], header=True)
    st2, _, body2 = egress(o, sid, header=True)
    check(st == 200 and json.loads(body2)["policy"]["egress"] == [{"action": "allow", "target": host},
                                                                  {"action": "deny", "target": "example.org"}],
          "PATCH through the ingress header merges: incoming first, a repeated target's first wins (%d %r)" % (st, body2))
    check(probe() == "reached", "the patched allow rule lets traffic to the host side through")
    st, _, body = egress(o, sid, "DELETE", [host, "not-there.org"])
    st2, _, body2 = egress(o, sid)
    check(st == 200 and json.loads(body2)["policy"]["egress"] == [{"action": "deny", "target": "example.org"}],
          "DELETE removes the rules of the targets, ignores unknown ones (%d %r)" % (st, body2))
    st, _, body = egress(o, sid, "POST", {"defaultAction": "deny"})
    check(st == 200 and json.loads(body)["mode"] == "deny_all" and probe().startswith("blocked"),
          "defaultAction deny: nothing leaves (%d %r)" % (st, body))
    st, _, body = egress(o, sid, "POST")
    check(st == 200 and json.loads(egress(o, sid)[2])["policy"] == {"defaultAction": "deny", "egress": []},
          "POST without a body resets to deny-all (ParsePolicy) (%d %r)" % (st, body))
    for m, b, needle in [("PATCH", [], "empty array"), ("PATCH", {"a": 1}, "array of rules"),
                         ("POST", {"defaultAction": "maybe"}, "defaultAction"),
                         ("POST", {"egress": [{"action": "allow", "target": "10.0.0.0/33"}]}, "10.0.0.0/33"),
                         ("POST", {"egress": [{"action": "block", "target": "x.org"}]}, "unsupported action"),
                         ("DELETE", [], "invalid delete targets"), ("DELETE", [1], "invalid delete targets")]:
        st, hd, body = egress(o, sid, m, b)
        check(st == 400 and needle in body.decode() and body.endswith(b"\n")
              and hd.get("content-type", "").startswith("text/plain"),
              "%s /policy %r -> 400 text naming %s (%d %r)" % (m, b, needle, st, body))
    check(json.loads(egress(o, sid)[2])["policy"] == {"defaultAction": "deny", "egress": []},
          "a refused change leaves the policy alone")
    egress(o, sid, "POST", {"defaultAction": "allow"})
    check(probe() == "reached", "defaultAction allow again: the host side is reached")
    st, _, body = egress(o, sid, rest="/nope")
    check(st == 404 and body == b"404 page not found\n", "GET /nope on the sidecar -> 404 (%d %r)" % (st, body))
    st, _, body = egress(o, sid, "OPTIONS")
    check(st == 405, "OPTIONS /policy -> 405 (%d)" % st)
    st, _, body = egress(o, "i" + "q" * 20)
    check(st == 404 and b"sandbox not found" in body, "the sidecar of an unknown sandbox -> 404 (%d %r)" % (st, body))
    st, _, body = egress(o, paused)
    check(st == 503 and b"not ready" in body, "the sidecar of a paused sandbox -> 503 (%d %r)" % (st, body))
    st, _, c = o.create(networkPolicy={"defaultAction": "deny", "egress": [{"action": "allow", "target": "PyPI.org"}]})
    nid = c.get("id", "")
    check(st == 202 and o.wait(nid, "Running", ("Pending",))[0], "create with networkPolicy -> Running")
    st, _, body = egress(o, nid)
    check(st == 200 and json.loads(body)["policy"] == {"defaultAction": "deny",
                                                       "egress": [{"action": "allow", "target": "PyPI.org"}]},
          "the created sandbox's sidecar has the networkPolicy (%d %r)" % (st, body))
    o.req("DELETE", "/v1/sandboxes/" + nid)


def t_pause_resume(o, sid):
    s = o.s
    st, _, before = o.req("GET", "/v1/sandboxes/" + sid)
    st, hd, body = o.req("POST", "/v1/sandboxes/%s/pause" % sid)
    check(st == 202 and body is None and "x-request-id" in hd, "pause -> 202, no body (%d %r)" % (st, body))
    ok, seen = o.wait(sid, "Paused", ("Pausing", "Running"))
    check(ok, "pause: Pausing -> Paused (%r)" % (seen,))
    st, _, j = o.req("POST", "/v1/sandboxes/%s/pause" % sid)
    check(st == 409 and j == {"code": "DOCKER::SANDBOX_NOT_RUNNING", "message": "Sandbox is not in a running state."},
          "pause of a paused one -> 409 (%d %r)" % (st, j))
    st, _, body = s.request("GET", "/sandboxes/%s/port/%d/health" % (sid, ENVD), key=False)
    check(st == 503 and body == b"OpenSandbox Ingress: sandbox not ready: %s\n" % sid.encode(),
          "ingress to a paused sandbox -> 503 (%d %r)" % (st, body))
    st, _, j = o.req("GET", "/v1/sandboxes?state=Paused&metadata=suite%3Dos")
    check([x["id"] for x in j["items"]] == [sid], "state=Paused lists it (%r)" % (j,))
    st, _, _ = o.req("POST", "/v1/sandboxes/%s/resume" % sid)
    check(st == 202, "resume -> 202 (%d)" % st)
    ok, seen = o.wait(sid, "Running", ("Resuming", "Paused"))
    check(ok, "resume: Resuming -> Running (%r)" % (seen,))
    st, _, j = o.req("POST", "/v1/sandboxes/%s/resume" % sid)
    check(st == 409 and j == {"code": "DOCKER::SANDBOX_NOT_PAUSED", "message": "Sandbox is not in a paused state."},
          "resume of a running one -> 409 (%d %r)" % (st, j))
    st, _, after = o.req("GET", "/v1/sandboxes/" + sid)
    check(after.get("expiresAt") == before.get("expiresAt"), "pause/resume keep expiresAt (%r %r)" % (before.get("expiresAt"), after.get("expiresAt")))
    st, _, _ = s.request("GET", "/sandboxes/%s/port/%d/health" % (sid, ENVD), key=False)
    check(st == 204, "ingress works again after the resume (%d)" % st)


def t_delete(o, ids):
    for sid in ids:
        st, hd, body = o.req("DELETE", "/v1/sandboxes/" + sid)
        check(st == 204 and body is None and "x-request-id" in hd, "delete -> 204 (%d %r)" % (st, body))
    st, _, j = o.req("GET", "/v1/sandboxes/" + ids[0])
    check(st == 404 and j == {"code": "DOCKER::SANDBOX_NOT_FOUND", "message": "Sandbox %s not found." % ids[0]},
          "GET after delete -> 404 (%d %r)" % (st, j))
    st, _, j = o.req("DELETE", "/v1/sandboxes/" + ids[0])
    check(st == 404, "delete twice -> 404 (%d)" % st)
    st, _, j = o.create()
    sid = j["id"]
    st2, _, _ = o.req("DELETE", "/v1/sandboxes/" + sid)  # while Pending
    check(st == 202 and st2 == 204, "delete while Pending -> 204 (%d %d)" % (st, st2))
    time.sleep(3)
    st, _, j = o.req("GET", "/v1/sandboxes/" + sid)
    check(st == 404, "the Pending sandbox deleted is gone after its start (%d %r)" % (st, j))


def main():
    s = tp.start_for_checks("freezer")
    if isinstance(s, int):
        return s
    s.stop()
    s = tp.Server(args=("--flavor", "opensandbox"))
    o = OS(s)
    t0 = time.time()
    try:
        t_auth_and_shape(o)
        t_bad_bodies(o)
        # expiry: one running and one paused sandbox with the shortest timeout, checked at the end
        st, _, a = o.create(timeout=60, metadata={"ttl": "run"})
        st2, _, b = o.create(timeout=60, metadata={"ttl": "paused"})
        check(st == 202 and st2 == 202, "create the two 60 s sandboxes (%d %d)" % (st, st2))
        st, _, nj = o.create(timeout=None, metadata={"ttl": "never"})
        check("expiresAt" not in nj, "timeout null: no expiresAt (%r)" % (nj,))
        ttl_born = time.time()
        ctx = {}
        first = t_create_and_data_plane(o, ctx)
        for x in (a, b, nj):
            check(o.wait(x["id"], "Running", ("Pending",))[0], "sandbox %s Running" % x["id"])
        o.req("POST", "/v1/sandboxes/%s/pause" % b["id"])
        check(o.wait(b["id"], "Paused", ("Pausing", "Running"))[0], "the 60 s sandbox pauses")
        st, _, j = o.req("POST", "/v1/sandboxes/%s/renew-expiration" % nj["id"], {"expiresAt": "2099-01-01T00:00:00Z"})
        check(st == 409 and j.get("code") == "DOCKER::INVALID_EXPIRATION", "renew without expiration -> 409 (%d %r)" % (st, j))
        t_failed(o)
        t_snapshots(o, nj["id"], b["id"])
        t_egress(o, nj["id"], b["id"])
        if first:
            ids = t_list(o, first)
            t_renew(o, first)
            t_pause_resume(o, first)
            t_delete(o, ids)
        wait = ttl_born + 63 - time.time()
        if wait > 0:
            time.sleep(wait)
        check(o.state(a["id"]) == 404, "running sandbox past its expiresAt is gone (404)")
        check(o.state(b["id"]) == 404, "paused sandbox past its expiresAt is gone (404)")
        check(o.state(nj["id"]) == "Running", "the sandbox without expiration still runs")
    except Exception as e:  # noqa: BLE001
        check(False, "%s: %s" % (type(e).__name__, e))
    finally:
        code, _, err = s.stop()
        check(code == 0, "serve exits 0 (%r %s)" % (code, err.decode(errors="replace")[-300:]))
    print("--- opensandbox %.1fs" % (time.time() - t0))
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
