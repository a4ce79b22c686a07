"""A fake E2B template build API on loopback, in front of a real `abxlua serve`, for the tests of
`abxlua template` and of template folders in a run (tests/templates/test_build_cli.py).

It answers the build API routes the 2.51 SDK calls (docs/protocol/e2b-v2-and-peers.md §2) and
records every request (method, path, query, JSON body; for the upload PUT its headers, size and the
tar's member names) so a test can assert the exact sequence; every other request is forwarded to
serve unchanged, except that a sandbox create naming a template this fake "built" is sent to serve
as template `base` (serve has no build API here). Creates and kills through it are counted, so the
most sandboxes alive at once is known independently of abxlua.

Builds: each step gets a log entry in E2B's orchestrator format "[builder k/n] TYPE args [key]",
"CACHED " in front when the same step on the same parent layer was built before; one entry is
revealed per status poll, so logs stream. A RUN step whose command contains `exit 1` fails the
build: status "error", reason {message, step}. A finished build gets its tag.
"""
import hashlib
import io
import json
import tarfile
import threading
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class State:
    def __init__(self, upstream, key):
        self.upstream = upstream
        self.key = key
        self.lock = threading.Lock()
        self.calls = []
        self.templates = {}   # id -> {name, tags {tag: build_id}, builds {bid: build}}
        self.names = {}       # name -> id
        self.files = {}       # hash -> tar member names
        self.layers = set()   # step cache keys
        self.alive = set()
        self.peak = 0
        self.seq = 0

    def record(self, entry):
        with self.lock:
            self.calls.append(entry)


