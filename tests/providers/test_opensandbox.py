"""The OpenSandbox adapter (issue 12 part 2) against a scripted OpenSandbox on loopback: the /v1
lifecycle API (OPEN-SANDBOX-API-KEY, create 202 + Pending then Running, page/pageSize lists,
renew-expiration {expiresAt}, pause/resume 202, endpoints/{port}, {code, message} errors) and
execd behind the endpoint's URI route (X-EXECD-ACCESS-TOKEN from the endpoint's headers, POST
/command as SSE written in pieces, background status/logs, the files and directories API with
its multipart upload, GET /metrics). opensandbox_case.lua drives it through `abxlua run --provider osb`; this
script then checks what went over the wire.
Sources: alibaba/OpenSandbox @3bb6fad specs/sandbox-lifecycle.yml, specs/execd-api.yaml.

    test_opensandbox.py ABXLUA
"""
import datetime
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import abxtest  # noqa: E402
from abxtest import check  # noqa: E402

ABX = sys.argv[1]
KEY = "osb_test_key_0123456789"
lock = threading.Lock()
sandboxes = {}   # id -> dict(state, body, polls, expires, secure, token)
commands = {}    # id -> dict(polls, log)
files = {}       # path -> bytes
dirs = {"/", "/home", "/home/user"}
log = []         # (method, path, query, headers lower-case, body bytes)
counter = [0]
snapshots = {}   # id -> Snapshot (state Creating until its first GET)
PORT = [0]


def now_rfc3339(delta=0):
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=delta)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def sandbox_json(sid):
    s = sandboxes[sid]
    src = {"snapshotId": s["body"]["snapshotId"]} if "snapshotId" in s["body"] else {
        "image": {"uri": s["body"]["image"]["uri"]}}
    return {"id": sid, **src,
            "status": {"state": s["state"], "reason": s.get("reason"), "message": s.get("message")},
            "metadata": s["body"].get("metadata", {}), "entrypoint": s["body"]["entrypoint"],
            "createdAt": s["created"], "expiresAt": s["expires"]}


def file_info(path):
    is_dir = path in dirs
    return {"path": path, "type": "directory" if is_dir else "file",
            "size": 0 if is_dir else len(files[path]), "mode": 755 if is_dir else 644,
            "owner": "root", "group": "root", "modified_at": "2026-12-01T19:00:00Z",
            "created_at": "2026-12-01T19:00:00Z"}


def parse_multipart(body, ctype):
    m = re.search(r"boundary=([^;]+)", ctype)
    boundary = b"--" + m.group(1).encode()
    parts = []
    for chunk in body.split(boundary)[1:]:
        if chunk.startswith(b"--"):
            break
        head, _, data = chunk[2:].partition(b"\r\n\r\n")
        parts.append((head.decode(), data[:-2]))
    return parts


class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def reply(self, status, obj=None, raw=None, ctype="application/json", headers=None):
        body = raw if raw is not None else (json.dumps(obj).encode() if obj is not None else b"")
        self.send_response(status)
        if body or obj is not None:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Request-ID", "req-%d" % time.time_ns())
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def err(self, status, code, message):
        self.reply(status, {"code": code, "message": message})

    def handle_any(self, method):
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        hdrs = {k.lower(): v for k, v in self.headers.items()}
        with lock:
            log.append((method, u.path, q, hdrs, body))
        m = re.match(r"^/sandboxes/([^/]+)/port/44772(/.*)$", u.path)
        if m:
            return self.execd(method, m.group(1), m.group(2), q, hdrs, body)
        m = re.match(r"^/sandboxes/([^/]+)/port/18080(/.*)$", u.path)
        if m:  # the egress sidecar (specs/egress-api.yaml; POST replaces: policy_server.go)
            s = sandboxes.get(m.group(1))
            if not s or s["state"] != "Running" or m.group(2) != "/policy":
                return self.reply(404, raw=b"404 page not found\n", ctype="text/plain")
            if method == "GET":
                return self.reply(200, {"status": "ok", "mode": "x", "policy": s.get("policy", {
                    "defaultAction": "allow", "egress": []})})
            pol = json.loads(body)
            if any("/33" in r["target"] for r in pol.get("egress", [])):
                return self.reply(400, raw=b"invalid policy: bad target\n", ctype="text/plain")
            s["policy"] = pol
            return self.reply(200, {"status": "ok", "mode": "x"})
        m = re.match(r"^/sandboxes/([^/]+)/port/8080(/.*)$", u.path)
        if m:  # a server inside on 8080, behind the ingress's URI route
            s = sandboxes.get(m.group(1))
            if not s or s["state"] != "Running":
                return self.err(502, "SANDBOX_UNAVAILABLE", "no running sandbox " + m.group(1))
            rest = m.group(2) + ("?" + u.query if u.query else "")
            return self.reply(200, raw=("8080 %s %s" % (method, rest)).encode(), ctype="text/plain")
        if not u.path.startswith("/v1/"):
            return self.err(404, "NOT_FOUND", "no route " + u.path)
        if hdrs.get("open-sandbox-api-key") != KEY:
            return self.err(401, "UNAUTHORIZED", "invalid or missing OPEN-SANDBOX-API-KEY")
        return self.lifecycle(method, u.path[3:], q, body)

    def lifecycle(self, method, path, q, body):
        with lock:
            if path == "/sandboxes" and method == "POST":
                b = json.loads(body)
                if not isinstance(b.get("timeout"), int) or b["timeout"] < 60:
                    return self.err(400, "INVALID_REQUEST", "timeout must be an integer >= 60")
                if "entrypoint" not in b or "resourceLimits" not in b:
                    return self.err(400, "INVALID_REQUEST", "entrypoint and resourceLimits are required")
                if "snapshotId" in b and b["snapshotId"] not in snapshots:  # snapshot_restore.py
                    return self.err(404, "SNAPSHOT::NOT_FOUND", "Snapshot %s not found" % b["snapshotId"])
                if b.get("image", {}).get("uri") == "nosuch":  # as the Docker runtime answers
                    return self.err(500, "DOCKER::SANDBOX_IMAGE_PULL_FAILED",
                                    "Failed to pull image nosuch: not found")
                counter[0] += 1
                sid = "sb-%d" % counter[0]
                sandboxes[sid] = {"state": "Pending", "body": b, "polls": 0,
                                  "created": now_rfc3339(), "expires": now_rfc3339(b["timeout"]),
                                  "secure": b.get("secureAccess") is True, "token": "tok-" + sid}
                if "networkPolicy" in b:
                    sandboxes[sid]["policy"] = b["networkPolicy"]
                j = sandbox_json(sid)
                j.pop("image", None)
                j.pop("snapshotId", None)
                return self.reply(202, j, headers={"Location": "/v1/sandboxes/" + sid})
            if path == "/sandboxes" and method == "GET":
                items = sorted(sandboxes)
                md = q.get("metadata", [None])[0]
                if md:
                    want = dict(urllib.parse.parse_qsl(md))
                    items = [i for i in items if all(sandboxes[i]["body"].get("metadata", {}).get(k) == v
                                                     for k, v in want.items())]
                if "state" in q:
                    items = [i for i in items if sandboxes[i]["state"] in q["state"]]
                page, size = int(q.get("page", ["1"])[0]), int(q.get("pageSize", ["20"])[0])
                chunk = items[(page - 1) * size:page * size]
                pages = (len(items) + size - 1) // size
                return self.reply(200, {"items": [sandbox_json(i) for i in chunk], "pagination": {
                    "page": page, "pageSize": size, "totalItems": len(items), "totalPages": pages,
                    "hasNextPage": page < pages}})
            if path == "/snapshots" and method == "GET":
                items = [x for x in snapshots.values() if x["sandboxId"] == q.get("sandboxId", [None])[0]]
                page, size = int(q.get("page", ["1"])[0]), int(q.get("pageSize", ["20"])[0])
                pages = (len(items) + size - 1) // size
                return self.reply(200, {"items": items[(page - 1) * size:page * size], "pagination": {
                    "page": page, "pageSize": size, "totalItems": len(items), "totalPages": pages,
                    "hasNextPage": page < pages}})
            m = re.match(r"^/snapshots/([^/]+)$", path)
            if m:
                snap = snapshots.get(m.group(1))
                if not snap:
                    return self.err(404, "SNAPSHOT::NOT_FOUND", "Snapshot %s not found" % m.group(1))
                if method == "DELETE":
                    del snapshots[m.group(1)]
                    return self.reply(204)
                j = dict(snap)
                snap["status"] = {"state": "Ready"}  # Creating for the first answer only
                return self.reply(200, j)
            m = re.match(r"^/sandboxes/([^/]+)(/[^/]+)?(?:/(\d+))?$", path)
            if not m or m.group(1) not in sandboxes or sandboxes[m.group(1)]["state"] == "Terminated":
                return self.err(404, "NOT_FOUND", "sandbox not found")
            sid, action, port = m.group(1), m.group(2), m.group(3)
            s = sandboxes[sid]
            if action is None and method == "GET":
                s["polls"] += 1
                # Pending for one poll; "broken" fails to start; Pausing/Resuming settle on the next GET
                if s["state"] == "Pending" and s["polls"] >= 2:
                    if s["body"].get("image", {}).get("uri") == "broken":
                        s["state"], s["reason"], s["message"] = ("Failed", "image_pull_failed",
                                                                 "cannot pull image broken")
                    else:
                        s["state"] = "Running"
                elif s["state"] == "Pausing":
                    s["state"] = "Paused"
                elif s["state"] == "Resuming":
                    s["state"] = "Running"
                return self.reply(200, sandbox_json(sid))
            if action is None and method == "DELETE":
                s["state"] = "Terminated"
                return self.reply(204)
            if action == "/pause" and method == "POST":
                if s["state"] != "Running":
                    return self.err(409, "CONFLICT", "sandbox is " + s["state"])
                s["state"] = "Pausing"
                return self.reply(202)
            if action == "/resume" and method == "POST":
                if s["state"] != "Paused":
                    return self.err(409, "CONFLICT", "sandbox is " + s["state"])
                s["state"] = "Resuming"
                return self.reply(202)
            if action == "/renew-expiration" and method == "POST":
                b = json.loads(body)
                if set(b) != {"expiresAt"} or not re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", b["expiresAt"]):
                    return self.err(400, "INVALID_REQUEST", "expiresAt must be RFC 3339 UTC")
                if b["expiresAt"] <= s["expires"]:  # the spec: after the current expiresAt
                    return self.err(400, "INVALID_REQUEST", "expiresAt must be after the current one")
                s["expires"] = b["expiresAt"]
                return self.reply(200, {"expiresAt": b["expiresAt"]})
            if action == "/snapshots" and method == "POST":
                b = json.loads(body or b"{}")
                counter[0] += 1
                snid = "%08d-aaaa-4bbb-8ccc-%012d" % (counter[0], counter[0])
                snapshots[snid] = {"id": snid, "sandboxId": sid, "status": {"state": "Creating"},
                                   "createdAt": now_rfc3339(), **({"name": b["name"]} if "name" in b else {})}
                return self.reply(202, snapshots[snid], headers={"Location": "/v1/snapshots/" + snid})
            if action == "/endpoints" and method == "GET" and port:
                e = {"endpoint": "127.0.0.1:%d/sandboxes/%s/port/%s" % (PORT[0], sid, port)}
                if s["secure"] and port == "44772":
                    e["headers"] = {"X-EXECD-ACCESS-TOKEN": s["token"]}
                return self.reply(200, e)
            return self.err(404, "NOT_FOUND", "no route")

    def sse(self, pieces):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for p in pieces:  # written in pieces so events arrive split across chunks
            self.wfile.write(p.encode())
            self.wfile.flush()
            time.sleep(0.01)
        self.close_connection = True

    def execd(self, method, sid, path, q, hdrs, body):
        s = sandboxes.get(sid)
        if not s or s["state"] != "Running":
            return self.err(502, "SANDBOX_UNAVAILABLE", "no running sandbox " + sid)
        if s["secure"] and hdrs.get("x-execd-access-token") != s["token"]:
            return self.err(401, "UNAUTHORIZED", "missing or invalid X-EXECD-ACCESS-TOKEN")
        p = q.get("path", [None])[0]
        if path == "/ping" and method == "GET":
            return self.reply(200, raw=b"pong", ctype="text/plain")
        if path == "/command" and method == "POST":
            b = json.loads(body)
            cmd = b["command"]
            with lock:
                counter[0] += 1
                cid = "cmd-%d" % counter[0]
            init = json.dumps({"type": "init", "text": cid, "timestamp": 1})
            if b.get("background"):
                with lock:
                    commands[cid] = {"polls": 0, "log": "bg-out\nbg-err\n"}
                return self.sse([init + "\n\n"])
            if cmd == "echo hi":
                # a line per event without its terminator, as execd's readFromPos sends it
                out = json.dumps({"type": "stdout", "text": "hi", "timestamp": 2})
                return self.sse(["data: " + init[:10], init[10:] + "\n\n", out[:7], out[7:] + "\n",
                                 "\n{\"type\":\"ping\"}\n\n",
                                 json.dumps({"type": "execution_complete", "execution_time": 3}) + "\n\n"])
            if cmd == "exit 3":
                return self.sse([init + "\n\n", json.dumps({"type": "stderr", "text": "bad"}) + "\n\n",
                                 json.dumps({"type": "error", "error": {
                                     "ename": "CommandExecError", "evalue": "3",
                                     "traceback": ["exit status 3"]}}) + "\n\n"])
            if cmd == "id -u -- user && id -g -- user":
                return self.sse([init + "\n\n", json.dumps({"type": "stdout", "text": "1000"}) + "\n\n",
                                 json.dumps({"type": "stdout", "text": "1001"}) + "\n\n",
                                 json.dumps({"type": "execution_complete"}) + "\n\n"])
            if cmd == "id -u -- ghost && id -g -- ghost":
                return self.sse([init + "\n\n", json.dumps({"type": "stderr", "text": "id: 'ghost': no such user"}) + "\n\n",
                                 json.dumps({"type": "error", "error": {"ename": "CommandExecError", "evalue": "1",
                                                                        "traceback": ["exit status 1"]}}) + "\n\n"])
            if cmd == "whoami":
                who = {(1000, 1001): "user", (0, 0): "root"}.get((b.get("uid"), b.get("gid")), "execd")
                return self.sse([init + "\n\n", json.dumps({"type": "stdout", "text": who}) + "\n\n",
                                 json.dumps({"type": "execution_complete"}) + "\n\n"])
            if cmd == "corrupt":
                return self.sse([init + "\n\n", "data: {\"type\": \"stdout\", \"text\": \n\n"])
            if cmd == "noend":
                return self.sse([init + "\n\n", json.dumps({"type": "stdout", "text": "x"}) + "\n\n"])
            return self.err(400, "INVALID_REQUEST_BODY", "unscripted command " + cmd)
        if path == "/metrics" and method == "GET":  # model/metric.go Metrics
            return self.reply(200, {"cpu_count": 2.0, "cpu_used_pct": 12.5, "mem_total_mib": 1024.0,
                                    "mem_used_mib": 256.5, "timestamp": 1796151600123})
        if path == "/command" and method == "DELETE":
            cid = q.get("id", [""])[0]
            return self.reply(200) if cid in commands else self.err(404, "INVALID_REQUEST_BODY", "no " + cid)
        m = re.match(r"^/command/status/(.+)$", path)
        if m and method == "GET":
            c = commands.get(m.group(1))
            if not c:
                return self.err(404, "INVALID_REQUEST_BODY", "no such command")
            c["polls"] += 1
            done = c["polls"] > 2
            return self.reply(200, {"id": m.group(1), "content": "bg", "running": not done,
                                    "exit_code": 0 if done else None, "error": "",
                                    "started_at": "2026-12-01T19:00:00Z"})
        m = re.match(r"^/command/(.+)/logs$", path)
        if m and method == "GET":
            c = commands.get(m.group(1))
            if not c:
                return self.err(404, "INVALID_REQUEST_BODY", "no such command")
            return self.reply(200, raw=c["log"].encode(), ctype="text/plain",
                              headers={"EXECD-COMMANDS-TAIL-CURSOR": "1"})
        with lock:
            if path == "/files/upload" and method == "POST":
                parts = parse_multipart(body, hdrs.get("content-type", ""))
                if len(parts) != 2 or 'name="metadata"' not in parts[0][0] or \
                        'filename="metadata"' not in parts[0][0] or 'name="file"' not in parts[1][0]:
                    return self.err(400, "INVALID_FILE_METADATA", "metadata part then file part")
                meta = json.loads(parts[0][1])
                d = os.path.dirname(meta["path"])
                while d not in dirs:  # execd creates the parents (MkdirAll)
                    dirs.add(d)
                    d = os.path.dirname(d)
                files[meta["path"]] = parts[1][1]
                return self.reply(200)
            if path == "/files/download" and method == "GET":
                if p not in files:
                    return self.err(404, "FILE_NOT_FOUND", "file not found: %s" % p)
                return self.reply(200, raw=files[p], ctype="application/octet-stream")
            if path == "/files/info" and method == "GET":
                if p not in files and p not in dirs:
                    return self.err(404, "FILE_NOT_FOUND", "file not found: %s" % p)
                return self.reply(200, {p: file_info(p)})
            if path == "/directories/list" and method == "GET":
                if p not in dirs:
                    return self.err(404, "FILE_NOT_FOUND", "directory not found: %s" % p)
                kids = sorted(x for x in list(files) + list(dirs) if x != p and os.path.dirname(x) == p)
                return self.reply(200, [file_info(k) for k in kids])
            if path == "/directories" and method == "POST":
                for d in json.loads(body):
                    while d not in dirs:
                        dirs.add(d)
                        d = os.path.dirname(d)
                return self.reply(200)
            if path == "/files/mv" and method == "POST":
                for item in json.loads(body):
                    if item["src"] not in files:
                        return self.err(404, "FILE_NOT_FOUND", "file not found: %s" % item["src"])
                    if os.path.dirname(item["dest"]) not in dirs:
                        return self.err(400, "INVALID_REQUEST_BODY", "target directory must exist")
                    files[item["dest"]] = files.pop(item["src"])
                return self.reply(200)
            if path == "/files" and method == "DELETE":
                for x in q.get("path", []):
                    files.pop(x, None)
                return self.reply(200)
            if path == "/directories" and method == "DELETE":
                for x in q.get("path", []):
                    for f in [f for f in files if f.startswith(x + "/")]:
                        del files[f]
                    for d in [d for d in dirs if d == x or d.startswith(x + "/")]:
                        dirs.discard(d)
                return self.reply(200)
        return self.err(404, "NOT_FOUND", "execd route not implemented: %s %s" % (method, path))

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_DELETE(self):
        self.handle_any("DELETE")


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
PORT[0] = srv.server_address[1]
threading.Thread(target=srv.serve_forever, daemon=True).start()

