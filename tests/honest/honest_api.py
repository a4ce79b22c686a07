"""A fake E2B control plane that lies or stumbles in one way, chosen by `mode`, for tests/honest
(issue 27 part 4: the engine stays honest when the platform lies or stumbles):

  repeat-token  GET /v2/sandboxes ignores nextToken: every page is the first (limit items) with
                X-Next-Token "tok-same" while more remain (CubeSandbox#1792)
  repeat-ids    while more remain, every page has a new next token but the first page's items
  endless       every page holds a sandbox never seen and a new next token, forever
  v2-405        POST /v2/sandboxes answers 405 {"code":405,"message":"method not allowed"}
                (CubeSandbox#1784); POST /sandboxes works
  bare-502:N    every Nth GET /sandboxes/{id} is a bare HTML 502 (e2b-dev/E2B#1262); N = 1: all
  kill-noop     DELETE /sandboxes/{id} answers 204 and kills nothing (openkruise/agents#535)
  filter-ignored GET /v2/sandboxes ignores the metadata filter: it lists every sandbox
                (agent-sandbox PR#11)
  honest        none of these

Sandboxes are records only (no envd). state.log holds (method, path, status) per request."""
import json, threading, urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HTML_502 = (b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad "
            b"Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")


class State:
    def __init__(self, mode):
        self.mode = mode
        self.lock = threading.Lock()
        self.sandboxes = {}   # id -> {"id", "metadata"}
        self.log = []         # (method, path, status)
        self.gets = 0         # GET /sandboxes/{id} so far
        self.pages = 0        # GET /v2/sandboxes so far


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in several writes: no 40 ms waits

    def log_message(self, *a):
        pass

    def send(self, status, data, ctype, headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        with self.server.state.lock:
            self.server.state.log.append((self.command, self.path.split("?")[0], status))

    def reply(self, status, body=None, headers=()):
        self.send(status, b"" if body is None else json.dumps(body).encode(), "application/json",
                  headers)

    def detail(self, s):
        return {"sandboxID": s["id"], "templateID": "base", "clientID": "6532622b",
                "envdVersion": "0.5.7", "startedAt": "2026-01-01T00:00:00Z",
                "endAt": "2026-01-01T01:00:00Z", "cpuCount": 1, "memoryMB": 512,
                "diskSizeMB": 1024, "state": "running", "metadata": s["metadata"]}

    def list_page(self, url):
        st = self.server.state
        q = urllib.parse.parse_qs(url.query)
        want = dict(urllib.parse.parse_qsl(q.get("metadata", [""])[0]))
        if st.mode == "filter-ignored":
            want = {}
        limit = int(q.get("limit", ["100"])[0])
        token = q.get("nextToken", [None])[0]
        with st.lock:
            st.pages += 1
            n = st.pages
            items = [self.detail(s) for s in sorted(st.sandboxes.values(), key=lambda s: s["id"])
                     if all(s["metadata"].get(k) == v for k, v in want.items())]
        if st.mode == "endless":
            s = {"id": "iendless%012d" % n, "metadata": want}
            return self.reply(200, [self.detail(s)], [("X-Next-Token", "tok-%d" % n)])
        if st.mode == "repeat-ids":  # a new token while more remain, but always the first page
            more = [("X-Next-Token", "tok-%d" % n)] if len(items) > limit else []
            return self.reply(200, items[:limit], more)
        start = 0
        if token and st.mode != "repeat-token":
            start = int(token.split("-")[1])
        page = items[start:start + limit]
        headers = []
        if start + limit < len(items):
            nxt = "tok-same" if st.mode == "repeat-token" else "at-%d" % (start + limit)
            headers.append(("X-Next-Token", nxt))
        self.reply(200, page, headers)

    def do_GET(self):
        st = self.server.state
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/v2/sandboxes":
            return self.list_page(url)
        if url.path.startswith("/sandboxes/"):
            with st.lock:
                st.gets += 1
                n = st.gets
            if st.mode.startswith("bare-502:") and n % int(st.mode.split(":")[1]) == 0:
                return self.send(502, HTML_502, "text/html")
            s = st.sandboxes.get(url.path.split("/")[2])
            if s:
                return self.reply(200, self.detail(s))
            return self.reply(404, {"code": 404, "message": "sandbox not found"})
        self.reply(404, {"code": 404, "message": "no route"})

    def do_POST(self):
        st = self.server.state
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        path = urllib.parse.urlsplit(self.path).path
        if path == "/v2/sandboxes" and st.mode == "v2-405":
            return self.reply(405, {"code": 405, "message": "method not allowed"})
        if path in ("/sandboxes", "/v2/sandboxes"):
            with st.lock:
                sid = "ifake%015d" % (len(st.sandboxes) + len(st.log))
                st.sandboxes[sid] = {"id": sid, "metadata": body.get("metadata") or {}}
            return self.reply(201, {"sandboxID": sid, "templateID": "base", "clientID": "6532622b",
                                    "envdVersion": "0.5.7", "envdAccessToken": "tok" + sid})
        self.reply(404, {"code": 404, "message": "no route"})

    def do_DELETE(self):
        st = self.server.state
        sid = urllib.parse.urlsplit(self.path).path.split("/")[2]
        with st.lock:
            known = sid in st.sandboxes
            if known and st.mode != "kill-noop":
                del st.sandboxes[sid]
        if not known:
            return self.reply(404, {"code": 404, "message": "sandbox not found"})
        self.reply(204)


def start(mode):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.state = State(mode)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv
