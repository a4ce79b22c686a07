"""A control plane and envd that leak secrets on purpose, for the masking test: tokens in the create
answer, the API key and tokens echoed in error messages and in command output.

The split case (GET /sandboxes/isplit, a command whose request names "split") cuts every secret in
two: the answer is written in several socket writes with a pause between them, each cut inside a
secret (two reads on the client); the command's stdout and stderr carry each secret in two data
events (two chunks); the error body puts the envd token across byte 512 (the -vvv excerpt limit)
and a header puts the API key across byte 2048 of its trace line."""
import base64, json, struct, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

def env(flags, obj):
    payload = json.dumps(obj).encode()
    return bytes([flags]) + struct.pack(">I", len(payload)) + payload

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    secrets = {}
    def log_message(self, *a):
        pass

    def send_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Echo-Key", self.secrets["key"])  # a header that leaks too
        self.end_headers()
        self.wfile.write(data)

    def send_split(self, status, ctype, pieces, headers=()):
        """Sends a body written in several pieces, each a separate write after a pause."""
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(sum(len(p) for p in pieces)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.flush()
        for p in pieces:
            time.sleep(0.02)
            self.wfile.write(p)
            self.wfile.flush()

    def split_404(self):
        S = self.secrets
        msg = lambda pad: ("%s token %s, key %s, traffic %s, file %s"
                           % ("p" * pad, S["envd"], S["key"], S["traffic"], S["dotenv"]))
        body = json.dumps({"code": 404, "message": msg(0)})
        pad = 512 - 16 - body.index(S["envd"])  # 16 of its 24 bytes before the excerpt's end
        data = json.dumps({"code": 404, "message": msg(pad)}).encode()
        cuts = sorted(data.index(S[k].encode()) + len(S[k]) // 2 for k in S)
        pieces = [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)])]
        long_header = "q" * (2047 - len("<   x-long: ") - 24) + S["key"]  # 24 of 32 bytes in
        self.send_split(404, "application/json", pieces, [("X-Long", long_header)])

    def split_process(self):
        S = self.secrets
        events = [env(0, {"event": {"start": {"pid": 1}}})]
        for name in sorted(S):
            half = len(S[name]) // 2
            for stream in ("stdout", "stderr"):
                for text in ("%s=%s" % (name, S[name][:half]), S[name][half:] + "\n"):
                    data = base64.b64encode(text.encode()).decode()
                    events.append(env(0, {"event": {"data": {stream: data}}}))
        events += [env(0, {"event": {"end": {"exited": True, "status": "exit status 0"}}}), env(2, {})]
        self.send_split(200, "application/connect+json", events)

    def do_GET(self):
        S = self.secrets
        if self.path.startswith("/v2/sandboxes"):
            return self.send_json(200, [])
        if self.path == "/sandboxes/isplit":
            return self.split_404()
        self.send_json(404, {"code": 404, "message": "no sandbox for key %s, basic %s, token %s, file %s"
                             % (S["key"], base64.b64encode((S["key"] + ":").encode()).decode(),
                                S["envd"], S["dotenv"])})

    def do_POST(self):
        S = self.secrets
        request = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path == "/process.Process/Start" and b"split" in request:
            return self.split_process()
        if self.path == "/sandboxes":
            return self.send_json(201, {"sandboxID": "imask", "templateID": "base",
                                        "clientID": "6532622b", "envdVersion": "0.6.4",
                                        "envdAccessToken": S["envd"], "trafficAccessToken": S["traffic"],
                                        "domain": "localhost"})
        if self.path == "/process.Process/Start":
            out = ("leak %s %s %s %s\n" % (S["key"], S["envd"], S["traffic"], S["dotenv"])).encode()
            body = (env(0, {"event": {"start": {"pid": 1}}})
                    + env(0, {"event": {"data": {"stdout": base64.b64encode(out).decode()}}})
                    + env(0, {"event": {"end": {"exited": True, "status": "exit status 0"}}})
                    + env(2, {}))
            self.send_response(200)
            self.send_header("Content-Type", "application/connect+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            return self.wfile.write(body)
        self.send_json(404, {"code": 404, "message": "no"})

    def do_DELETE(self):
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

def start(secrets):
    Handler.secrets = secrets
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv
