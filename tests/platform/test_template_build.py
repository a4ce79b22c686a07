#!/usr/bin/env python3
"""The template build API of `abxlua serve` (platform/build/template_build.h, api_templates.c), driven
by hand as E2B's SDK 2.51 drives it (docs/protocol/e2b-v2-and-peers.md §2): request, files upload,
build start, status polling, tags, aliases, lists, delete; sandboxes created by name.

Usage: test_template_build.py [path/to/abxlua]. Exit 77 = skipped (not root, no cgroups).
"""
import hashlib
import http.client
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_platform as tp  # noqa: E402

check = tp.check

SERVER_PY = b"""import http.server, os
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = ("hello " + os.environ.get("GREETING", "?")).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", 8080), H).serve_forever()
"""


def files_hash(src, dest, entries):
    """calculateFilesHash (e2b 2.51 template/utils.ts): "COPY src dest", then per entry (sorted by
    path) its relative path, mode, size and, for files, the content."""
    h = hashlib.sha256(("COPY %s %s" % (src, dest)).encode())
    for path, mode, data in sorted(entries):
        h.update(path.encode())
        h.update(str(mode).encode())
        h.update(str(4096 if data is None else len(data)).encode())
        if data is not None:
            h.update(data)
    return h.hexdigest()


def make_tar(entries):
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w:gz") as t:
        for path, mode, data in entries:
            ti = tarfile.TarInfo(path)
            ti.mode = mode & 0o7777
            if data is None:
                ti.type = tarfile.DIRTYPE
                t.addfile(ti)
            else:
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
    return bio.getvalue()


APP = [("app", 0o40755, None), ("app/server.py", 0o100644, SERVER_PY),
       ("app/data.txt", 0o100644, b"payload\n")]


def request(s, name, **kw):
    st, _, j = s.json("POST", "/v3/templates", {"name": name, **kw})
    check(st == 202, "POST /v3/templates: %d %r" % (st, j))
    return j


def upload(s, tid, entries, src, dest):
    fh = files_hash(src, dest, entries)
    st, _, j = s.json("GET", "/templates/%s/files/%s" % (tid, fh))
    check(st == 201 and "url" in j, "files: %d %r" % (st, j))
    if not j["present"]:
        u = urllib.parse.urlsplit(j["url"])
        st, _, data = s.request("PUT", u.path + "?" + u.query, make_tar(entries), key=False)
        check(st == 200, "PUT upload: %d %r" % (st, data))
    return fh, j["present"]


def wait(s, tid, bid, timeout=120):
    """Poll status as the SDK does (logsOffset += entries, 200 ms); returns (status, logs, last)."""
    off, logs, deadline = 0, [], time.time() + timeout
    while time.time() < deadline:
        st, _, j = s.json("GET", "/templates/%s/builds/%s/status?logsOffset=%d" % (tid, bid, off))
        check(st == 200, "status: %d %r" % (st, j))
        check(len(j["logEntries"]) <= 100 and j["logs"] == [], "page shape: %r" % (j,))
        off += len(j["logEntries"])
        logs += j["logEntries"]
        if j["status"] in ("ready", "error") and not j["logEntries"]:
            return j["status"], logs, j
        time.sleep(0.2)
    raise AssertionError("build did not finish: %r" % logs[-5:])


def build(s, name, spec, entries=None, tags=None, limits=None):
    r = request(s, name, **({"tags": tags} if tags else {}), **(limits or {}))
    for st in spec.get("steps", []):
        if st["type"] == "COPY" and entries is not None:
            st["filesHash"], _ = upload(s, r["templateID"], entries, st["args"][0], st["args"][1])
    st, _, j = s.json("POST", "/v2/templates/%s/builds/%s" % (r["templateID"], r["buildID"]), spec)
    check(st == 202, "build start: %d %r" % (st, j))
    return r, wait(s, r["templateID"], r["buildID"])


