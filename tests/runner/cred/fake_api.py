#!/usr/bin/env python3
"""A fake E2B control plane for tests/runner/credentials.sh: GET /v2/sandboxes answers 200 [] to
the right X-API-Key and E2B's 401 {code, message} to any other (docs/protocol/e2b-control-plane.md
§1.2); every other route is a 404. Usage: fake_api.py PORT_FILE KEY (writes its port, then serves
until killed). Each request is logged on stdout as "METHOD PATH KEY-OK|KEY-BAD"."""
import http.server
import json
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    def _send(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        ok = self.headers.get("X-API-Key") == KEY
        print(self.command, self.path, "KEY-OK" if ok else "KEY-BAD", flush=True)
        if not ok:
            return self._send(401, {"code": 401, "message": "Invalid API key"})
        if self.path.split("?")[0] == "/v2/sandboxes":
            return self._send(200, [])
        return self._send(404, {"code": 404, "message": "not found"})

    def log_message(self, *args):
        pass


KEY = sys.argv[2]
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[1], "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()
