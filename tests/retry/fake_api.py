"""A fake E2B control plane that misbehaves on purpose, for the retry tests: the first POST
/sandboxes creates the sandbox but drops the connection before answering; the first
GET /v2/sandboxes answers 503; the first DELETE answers 429 with Retry-After: 1."""
import json, threading, time, urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.sandboxes = {}
        self.log = []          # (time, method, path, status)
        self.first = {"POST": True, "LIST": True, "DELETE": True}

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass

    def reply(self, status, body=None, headers=()):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.server.state.log.append((time.time(), self.command, self.path.split("?")[0], status))

    def detail(self, s):
        return {"sandboxID": s["id"], "templateID": "base", "clientID": "6532622b",
                "envdVersion": "0.5.7", "startedAt": "2026-01-01T00:00:00Z",
                "endAt": "2026-01-01T01:00:00Z", "cpuCount": 1, "memoryMB": 512,
                "diskSizeMB": 1024, "state": "running", "metadata": s["metadata"]}

    def do_GET(self):
        st = self.server.state
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/v2/sandboxes":
            with st.lock:
                first, st.first["LIST"] = st.first["LIST"], False
            if first:
                return self.reply(503, {"code": 503, "message": "busy"})
            q = urllib.parse.parse_qs(url.query)
            want = dict(urllib.parse.parse_qsl(q.get("metadata", [""])[0]))
            items = [self.detail(s) for s in st.sandboxes.values()
                     if all(s["metadata"].get(k) == v for k, v in want.items())]
            return self.reply(200, items)
        if url.path.startswith("/sandboxes/"):
            s = st.sandboxes.get(url.path.split("/")[2])
            return self.reply(200, self.detail(s)) if s else self.reply(404, {"code": 404, "message": "no"})
        self.reply(404, {"code": 404, "message": "no route"})

    def do_POST(self):
        st = self.server.state
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        if self.path == "/sandboxes":
            with st.lock:
                sid = "ifake%015d" % len(st.sandboxes)
                st.sandboxes[sid] = {"id": sid, "metadata": body.get("metadata") or {}}
                first, st.first["POST"] = st.first["POST"], False
            if first:  # created, but the answer is lost: the client cannot know
                st.log.append((time.time(), "POST", "/sandboxes", 0))
                self.close_connection = True
                self.connection.shutdown(2)
                return
            return self.reply(201, {"sandboxID": sid, "templateID": "base", "clientID": "6532622b",
                                    "envdVersion": "0.5.7"})
        self.reply(404, {"code": 404, "message": "no route"})

    def do_DELETE(self):
        st = self.server.state
        sid = self.path.split("/")[2]
        with st.lock:
            first, st.first["DELETE"] = st.first["DELETE"], False
        if first:
            return self.reply(429, {"code": 429, "message": "Rate limit exceeded"},
                              [("Retry-After", "1")])
        if st.sandboxes.pop(sid, None) is None:
            return self.reply(404, {"code": 404, "message": "no"})
        self.reply(204)

def start():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.state = State()
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv
