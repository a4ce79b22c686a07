"""A hostile E2B control plane and envd on one port, for tests/hostile: every answer is wrong in
one way, chosen by the request (the command string of process.Process/Start, or the path).
Nothing here is valid on purpose; the engine must end each call with a typed error, in bounded
time and memory."""
import json, os, socket, struct, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import abxtest

KEY = "e2b_00112233445566778899"

def env(flags, payload):
    return bytes([flags]) + struct.pack(">I", len(payload)) + payload

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass

    def send_json(self, status, obj, extra=()):
        data = json.dumps(obj).encode()
        self.send_response(status)
        for k, v in extra:
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def stream_head(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/connect+json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def do_GET(self):
        p = self.path.split("?")[0]
        if p == "/v2/sandboxes":
            return self.send_json(200, [])
        if p == "/sandboxes/ibadjson":
            body = b'{"sandboxID": "x", '  # cut short
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            return self.wfile.write(body)
        if p == "/sandboxes/ihugeheaders":
            self.send_response(200)
            for i in range(3000):  # ~300 KiB of headers
                self.send_header("X-Junk-%d" % i, "x" * 100)
            self.send_header("Content-Length", "2")
            self.end_headers()
            return self.wfile.write(b"{}")
        if p == "/sandboxes/ihugebody":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            block = b"[" + b" " * (24 * 1048576 - 1)  # over the 16 MiB control-plane cap at once
            try:
                for _ in range(8):  # ~200 MiB unless the client hangs up first
                    self.chunk(block)
                    block = b" " * len(block)
            except (BrokenPipeError, ConnectionResetError):
                return
            return
        if p == "/files" and "path=%2Fhuge" in self.path:
            self.send_response(200)  # announces 2 GiB, then trickles: the client must stop at once
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(2 * 1024 ** 3))
            self.end_headers()
            try:
                for _ in range(600):
                    self.wfile.write(b"x" * 65536)
                    self.wfile.flush()
                    time.sleep(0.05)
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True
            return
        if p == "/sandboxes/isilent":
            time.sleep(30)  # never answers in time
            return
        self.send_json(404, {"code": 404, "message": "no"})

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        p = self.path.split("?")[0]
        if p == "/sandboxes":
            return self.send_json(201, {"sandboxID": "ihostile", "templateID": "base",
                                        "clientID": "6532622b", "envdVersion": "0.5.7"})
        if p == "/files":  # the edge's answer to an upload over its limit
            return self.send_json(413, {"code": 413, "message": "request body too large"})
        if p == "/process.Process/Start":
            req = json.loads(body[5:])
            mode = req["process"]["args"][-1]
            self.stream_head()
            start = env(0, b'{"event":{"start":{"pid":7}}}')
            try:
                if mode == "huge-length":
                    self.chunk(start + bytes([0]) + struct.pack(">I", 0xFFFFFFF0) + b"xx")
                elif mode == "truncated":
                    self.chunk(start + bytes([0]) + struct.pack(">I", 100) + b"abc")
                elif mode == "compressed":
                    self.chunk(start + env(1, b"{}"))
                elif mode == "bad-json":
                    self.chunk(start + env(0, b'{"event": {"data": '))
                elif mode == "bad-utf8":
                    self.chunk(start + env(0, b'{"event":{"data":{"stdout":"\xff\xfe"}}}'))
                elif mode == "bad-base64":
                    self.chunk(start + env(0, b'{"event":{"data":{"stdout":"aGkK"}}}')
                               + env(0, b'{"event":{"data":{"stdout":"!!not base64!!"}}}')
                               + env(0, b'{"event":{"end":{"exited":true}}}') + env(2, b"{}"))
                elif mode == "spaced-data":
                    # Go's protojson may put a space after ':' and ','; abxlua's compact fast path
                    # (stream:next_data) must hand these to its JSON decoder, in order
                    self.chunk(start + env(0, b'{"event":{"data":{"stdout":"aGkK"}}}')
                               + env(0, b'{"event": {"data": {"stdout": "dGhlcmUK"}}}')
                               + env(0, b'{"event":{"data":{"stderr":"ZQo="}}}')
                               + env(0, b'{"event":{"data":{"stdout":"Ynll"}}}')
                               + env(0, b'{"event":{"end":{"exitCode":3,"exited":true}}}')
                               + env(2, b"{}"))
                elif mode == "bad-event":
                    self.chunk(start + env(0, b'{"event":{"data":"aGkK"}}')
                               + env(0, b'{"event":{"end":{"exited":true}}}') + env(2, b"{}"))
                elif mode == "no-end":
                    self.chunk(start + env(0, b'{"event":{"end":{"exited":true}}}'))
                elif mode == "endless":
                    self.chunk(start)
                    ka = env(0, b'{"event":{"keepalive":{}}}') * 1000
                    while True:  # until the client gives up
                        self.chunk(ka)
                        time.sleep(0.01)
                elif mode == "first-not-start":
                    self.chunk(env(0, b'{"event":{"data":{"stdout":"aGkK"}}}'))
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True
            return
        self.send_json(404, {"code": 404, "message": "no"})

    def do_DELETE(self):
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

def start():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv

def run_case(abx, case, jobs, timeout):
    """Runs `abx run case -j jobs` under /usr/bin/time against a new hostile server, from a new
    project whose provider `hostile` is that server (API key KEY, request_timeout 8 s,
    test_timeout 30 s); returns (exit code, output, peak RSS in MiB or None)."""
    srv = start()
    url = "http://127.0.0.1:%d" % srv.server_address[1]
    try:
        proj = abxtest.project("defaults:\n  request_timeout: 8\n  test_timeout: 30\n"
                               + abxtest.remote_config("hostile"))
        env = dict(os.environ, ABX_SANDBOX_API_KEY=KEY, ABX_SANDBOX_BASE_URL=url,
                   E2B_SANDBOX_URL=url, NO_COLOR="1")
        return abxtest.run_timed([abx, "run", case, "-j", str(jobs)], cwd=proj, env=env,
                                 timeout=timeout)
    finally:
        srv.shutdown()