def web_spec():
    return {"fromTemplate": "base", "force": False,
            "startCmd": "python3 /opt/app/server.py",
            "readyCmd": 'curl -s -o /dev/null -w "%{http_code}" http://localhost:8080 | grep -q "200"',
            "steps": [{"type": "COPY", "args": ["app", "/opt/app", "", ""], "force": False,
                       "forceUpload": None, "gzip": True, "resolveSymlinks": False},
                      {"type": "ENV", "args": ["GREETING", "world", "P2", "$GREETING-x"]},
                      {"type": "RUN", "args": ["echo built-by-$(whoami) > ~/who && echo line-one"]},
                      {"type": "RUN", "args": ["mkdir -p /srv/rootonly && id -u > /srv/rootonly/uid", "root"]},
                      {"type": "WORKDIR", "args": ["/opt/app"]}]}


def t_request_validation(s, ctx):
    st, _, j = s.json("POST", "/v3/templates", {})
    check(st == 400 and j["message"] == "Name is required", "no name: %d %r" % (st, j))
    st, _, j = s.json("POST", "/v3/templates", {"name": "Bad Name!"})
    check(st == 400 and "Invalid name" in j["message"], "bad name: %d %r" % (st, j))
    st, _, j = s.json("POST", "/v3/templates", {"name": "ok", "bogus": 1})
    check(st == 400 and "'bogus'" in j["message"], "unknown field: %d %r" % (st, j))
    st, _, j = s.json("POST", "/v3/templates", {"name": "ok", "cpuCount": "2"})
    check(st == 400 and "cpuCount" in j["message"], "cpuCount type: %d %r" % (st, j))
    st, _, j = s.json("POST", "/v3/templates", {"name": "ok", "tags": ["bad tag"]})
    check(st == 400 and "Invalid tag" in j["message"], "bad tag: %d %r" % (st, j))
    for taken in ("base", "code-interpreter-v1"):
        st, _, j = s.json("POST", "/v3/templates", {"name": taken})
        check(st == 400 and "built-in" in j["message"], "%s: %d %r" % (taken, st, j))
    j = request(s, "Shape-Check:v1", tags=["extra"])
    check(j["names"] == ["shape-check"] and j["tags"][0] == "v1" and set(j["tags"]) == {"v1", "extra"}
          and j["public"] is False and len(j["templateID"]) == 20, "response: %r" % j)
    tid, bid = j["templateID"], j["buildID"]
    for body, field in (({"fromTemplate": "base", "fromImage": "debian"}, "exactly one"),
                        ({"steps": []}, "exactly one"),
                        ({"fromTemplate": "base", "steps": [{"type": "RUN", "args": [1]}]}, "steps[0].args"),
                        ({"fromTemplate": "base", "steps": [{"type": "RUN", "args": ["x"], "gzip": True}]}, "steps[0].gzip"),
                        ({"fromTemplate": "base", "startCmd": 5}, "startCmd"),
                        ({"fromTemplate": "base", "readyTimeout": 0}, "'readyTimeout' must be a whole number of seconds from 1 to 600"),
                        ({"fromTemplate": "base", "readyTimeout": 601}, "'readyTimeout'"),
                        ({"fromTemplate": "base", "readyTimeout": 2.5}, "'readyTimeout'"),
                        ({"fromTemplate": "base", "readyTimeout": "60"}, "'readyTimeout'"),
                        ({"fromTemplate": "base", "what": 1}, "'what'")):
        st, _, j = s.json("POST", "/v2/templates/%s/builds/%s" % (tid, bid), body)
        check(st == 400 and field in j["message"], "%r: %d %r" % (body, st, j))
    st, _, j = s.json("GET", "/templates/%s/builds/%s/status" % (tid, bid))
    check(st == 200 and j["status"] == "waiting", "not started: %r" % (j,))
    for q in ("limit=101", "logsOffset=-1", "level=loud"):
        st, _, j = s.json("GET", "/templates/%s/builds/%s/status?%s" % (tid, bid, q))
        check(st == 400 and q.split("=")[0] in j["message"], "%s: %d %r" % (q, st, j))
    st, _, j = s.json("GET", "/templates/%s/builds/%s/status" % (tid, "0" * 36))
    check(st == 404, "unknown build: %d" % st)
    st, _, j = s.json("GET", "/templates/%s/files/%s" % (tid, "ab" * 32))
    check(st == 201 and j["present"] is False and "/build-files/" in j["url"], "files: %r" % (j,))
    u = urllib.parse.urlsplit(j["url"])
    st, _, _ = s.request("PUT", u.path + "?" + u.query, b"not a tar archive at all", key=False)
    check(st == 400, "a body that is no tar: %d" % st)
    st, _, _ = s.request("PUT", u.path + "?sig=" + "0" * 64, make_tar(APP), key=False)
    check(st == 403, "bad signature: %d" % st)
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
    c.request("PUT", u.path + "?" + u.query, body=iter([make_tar(APP)]), encode_chunked=True)
    resp = c.getresponse()
    resp.read()
    c.close()
    check(resp.status == 411, "chunked, no Content-Length: %d" % resp.status)
    st, _, j = s.json("GET", "/templates/%s/files/%s" % (tid, "ab" * 32))
    check(j["present"] is False, "a refused upload is not present: %r" % (j,))