config = """provider: osb
providers:
  osb:
    kind: remote
    protocol: opensandbox
    api_url: http://127.0.0.1:%d/v1
    envd_routing: headers
    credential_env: [ABX_TEST_OSB_KEY]
    auth_header: OPEN-SANDBOX-API-KEY
    create: {mode: poll, deadline: 20, interval: 0.2}
    ttl: {mode: expires_at, min: 60}
    pagination: page
    capabilities: [pause]
""" % PORT[0]
proj = abxtest.project(config)
env = {k: v for k, v in os.environ.items()
       if k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
       and not k.startswith(("ABX_", "E2B_"))}
case = os.path.join(os.path.dirname(os.path.abspath(__file__)), "opensandbox_case.lua")
r = subprocess.run([ABX, "run", case, "--provider", "osb", "-j", "1"], cwd=proj,
                   env=dict(env, ABX_TEST_OSB_KEY=KEY), capture_output=True, text=True, timeout=170)
out = r.stdout + r.stderr
check(r.returncode == 0 and "10 passed, 0 failed" in r.stdout,
      "opensandbox_case.lua: 10 passed (got %d: %s)" % (r.returncode, out[-3000:]))
check(KEY not in out, "the API key is never printed")

creates = [json.loads(b) for m, p, q, h, b in log if m == "POST" and p == "/v1/sandboxes"]
check(len([c for c in creates if "secureAccess" in c]) == 2
      and all(c.get("secureAccess", True) is True for c in creates),
      "secureAccess sent (true) only by the two creates that asked for secure = true")