def make_handler(st):
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def reply(self, status, body=None, headers=None):
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            if body is not None:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def body(self):
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n) if n else b""

        def handle_any(self):
            u = urllib.parse.urlsplit(self.path)
            path, query = u.path, u.query
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                st.record({"method": self.command, "path": path, "chunked": True})
                return self.reply(501, {"code": 501, "message": "chunked uploads are refused"})
            raw = self.body()
            parts = path.strip("/").split("/")
            if self.command == "PUT" and parts[0] == "upload":
                return self.upload(parts[1], raw)
            if not self.is_build_route(parts):
                return self.forward(path, query, raw)
            if self.headers.get("X-API-Key") != st.key:
                return self.reply(401, {"code": 401, "message": "bad key"})
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                return self.reply(400, {"code": 400, "message": "body is not JSON"})
            st.record({"method": self.command, "path": path, "query": query, "body": body})
            with st.lock:
                return self.route(parts, query, body)

        def is_build_route(self, p):
            if p[:2] == ["v3", "templates"] or p[:2] == ["v2", "templates"]:
                return True
            return p[0] == "templates"

        def route(self, p, query, body):
            c = self.command
            if c == "POST" and p == ["v3", "templates"]:
                name, _, tag = body["name"].partition(":")
                tid = st.names.get(name)
                if not tid:
                    st.seq += 1
                    tid = "tpl%04d" % st.seq
                    st.names[name] = tid
                    st.templates[tid] = {"name": name, "tags": {}, "builds": {}}
                st.seq += 1
                bid = "bld%04d" % st.seq
                st.templates[tid]["builds"][bid] = {"status": "waiting", "tag": tag or "default",
                                                     "entries": [], "shown": 0, "reason": None}
                return self.reply(202, {"templateID": tid, "buildID": bid, "names": [body["name"]],
                                        "tags": [tag] if tag else [], "aliases": [], "public": False})
            if c == "GET" and len(p) == 4 and p[0] == "templates" and p[2] == "files":
                h = p[3]
                if h in st.files:
                    return self.reply(201, {"present": True})
                port = self.server.server_address[1]
                return self.reply(201, {"present": False, "url": "http://127.0.0.1:%d/upload/%s" % (port, h),
                                        "headers": {"X-Upload-Token": "t-" + h[:8]}})
            if c == "POST" and len(p) == 5 and p[:2] == ["v2", "templates"] and p[3] == "builds":
                b = st.templates[p[2]]["builds"][p[4]]
                self.plan(st.templates[p[2]], b, body)
                return self.reply(202)
            if c == "GET" and len(p) == 5 and p[0] == "templates" and p[4] == "status":
                t = st.templates.get(p[1])
                b = t and t["builds"].get(p[3])
                if not b:
                    return self.reply(404, {"code": 404, "message": "no such build"})
                off = int(urllib.parse.parse_qs(query).get("logsOffset", ["0"])[0])
                # one more entry becomes visible per poll: the log streams
                if b["shown"] < len(b["entries"]):
                    b["shown"] += 1
                done = b["shown"] >= len(b["entries"])
                status = b["final"] if done else "building"
                if done and status == "ready":
                    t["tags"][b["tag"]] = p[3]
                ans = {"templateID": p[1], "buildID": p[3], "status": status, "logs": [],
                       "logEntries": b["entries"][off:b["shown"]][:100]}
                if done and b["reason"]:
                    ans["reason"] = b["reason"]
                return self.reply(200, ans)
            if c == "GET" and len(p) == 3 and p[:2] == ["templates", "aliases"]:
                tid = st.names.get(urllib.parse.unquote(p[2]))
                if not tid:
                    return self.reply(404, {"code": 404, "message": "not found"})
                return self.reply(200, {"templateID": tid, "public": False})
            if c == "GET" and len(p) == 3 and p[0] == "templates" and p[2] == "tags":
                t = st.templates.get(p[1])
                if not t:
                    return self.reply(404, {"code": 404, "message": "not found"})
                return self.reply(200, [{"tag": k, "buildID": v, "createdAt": "2026-12-01T00:00:00Z"}
                                        for k, v in sorted(t["tags"].items())])
            if c == "POST" and p == ["templates", "tags"]:
                name, _, tag = body["target"].partition(":")
                t = st.templates.get(st.names.get(name, ""))
                if not t or tag not in t["tags"]:
                    return self.reply(404, {"code": 404, "message": "no build " + body["target"]})
                for tg in body["tags"]:
                    t["tags"][tg] = t["tags"][tag]
                return self.reply(201, {"buildID": t["tags"][tag], "tags": body["tags"]})
            if c == "DELETE" and p == ["templates", "tags"]:
                t = st.templates.get(st.names.get(body["name"], ""))
                for tg in body["tags"]:
                    t["tags"].pop(tg, None)
                return self.reply(204)
            if c == "DELETE" and len(p) == 2 and p[0] == "templates":
                t = st.templates.pop(p[1], None)
                if not t:
                    return self.reply(404, {"code": 404, "message": "not found"})
                st.names.pop(t["name"], None)
                return self.reply(204)
            if c == "GET" and p == ["v2", "templates"]:
                return self.reply(200, [{"templateID": tid, "names": [t["name"]], "aliases": [t["name"]],
                                         "buildStatus": "ready", "cpuCount": 1, "memoryMB": 512,
                                         "buildCount": len(t["builds"])}
                                        for tid, t in sorted(st.templates.items())])
            return self.reply(404, {"code": 404, "message": "fake: no route %s %s" % (c, "/".join(p))})

        def plan(self, t, b, body):
            steps = body.get("steps") or []
            parent = body.get("fromTemplate") or body.get("fromImage")
            n = len(steps)
            b["entries"].append({"timestamp": "2026-12-01T00:00:00Z", "level": "info",
                                 "message": "Building template %s" % t["name"], "step": "base"})
            b["final"] = "ready"
            for k, s in enumerate(steps, 1):
                key = hashlib.sha256(json.dumps([parent, s], sort_keys=True).encode()).hexdigest()[:12]
                cached = key in st.layers
                text = "%s %s" % (s["type"], " ".join(s.get("args") or []))
                b["entries"].append({"timestamp": "2026-12-01T00:00:00Z", "level": "info",
                                     "message": "%s[builder %d/%d] %s [%s]" % ("CACHED " if cached else "", k, n, text, key),
                                     "step": str(k)})
                if s["type"] == "RUN" and "exit 1" in s["args"][0]:
                    b["entries"].append({"timestamp": "2026-12-01T00:00:00Z", "level": "error",
                                         "message": "command exited with status 1", "step": str(k)})
                    b["final"] = "error"
                    b["reason"] = {"message": "step %d (RUN) failed: exit status 1" % k, "step": str(k)}
                    return
                st.layers.add(key)
                parent = key
            b["entries"].append({"timestamp": "2026-12-01T00:00:00Z", "level": "info",
                                 "message": "Build finished", "step": "finalize"})

        def upload(self, h, raw):
            names = []
            try:
                with tarfile.open(fileobj=io.BytesIO(raw), mode="r:gz") as tf:
                    names = [(m.name, m.type.decode() if isinstance(m.type, bytes) else m.type, m.mode)
                             for m in tf.getmembers()]
            except tarfile.TarError as e:
                names = ["bad tar: %s" % e]
            st.record({"method": "PUT", "path": "/upload/" + h, "size": len(raw),
                       "content_length": self.headers.get("Content-Length"),
                       "upload_token": self.headers.get("X-Upload-Token"),
                       "api_key": self.headers.get("X-API-Key"), "members": names})
            with st.lock:
                st.files[h] = names
            return self.reply(200)

        def forward(self, path, query, raw):
            if self.command == "POST" and path in ("/sandboxes", "/v2/sandboxes") and raw:
                b = json.loads(raw)
                with st.lock:
                    built = b.get("templateID", "").split(":")[0] in st.names
                if built:
                    b["templateID"] = "base"
                    raw = json.dumps(b).encode()
            url = st.upstream + path + ("?" + query if query else "")
            hdrs = {k: v for k, v in self.headers.items()
                    if k.lower() not in ("host", "content-length", "connection")}
            req = urllib.request.Request(url, data=raw if raw or self.command in ("POST", "PUT") else None,
                                         method=self.command, headers=hdrs)
            try:
                with urllib.request.urlopen(req, timeout=120) as r:
                    status, data, rh = r.status, r.read(), dict(r.headers)
            except urllib.error.HTTPError as e:
                status, data, rh = e.code, e.read(), dict(e.headers)
            with st.lock:
                if self.command == "POST" and path in ("/sandboxes", "/v2/sandboxes") and status == 201:
                    st.alive.add(json.loads(data)["sandboxID"])
                    st.peak = max(st.peak, len(st.alive))
                elif self.command == "DELETE" and path.startswith("/sandboxes/"):
                    st.alive.discard(path.split("/")[2])
            self.send_response(status)
            for k, v in rh.items():
                if k.lower() not in ("content-length", "transfer-encoding", "connection", "date", "server"):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = handle_any

    return H


def start(upstream, key):
    """Starts the fake on 127.0.0.1 (a free port) in a thread; returns (server, state, url)."""
    st = State(upstream, key)
    srv = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(st))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, st, "http://127.0.0.1:%d" % srv.server_address[1]