def t_build_and_sandbox(s, ctx):
    t0 = time.time()
    r, (status, logs, last) = build(s, "web-app", web_spec(), APP)
    ctx["first_build_s"] = time.time() - t0
    msgs = [e["message"] for e in logs]
    check(status == "ready", "status %s: %r" % (status, msgs[-8:]))
    check("line-one" in msgs, "RUN output is a log entry: %r" % msgs)
    check(any(m.startswith("[builder 1/5] COPY app /opt/app") for m in msgs), "step line: %r" % msgs)
    check(all("step" in e for e in logs if e["message"] == "line-one"), "step on entries")
    ctx["web"] = r
    path = "/templates/%s/builds/%s/logs" % (r["templateID"], r["buildID"])
    st, _, j = s.json("GET", path + "?limit=3")
    check(st == 200 and [e["message"] for e in j["logs"]] == msgs[:3], "logs: %r" % (j,))
    st, _, j = s.json("GET", path + "?direction=backward&limit=1")
    check(st == 200 and [e["message"] for e in j["logs"]] == msgs[-1:], "logs backward: %r" % (j,))
    st, _, j = s.json("GET", path + "?level=error")
    check(st == 200 and all(e["level"] == "error" for e in j["logs"]), "logs level: %r" % (j,))
    st, _, sb = s.create(templateID="web-app")
    check(st == 201, "create by name: %d %r" % (st, sb))
    check(sb["templateID"] == r["templateID"], "templateID: %r" % sb)
    sid = sb["sandboxID"]
    code, out, err = tp.run_in(s, sid, "cat /opt/app/data.txt; cat /home/user/who; cat /srv/rootonly/uid;"
                               " stat -c %U /opt/app/server.py; echo $GREETING $P2; pwd; whoami;"
                               " stat -c %U /proc/$(pgrep -f app/server.py | head -n1); curl -s localhost:8080")
    check(code == 0, "run: %r %r" % (out, err))
    lines = out.split("\n")
    check(lines[:7] == ["payload", "built-by-user", "0", "user", "world world-x", "/opt/app", "user"],
          "files/env/workdir/user: %r" % lines)
    check(out.endswith("user\nhello world"), "server from start_cmd, as USER, with ENV: %r" % out)
    for ref in ("web-app:default", r["templateID"]):
        st, _, sb2 = s.create(templateID=ref)
        check(st == 201, "create %s: %d %r" % (ref, st, sb2))
        s.request("DELETE", "/sandboxes/" + sb2["sandboxID"])
    st, _, j = s.json("DELETE", "/templates/web-app")
    check(st == 400 and "still use" in j["message"], "delete in use: %d %r" % (st, j))
    st, _, j = s.json("POST", "/sandboxes/%s/snapshots" % sid, {"name": "web-app"})
    check(st == 400 and "built template" in j["message"], "a snapshot under its name: %d %r" % (st, j))
    s.request("DELETE", "/sandboxes/" + sid)