first = creates[0] if creates else {}
check(first.get("image") == {"uri": "base"} and first.get("timeout") == 120
      and first.get("env") == {"A": "1"} and first.get("secureAccess") is True
      and first.get("entrypoint") == ["tail", "-f", "/dev/null"]
      and first.get("resourceLimits") == {"cpu": "1", "memory": "2Gi"},
      "create body: image.uri, timeout, env, secureAccess, entrypoint, resourceLimits (%s)" % first)
check(isinstance(first.get("metadata"), dict) and re.match(r"^[0-9a-f]{12}$", first["metadata"].get("e2e", "")),
      "create body: the run tag e2e in metadata (%s)" % first.get("metadata"))
snapsrc = [sid for sid, s in sandboxes.items() if s["body"].get("image", {}).get("uri") == "snapsrc"]
snap_posts = [(p, json.loads(b or b"{}")) for m, p, q, h, b in log if m == "POST" and p.endswith("/snapshots")]
check([b for p, b in snap_posts[:2]] == [{"name": "cp-1"}, {}] and len(snap_posts) == 3
      and all(p == "/v1/sandboxes/%s/snapshots" % snapsrc[0] for p, b in snap_posts[:2]),
      "create_snapshot: POST /v1/sandboxes/{id}/snapshots {name?}; the killed clone's too (%s)" % snap_posts)
