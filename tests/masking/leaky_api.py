"""A control plane and envd that leak secrets on purpose, for the masking test: tokens in the create
answer, the API key and tokens echoed in error messages and in command output."""
import base64, json, struct, threading
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

    def do_GET(self):
        S = self.secrets
        if self.path.startswith("/v2/sandboxes"):
            return self.send_json(200, [])
        self.send_json(404, {"code": 404, "message": "no sandbox for key %s, basic %s, token %s, file %s"
                             % (S["key"], base64.b64encode((S["key"] + ":").encode()).decode(),
                                S["envd"], S["dotenv"])})

    def do_POST(self):
        S = self.secrets
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
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
