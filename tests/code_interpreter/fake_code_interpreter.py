"""A fake E2B control plane and code interpreter (port 49999) on one port, for
tests/code_interpreter. The engine reaches it as a remote provider: the control plane at the API URL,
the code interpreter through the ingress scheme of docs/protocol/e2b-control-plane.md §7 (either
E2b-Sandbox-Id / E2b-Sandbox-Port headers, or Host 49999-<id>.localhost). It speaks the /execute,
/contexts API of docs/protocol/envd-protocol.md §10 the way the real server (FastAPI) does: NDJSON
lines written with json.dumps and chunked transfer coding, plain-text errors.

What /execute streams is chosen by the code string (its first word; arguments after ':'), so each
Lua case asks for one behaviour: well-formed streams written at once, byte by byte or at odd
boundaries, and broken ones (no end_of_execution, invalid JSON, a 64 MiB line, stalls).
GET /_stats/<sandbox id> tells how many bytes a `flood` execution has written so far (the
backpressure case compares it with what the client has read)."""
import json, re, socket, threading, time, uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MiB = 1024 * 1024
TS = "2026-11-30T04:00:00.123456Z"
LOCK = threading.Lock()
SANDBOXES = {}  # id -> {"token", "traffic" (or None), "contexts": {id: Context}}
STATS = {}      # sandbox id -> {"sent": bytes written by a flood, "done": bool}

def line(obj):
    return (json.dumps(obj) + "\n").encode()

def normal_lines(count=3):
    """The stream of a well-formed execution, as lib/abx/client/code.lua cases expect it."""
    return [
        line({"type": "number_of_executions", "execution_count": count}),
        line({"type": "stdout", "text": "hello\n", "timestamp": TS}),
        line({"type": "stderr", "text": "warn\n", "timestamp": TS}),
        line({"type": "stdout", "text": "h\u00e9llo w\u00f6rld \u2713\n", "timestamp": TS}),
        line({"type": "result", "is_main_result": False, "png": "aGk=", "html": "<b>hi</b>",
              "extra": {"application/x-custom": "y"}}),
        line({"type": "result", "is_main_result": True, "text": "2", "json": {"a": 1}}),
        line({"type": "end_of_execution"}),
    ]

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    # --- plumbing ------------------------------------------------------------------------------
    def send_body(self, status, body, ctype="application/json"):
        data = body if isinstance(body, bytes) else body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_json(self, status, obj):
        self.send_body(status, json.dumps(obj))

    def send_text(self, status, text):
        self.send_body(status, text, "text/plain; charset=utf-8")

    def chunk(self, data):
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def stream_head(self):
        # no Content-Type: FastAPI's StreamingResponse sets none (reference §10, [INFERRED])
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def stream_end(self):
        self.wfile.write(b"0\r\n\r\n")
        self.close_connection = True

    def read_body(self):
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def ingress(self):
        """(sandbox id, routing) when the request is for a sandbox's port, else None. Answers and
        returns False when it is for a sandbox but not routed or authorized as the SDKs do it."""
        port, sid, routing = self.headers.get("E2b-Sandbox-Port"), self.headers.get("E2b-Sandbox-Id"), "headers"
        if port is None:
            m = re.match(r"^(\d+)-([A-Za-z0-9]+)\.localhost(:\d+)?$", self.headers.get("Host", ""))
            if not m:
                return None
            port, sid, routing = m.group(1), m.group(2), "host"
        if port != "49999":
            self.send_text(421, "port %s is not the code interpreter" % port)
            return False
        sbx = SANDBOXES.get(sid)
        if sbx is None:
            self.send_json(502, {"code": 502, "message": "The sandbox was not found"})
            return False
        if self.headers.get("X-Access-Token") != sbx["token"]:
            self.send_json(401, {"code": 401, "message": "missing or invalid access token"})
            return False
        if sbx["traffic"] and self.headers.get("e2b-traffic-access-token") != sbx["traffic"]:
            self.send_text(403, "missing or invalid traffic access token")
            return False
        return sid, routing

    # --- control plane -------------------------------------------------------------------------
    def do_GET(self):
        got = self.ingress()
        if got is False:
            return
        p = self.path.split("?")[0]
        if got:
            sbx = SANDBOXES[got[0]]
            if p == "/contexts":
                with LOCK:
                    return self.send_json(200, list(sbx["contexts"].values()))
            if p == "/health":
                return self.send_json(200, "OK")
            return self.send_text(404, "Not Found")
        if p == "/v2/sandboxes":
            return self.send_json(200, [])
        if p.startswith("/_stats/"):
            with LOCK:
                return self.send_json(200, STATS.get(p[len("/_stats/"):], {"sent": 0, "done": False}))
        self.send_json(404, {"code": 404, "message": "not found"})

    def do_DELETE(self):
        got = self.ingress()
        if got is False:
            return
        if got:
            ctx = self.path.split("?")[0][len("/contexts/"):]
            with LOCK:
                found = SANDBOXES[got[0]]["contexts"].pop(ctx, None)
            if found is None:
                return self.send_text(404, "Context %s not found" % ctx)
            return self.send_json(200, None)
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        body = self.read_body()  # first: an answer that leaves it unread garbles the connection
        got = self.ingress()
        if got is False:
            return
        p = self.path.split("?")[0]
        if not got:
            if p == "/sandboxes":
                req = json.loads(body or b"{}")
                sid = "icode" + uuid.uuid4().hex[:12]
                ans = {"sandboxID": sid, "templateID": req.get("templateID", "base"),
                       "clientID": "6532622b", "envdVersion": "0.5.7",
                       "envdAccessToken": "tok" + uuid.uuid4().hex}
                traffic = None
                if (req.get("network") or {}).get("allowPublicTraffic") is False:
                    traffic = "trf" + uuid.uuid4().hex
                    ans["trafficAccessToken"] = traffic
                with LOCK:
                    SANDBOXES[sid] = {"token": ans["envdAccessToken"], "traffic": traffic,
                                      "contexts": {}}
                return self.send_json(201, ans)
            return self.send_json(404, {"code": 404, "message": "not found"})
        sid, routing = got
        sbx = SANDBOXES[sid]
        if p == "/contexts":
            req = json.loads(body or b"{}")
            language = (req.get("language") or "python").strip().lower()
            if language == "fail":
                return self.send_text(500, "Failed to create context: kernel died")
            ctx = {"id": "ctx-" + uuid.uuid4().hex[:8], "language": language,
                   "cwd": req.get("cwd") or "/home/user"}
            with LOCK:
                sbx["contexts"][ctx["id"]] = ctx
            return self.send_json(200, ctx)
        m = re.match(r"^/contexts/([^/]+)/restart$", p)
        if m:
            if m.group(1) not in sbx["contexts"]:
                return self.send_text(404, "Context %s not found" % m.group(1))
            return self.send_json(200, None)
        if p == "/execute":
            return self.execute(sid, routing, body)
        self.send_text(404, "Not Found")

    # --- /execute ------------------------------------------------------------------------------
    def execute(self, sid, routing, body):
        try:
            req = json.loads(body)
        except ValueError:
            return self.send_json(422, {"detail": [{"msg": "invalid JSON"}]})
        if not isinstance(req, dict) or not isinstance(req.get("code"), str):
            return self.send_json(422, {"detail": [{"loc": ["body", "code"], "msg": "field required"}]})
        if req.get("context_id") and req.get("language"):
            return self.send_text(400, "Only one of context_id or language can be provided")
        ctx = req.get("context_id")
        if ctx and ctx not in SANDBOXES[sid]["contexts"]:
            return self.send_text(404, "Context %s not found" % ctx)
        mode, _, arg = req["code"].partition(":")
        if mode == "slow-headers":
            time.sleep(float(arg))
        try:
            self.stream_head()
            self.stream(mode, arg, sid, routing, req)
            self.stream_end()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def stream(self, mode, arg, sid, routing, req):
        if mode in ("normal", "slow-headers"):
            return self.chunk(b"".join(normal_lines()))
        if mode == "slow-body":  # keepalives for arg seconds, then a normal execution
            until = time.time() + float(arg)
            while time.time() < until:
                self.chunk(line({"type": "keepalive"}))
                time.sleep(0.25)
            return self.chunk(b"".join(normal_lines()))
        if mode == "bytewise":  # every byte in its own write and chunk
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for b in b"".join(normal_lines()):
                self.chunk(bytes([b]))
                time.sleep(0.0005)
            return
        if mode == "odd":  # CRLF endings, blank lines, writes of 7, 1, 13, 2, 1 bytes
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            data = b"\r\n" + b"\n\r\n".join(l.rstrip(b"\n") for l in normal_lines()) + b"\r\n"
            sizes, i, at = (7, 1, 13, 2, 1), 0, 0
            while at < len(data):
                self.chunk(data[at:at + sizes[i % len(sizes)]])
                at += sizes[i % len(sizes)]
                i += 1
                time.sleep(0.001)
            return
        if mode == "ignored":  # keepalives, unknown types and untyped lines around the output
            return self.chunk(line({"type": "keepalive"}) +
                              line({"type": "number_of_executions", "execution_count": 1}) +
                              line({"type": "future_kind", "text": "not output"}) +
                              line({"type": "keepalive"}) + line({"no_type": True}) +
                              line({"type": 7}) + line([]) +
                              line({"type": "stdout", "text": "after\n", "timestamp": TS}) +
                              line({"type": "unexpected_end_of_execution"}) +
                              line({"type": "end_of_execution"}))
        if mode == "error":
            return self.chunk(line({"type": "number_of_executions", "execution_count": 2}) +
                              line({"type": "stdout", "text": "before\n", "timestamp": TS}) +
                              line({"type": "error", "name": "ZeroDivisionError",
                                    "value": "division by zero",
                                    "traceback": "Traceback (most recent call last):\n  1/0\n"}) +
                              line({"type": "end_of_execution"}))
        if mode == "echo":  # what the server received, as one stdout line
            seen = {"body": req, "routing": routing,
                    "content_type": self.headers.get("Content-Type"),
                    "traffic": self.headers.get("e2b-traffic-access-token") is not None}
            return self.chunk(line({"type": "stdout", "text": json.dumps(seen)}) +
                              line({"type": "end_of_execution"}))
        if mode == "no-end":
            return self.chunk(b"".join(normal_lines()[:-1]))
        if mode == "cut":  # the body ends inside a line
            return self.chunk(b"".join(normal_lines()[:2]) + b'{"type": "stdout", "te')
        if mode == "bad-json":
            return self.chunk(b"".join(normal_lines()[:2]) + b'{"type": "stdout", "text": }\n' +
                              line({"type": "end_of_execution"}))
        if mode == "not-object":
            return self.chunk(normal_lines()[0] + b"42\n" + line({"type": "end_of_execution"}))
        if mode == "array":
            return self.chunk(normal_lines()[0] + b'[{"type": "stdout"}]\n' +
                              line({"type": "end_of_execution"}))
        if mode == "stdout-no-text":
            return self.chunk(line({"type": "stdout", "timestamp": TS}) +
                              line({"type": "end_of_execution"}))
        if mode == "unterminated-end":
            return self.chunk(b"".join(normal_lines()).rstrip(b"\n"))
        if mode == "after-end":
            return self.chunk(b"".join(normal_lines()) +
                              line({"type": "stdout", "text": "ignored\n"}) + b"not json\n")
        if mode == "big-line":  # 15 MiB of stdout in one line: under the 16 MiB bound
            self.chunk(b'{"type": "stdout", "text": "')
            for _ in range(15):
                self.chunk(b"y" * MiB)
            return self.chunk(b'"}\n' + line({"type": "end_of_execution"}))
        if mode == "huge-line":  # one valid 64 MiB line: over the bound
            self.chunk(b'{"type": "stdout", "text": "')
            for _ in range(64):
                self.chunk(b"x" * MiB)
            return self.chunk(b'"}\n' + line({"type": "end_of_execution"}))
        # The next three outlast any client timeout a case sets by far (30 s): a client that gives up
        # in time says so with Timeout, one that does not sees a body without end_of_execution.
        if mode == "stall":  # a first line, then silence
            self.chunk(normal_lines()[0])
            time.sleep(30)
            return
        if mode == "keepalive-forever":
            until = time.time() + 30
            while time.time() < until:
                self.chunk(line({"type": "keepalive"}))
                time.sleep(0.2)
            return
        if mode == "flood":  # arg MiB of 16 KiB stdout lines, as fast as the client takes them
            one = line({"type": "stdout", "text": ""})
            one = line({"type": "stdout", "text": "f" * (16384 - len(one))})  # 16 KiB a line
            block = one * 4
            with LOCK:
                STATS[sid] = {"sent": 0, "done": False}
            for _ in range(int(arg) * MiB // len(block)):
                self.chunk(block)
                with LOCK:
                    STATS[sid]["sent"] += len(block)
            self.chunk(line({"type": "end_of_execution"}))
            with LOCK:
                STATS[sid]["done"] = True
            return
        self.chunk(line({"type": "error", "name": "UnknownMode", "value": mode, "traceback": ""}) +
                   line({"type": "end_of_execution"}))

def start():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv

if __name__ == "__main__":
    s = start()
    print("listening on http://127.0.0.1:%d" % s.server_address[1], flush=True)
    threading.Event().wait()