polls = [p for m, p, q, h, b in log if m == "GET" and p.startswith("/v1/snapshots/")]
check(len(polls) >= 2, "create_snapshot polled GET /v1/snapshots/{id} until Ready (%s)" % polls)
restores = [c for c in (json.loads(b) for m, p, q, h, b in log if m == "POST" and p == "/v1/sandboxes")
            if "snapshotId" in c]
check(len(restores) == 2 and all("image" not in c for c in restores),
      "a snapshot id as template is sent as snapshotId, without image (%s)" % restores)
check(any(m == "GET" and p == "/v1/snapshots" and q.get("sandboxId") == snapsrc and q.get("pageSize") == ["1"]
          and q.get("page") == ["2"] for m, p, q, h, b in log), "list_snapshots: sandboxId, page, pageSize")
dels = [p for m, p, q, h, b in log if p.startswith("/v1/snapshots/") and m == "DELETE"]
check(len(dels) >= 2 and dels[0] == dels[1] and not snapshots,
      "delete_snapshot: DELETE /v1/snapshots/{id} (204, then 404); the run deleted the rest (%s)" % dels)
refresh = [json.loads(b) for m, p, q, h, b in log if snapsrc and p == "/v1/sandboxes/%s/renew-expiration" % snapsrc[0]]
check(len(refresh) == 1, "refresh(600) renewed, refresh(20) did not (never shortens) (%s)" % refresh)
netsrc = [c for c in (json.loads(b) for m, p, q, h, b in log if m == "POST" and p == "/v1/sandboxes")
          if "networkPolicy" in c]