def t_cached_rebuild(s, ctx):
    t0 = time.time()
    r, (status, logs, _) = build(s, "web-app", web_spec(), APP, tags=["v2"])
    took = time.time() - t0
    msgs = [e["message"] for e in logs]
    check(status == "ready", "status %s: %r" % (status, msgs[-5:]))
    steps = [m for m in msgs if "[builder" in m]
    # ENV included: no layer of its own, CACHED while every step before it was
    check(len(steps) == 5 and sum("] ENV " in m for m in steps) == 1
          and all(m.startswith("CACHED ") for m in steps), "all cached: %r" % steps)
    # every step CACHED (above) is the proof; the time is only printed: a wall-time bound went
    # red on a busy machine (issue 22)
    print("cached rebuild took %.1f s (first %.1f s)" % (took, ctx.get("first_build_s", 0)))
    check(r["templateID"] == ctx["web"]["templateID"], "same template, new build")
    ctx["v2"] = r


def t_tags(s, ctx):
    tid = ctx["web"]["templateID"]
    st, _, j = s.json("GET", "/templates/%s/tags" % tid)
    tags = {t["tag"]: t["buildID"] for t in j}
    # request tags replace "default" (infra register_build.go): the first build keeps it
    check(st == 200 and tags == {"v2": ctx["v2"]["buildID"], "default": ctx["web"]["buildID"]},
          "tags: %r" % j)
    st, _, j = s.json("POST", "/templates/tags", {"target": "web-app:v2", "tags": ["stable", "prod"]})
    check(st == 201 and j["buildID"] == ctx["v2"]["buildID"] and set(j["tags"]) == {"stable", "prod"}, "assign: %r" % j)
    st, _, sb = s.create(templateID="web-app:stable")
    check(st == 201, "create by tag: %d %r" % (st, sb))
    s.request("DELETE", "/sandboxes/" + sb["sandboxID"])
    st, _, _ = s.json("DELETE", "/templates/tags", {"name": "web-app", "tags": ["stable"]})
    check(st == 204, "delete tag: %d" % st)
    st, _, j = s.create(templateID="web-app:stable")
    check(st == 404, "deleted tag: %d %r" % (st, j))
    st, _, j = s.json("POST", "/templates/tags", {"target": "web-app:nope", "tags": ["x"]})
    check(st == 404, "unknown target tag: %d" % st)
    st, _, j = s.json("POST", "/templates/tags", {"target": "web-app:v2"})
    check(st == 400 and "tags" in j["message"], "missing tags: %d %r" % (st, j))


def t_alias_list_get(s, ctx):
    st, _, j = s.json("GET", "/templates/aliases/web-app")
    check(st == 200 and j == {"templateID": ctx["web"]["templateID"], "public": False}, "alias: %d %r" % (st, j))
    st, _, j = s.json("GET", "/templates/aliases/no-such-template")
    check(st == 404, "absent alias: %d" % st)
    st, _, j = s.json("GET", "/templates/aliases/web-app%3Av2")
    check(st == 200 and j["templateID"] == ctx["web"]["templateID"], "alias with its tag (%%3A): %d %r" % (st, j))
    st, _, j = s.json("GET", "/templates/aliases/web-app%3Anope")
    check(st == 404 and "nope" in j["message"], "alias with an absent tag: %d %r" % (st, j))
    r = request(s, "team-a/ns-app")
    check(r["names"] == ["team-a/ns-app"], "a namespaced name: %r" % r)
    st, _, j = s.json("GET", "/templates/aliases/team-a%2Fns-app")
    check(st == 200 and j["templateID"] == r["templateID"], "%%2F in a path parameter: %d %r" % (st, j))
    st, _, j = s.json("GET", "/templates/team-a%2Fns-app/builds/" + r["buildID"] + "/status")
    check(st == 200 and j["status"] == "waiting", "status by namespaced name: %d %r" % (st, j))
    st, _, _ = s.json("DELETE", "/templates/team-a%2Fns-app")
    check(st == 204, "delete by namespaced name: %d" % st)
    st, _, j = s.json("GET", "/templates/aliases/bad%zz")
    check(st == 400, "a bad escape: %d %r" % (st, j))
    st, _, j = s.json("GET", "/templates/aliases/base")
    check(st == 200 and j["templateID"] == "base", "a built-in: %d %r" % (st, j))
    for path in ("/templates", "/v2/templates"):
        st, _, j = s.json("GET", path)
        mine = [t for t in j if t["templateID"] == ctx["web"]["templateID"]]
        check(st == 200 and len(mine) == 1 and mine[0]["names"] == ["web-app"]
              and mine[0]["buildStatus"] == "ready" and mine[0]["buildCount"] >= 2, "%s: %r" % (path, j))
    st, _, j = s.json("GET", "/templates/" + ctx["web"]["templateID"])
    check(st == 200 and len(j["builds"]) >= 2 and j["builds"][0]["status"] == "ready", "get: %r" % (j,))