check([c["networkPolicy"] for c in netsrc] == [{"defaultAction": "deny", "egress": [
    {"action": "allow", "target": "10.1.0.0/16"}, {"action": "deny", "target": "10.0.0.0/8"}]}],
      "create: network + allow_internet_access = false -> networkPolicy, allow rules first (%s)" % netsrc)
posts = [json.loads(b) for m, p, q, h, b in log if m == "POST" and p.endswith("/port/18080/policy")]
check(posts[:2] == [{"defaultAction": "allow", "egress": [{"action": "deny", "target": "1.2.3.4"}]},
                    {"defaultAction": "allow"}],
      "update_network: POST /policy on the egress endpoint with the whole policy (%s)" % posts)
check(any(p.endswith("/endpoints/18080") for m, p, q, h, b in log), "the egress port's endpoint was asked")
netids = [sid for sid, s in sandboxes.items() if "networkPolicy" in s["body"]]
renews = [json.loads(b) for m, p, q, h, b in log if p.endswith("/renew-expiration")
          and not any(p.startswith("/v1/sandboxes/%s/" % x) for x in snapsrc + netids)]
check(len(renews) == 1 and all(set(x) == {"expiresAt"} for x in renews),
      "set_timeout sent renew-expiration {expiresAt}; connect after it kept the later expiry (%s)"
      % renews)
lists = [q for m, p, q, h, b in log if m == "GET" and p == "/v1/sandboxes"]
check(any(q.get("page") == ["1"] and q.get("pageSize") == ["1"] for q in lists)
      and any(q.get("page") == ["2"] for q in lists), "lists asked page + pageSize, then page 2")
execd = [(h, p) for m, p, q, h, b in log if "/port/44772/" in p]
check(execd and all(h.get("x-execd-access-token", "").startswith("tok-sb-") or h.get("x-execd-access-token") == "bad"
                    or "x-execd-access-token" not in h for h, p in execd),
      "execd requests carried the endpoint's token (or none / the test's bad one)")
runs = [json.loads(b) for m, p, q, h, b in log if m == "POST" and p.endswith("/port/44772/command")]
lookups = [x for x in runs if x["command"] == "id -u -- user && id -g -- user"]
whoami = [(x.get("uid"), x.get("gid")) for x in runs if x["command"] == "whoami"]
check(len(lookups) == 1 and whoami == [(1000, 1001), (1000, 1001), (0, 0), (None, None)],
      "user: looked up once with id, then uid/gid sent; root is 0/0; none sends none (%s)" % whoami)
check(any(x.get("timeout") == 60000 for x in runs) and all("stdin" not in x for x in runs),
      "commands carry the timeout in ms (default 60 s)")
check(any(h.get("accept") == "text/event-stream" for h, p in execd if p.endswith("/command")),
      "POST /command asked for text/event-stream")
eps = [p for m, p, q, h, b in log if p.endswith("/endpoints/8080")]
check(len(eps) == 2 and len(set(eps)) == 2,
      "the 8080 endpoint was asked once per sandbox and kept by its handle (%s)" % eps)
check(not any(p.startswith("/v1/v2") or p.startswith("/sandboxes/") and "/port/" not in p
              for m, p, q, h, b in log), "no E2B route was asked")
left = [sid for sid, s in sandboxes.items() if s["state"] != "Terminated"]
check(len(sandboxes) == 12 and left == [],
      "every sandbox created (%d) was deleted, the one that failed to start too (left: %s)"
      % (len(sandboxes), left))
srv.shutdown()
abxtest.finish()