def t_from_built(s, ctx):
    """fromTemplate of a built template: its layers, ENV, WORKDIR and start/ready commands carry
    on (infra phases/finalize: a build without startCmd/readyCmd keeps the parent's)."""
    spec = {"fromTemplate": "web-app:v2", "steps": [
        {"type": "RUN", "args": ["pwd > ~/child-pwd; echo $GREETING > ~/child-env"]},
        {"type": "USER", "args": ["builder"]},
        {"type": "RUN", "args": ["whoami > /tmp/child-user"]}]}
    _, (status, logs, _) = build(s, "child-app", spec, limits={"cpuCount": 1, "memoryMB": 768})
    check(status == "ready", "status %s: %r" % (status, [e["message"] for e in logs][-5:]))
    st, _, sb = s.create(templateID="child-app")
    check(st == 201, "create: %d %r" % (st, sb))
    code, out, err = tp.run_in(s, sb["sandboxID"], "cat /home/user/child-pwd /home/user/child-env"
                               " /tmp/child-user; whoami; curl -s localhost:8080", user="root")
    check(code == 0 and out.split("\n")[:4] == ["/opt/app", "world", "builder", "root"]
          and out.endswith("hello world"), "child: %r %r" % (out, err))
    code, out, _ = tp.run_in(s, sb["sandboxID"], "whoami; cat /sys/fs/cgroup/memory/memory.limit_in_bytes",
                             user="builder")
    check(code == 0 and out == "builder\n%d\n" % (768 << 20), "the USER exists, the memory limit: %r" % out)
    st, _, info = s.json("GET", "/sandboxes/" + sb["sandboxID"])
    check(info["cpuCount"] == 1 and info["memoryMB"] == 768, "limits: %r" % info)
    s.request("DELETE", "/sandboxes/" + sb["sandboxID"])
    st, _, _ = s.json("DELETE", "/templates/child-app")
    check(st == 204, "delete child: %d" % st)


def t_from_code_interpreter(s, ctx):
    """From the built-in code-interpreter-v1: its start/ready commands keep their context (root,
    which the server drops to user itself), whatever the child's USER and WORKDIR."""
    spec = {"fromTemplate": "code-interpreter-v1", "steps": [
        {"type": "RUN", "args": ["mkdir -p ~/work && echo ci-child > ~/work/mark"]},
        {"type": "WORKDIR", "args": ["/home/user/work"]}]}
    _, (status, logs, _) = build(s, "ci-child", spec)
    check(status == "ready", "status %s: %r" % (status, [e["message"] for e in logs][-5:]))
    st, _, sb = s.create(templateID="ci-child")
    check(st == 201, "create: %d %r" % (st, sb))
    code, out, err = tp.run_in(s, sb["sandboxID"], "cat mark; pwd; curl -s localhost:49999/health")
    check(code == 0 and out.startswith("ci-child\n/home/user/work\n") and "OK" in out,
          "child of code-interpreter-v1 (files, WORKDIR, its server): %r %r" % (out, err))
    s.request("DELETE", "/sandboxes/" + sb["sandboxID"])
    s.json("DELETE", "/templates/ci-child")


def make_deb():
    """A minimal package built with the host's dpkg-deb: abx-apt-probe, one file."""
    with tempfile.TemporaryDirectory() as d:
        root = os.path.join(d, "pkg")
        os.makedirs(os.path.join(root, "DEBIAN"))
        os.makedirs(os.path.join(root, "usr/share/abx-apt-probe"))
        with open(os.path.join(root, "DEBIAN/control"), "w") as f:
            f.write("Package: abx-apt-probe\nVersion: 1.0\nArchitecture: all\n"
                    "Maintainer: abxlua <abxlua@localhost>\nDescription: probe\n")
        with open(os.path.join(root, "usr/share/abx-apt-probe/hello"), "w") as f:
            f.write("probe\n")
        subprocess.run(["dpkg-deb", "--root-owner-group", "--build", root, os.path.join(d, "p.deb")],
                       check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(d, "p.deb"), "rb") as f:
            return f.read()


def t_apt_in_build(s, ctx):
    """apt-get in a build knows the host's /usr (the dpkg/apt layer): a local .deb installs, an
    installed package is already there."""
    ents = [("p.deb", 0o100644, make_deb())]
    spec = {"fromTemplate": "base", "steps": [
        {"type": "COPY", "args": ["p.deb", "/tmp/p.deb", "", ""]},
        {"type": "RUN", "args": ["DEBIAN_FRONTEND=noninteractive apt-get install -y -q /tmp/p.deb"
                                 " && rm /tmp/p.deb && apt-get install -y --no-download python3", "root"]}]}
    _, (status, logs, _) = build(s, "apt-app", spec, ents)
    msgs = [e["message"] for e in logs]
    check(status == "ready", "status %s: %r" % (status, msgs[-6:]))
    check(any("python3 is already the newest version" in m for m in msgs), "dpkg knows the host's /usr: %r" % msgs[-6:])
    st, _, sb = s.create(templateID="apt-app")
    code, out, err = tp.run_in(s, sb["sandboxID"], "cat /usr/share/abx-apt-probe/hello; dpkg-query -W -f='${Status}' abx-apt-probe")
    check(code == 0 and out == "probe\ninstall ok installed", "installed: %r %r" % (out, err))
    s.request("DELETE", "/sandboxes/" + sb["sandboxID"])
    s.json("DELETE", "/templates/apt-app")


def t_failing_step(s, ctx):
    spec = {"fromTemplate": "base", "steps": [
        {"type": "RUN", "args": ["echo before-fail"]},
        {"type": "RUN", "args": ["echo about-to-fail; echo on-stderr >&2; exit 3"]}]}
    _, (status, logs, last) = build(s, "fails", spec)
    check(status == "error", "status: %s" % status)
    reason = last["reason"]
    check(reason["step"] == "2" and "exit status 3" in reason["message"], "reason: %r" % reason)
    rmsgs = [e["message"] for e in reason["logEntries"]]
    check("about-to-fail" in rmsgs and "on-stderr" in rmsgs and "before-fail" not in rmsgs,
          "reason's logs are the step's: %r" % rmsgs)
    st, _, j = s.create(templateID="fails")
    check(st == 404, "a failed build is not available: %d" % st)


def t_unknown_step(s, ctx):
    _, (status, _, last) = build(s, "unknown-step", {"fromTemplate": "base",
                                                    "steps": [{"type": "healthcheck", "args": ["x"]}]})
    check(status == "error" and last["reason"]["message"] == "command type HEALTHCHECK is not implemented"
          and last["reason"]["step"] == "1", "reason: %r" % (last.get("reason"),))
    _, (status, _, last) = build(s, "no-parent", {"fromTemplate": "nope", "steps": []})
    check(status == "error" and last["reason"]["step"] == "base" and "nope" in last["reason"]["message"],
          "unknown parent: %r" % (last.get("reason"),))


def t_delete(s, ctx):
    st, _, _ = s.json("DELETE", "/templates/web-app")
    check(st == 204, "delete: %d" % st)
    for path in ("/templates/aliases/web-app", "/templates/" + ctx["web"]["templateID"]):
        st, _, _ = s.json("GET", path)
        check(st == 404, "%s after delete: %d" % (path, st))
    st, _, _ = s.create(templateID="web-app")
    check(st == 404, "create after delete: %d" % st)
    st, _, _ = s.json("DELETE", "/templates/web-app")
    check(st == 404, "second delete: %d" % st)


def t_queue(s, ctx):
    """At most 2 builds run at once (template_build.h ABX_BUILDS_MAX); the third waits."""
    started = []
    for i in range(3):
        r = request(s, "queued-%d" % i)
        spec = {"fromTemplate": "base", "steps": [{"type": "RUN", "args": ["sleep 1.5; echo q%d" % i]}]}
        st, _, j = s.json("POST", "/v2/templates/%s/builds/%s" % (r["templateID"], r["buildID"]), spec)
        check(st == 202, "start %d: %d %r" % (i, st, j))
        started.append(r)
    st, _, j = s.json("POST", "/v2/templates/%s/builds/%s" % (started[0]["templateID"], started[0]["buildID"]),
                      {"fromTemplate": "base"})
    check(st == 409, "a second start of one build: %d" % st)
    max_building, saw_waiting, deadline = 0, False, time.time() + 60
    while time.time() < deadline:
        sts = [s.json("GET", "/templates/%s/builds/%s/status" % (r["templateID"], r["buildID"]))[2]["status"]
               for r in started]
        max_building = max(max_building, sts.count("building"))
        saw_waiting |= "waiting" in sts and sts.count("building") == 2
        if all(x in ("ready", "error") for x in sts):
            break
        time.sleep(0.1)
    check(sts == ["ready"] * 3, "all built: %r" % sts)
    check(max_building == 2 and saw_waiting, "building at most 2 (%d), one waiting seen: %r" % (max_building, saw_waiting))


CHECKS = [t_request_validation, t_build_and_sandbox, t_cached_rebuild, t_tags, t_alias_list_get,
          t_from_built, t_from_code_interpreter, t_apt_in_build,
          t_failing_step, t_unknown_step, t_queue, t_delete]


def t_restart_cached(cache):
    """A new serve on the same --build-cache: the upload is present, every step CACHED."""
    s = tp.Server(args=("--build-cache", cache))
    try:
        r = request(s, "web-app")
        fh, present = upload(s, r["templateID"], APP, "app", "/opt/app")
        check(present, "the archive survived the restart")
        spec = web_spec()
        spec["steps"][0]["filesHash"] = fh
        s.json("POST", "/v2/templates/%s/builds/%s" % (r["templateID"], r["buildID"]), spec)
        status, logs, _ = wait(s, r["templateID"], r["buildID"])
        steps = [e["message"] for e in logs if "[builder" in e["message"] and "ENV" not in e["message"]]
        check(status == "ready" and len(steps) == 4 and all(m.startswith("CACHED ") for m in steps),
              "after a restart: %s %r" % (status, steps))
    finally:
        code, _, err = s.stop()
    check(code == 0, "serve exit %r: %s" % (code, err[-300:]))


def t_stop_during_build(cache):
    """SIGTERM while a step runs: the step is killed, serve exits 0 without delay."""
    s = tp.Server(args=("--build-cache", cache))
    r = request(s, "long-build")
    s.json("POST", "/v2/templates/%s/builds/%s" % (r["templateID"], r["buildID"]),
           {"fromTemplate": "base", "steps": [{"type": "RUN", "args": ["echo started; sleep 120"]}]})
    deadline = time.time() + 30
    while time.time() < deadline:
        j = s.json("GET", "/templates/%s/builds/%s/status" % (r["templateID"], r["buildID"]))[2]
        if any(e["message"] == "started" for e in j["logEntries"]):
            break
        time.sleep(0.2)
    t0 = time.time()
    code, _, err = s.stop()
    took = time.time() - t0
    check(code == 0 and took < 15, "serve exit %r after %.1f s: %s" % (code, took, err.decode(errors="replace")[-300:]))


def main():
    if os.geteuid() != 0 or not os.path.isdir("/sys/fs/cgroup/memory"):
        print("SKIP: abxlua serve needs root and cgroup v1")
        return 77
    with tempfile.TemporaryDirectory(prefix="abx-build-cache.") as cache:
        s = tp.Server(args=("--build-cache", cache))
        failed = tp.run_checks(s, {}, CHECKS, only=os.environ.get("ONLY"))
        rc = tp.stop_and_sum(s, failed)
        for fn in (t_restart_cached, t_stop_during_build):  # each with a serve of its own
            name = fn.__name__[2:]
            if os.environ.get("ONLY") and name not in os.environ["ONLY"].split(","):
                continue
            t0 = time.time()
            try:
                fn(cache)
                print("PASS %-28s %.2fs" % (name, time.time() - t0))
            except Exception as e:  # noqa: BLE001
                print("FAIL %-28s %s: %s" % (name, type(e).__name__, e))
                rc = 1
        return rc


if __name__ == "__main__":
    sys.exit(main())
