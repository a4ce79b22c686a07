#!/usr/bin/env python3
"""The client speaks the v2 create/connect routes to a provider with the v2_routes capability and
the v1 routes to the others (issue 10 part 7; docs/protocol/e2b-v2-and-peers.md §1.1-1.3). A fake
control plane records every request; routes_case.lua runs under both configs. Usage: test_routes.py
ABXLUA"""
import json, os, subprocess, sys, threading, urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import check, finish, project, remote_config

abx = os.path.abspath(sys.argv[1])
here = os.path.dirname(os.path.abspath(__file__))
log = []  # (method, path, body)
live = set()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, status, body=None):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def sandbox(self, sid, status):
        self.reply(status, {"sandboxID": sid, "templateID": "base", "clientID": "6532622b",
                            "envdVersion": "0.6.4", "envdAccessToken": "tok0123456789abcdef",
                            "domain": "localhost"})

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(n) or b"{}")
        path = urllib.parse.urlsplit(self.path).path
        log.append(("POST", path, body))
        if path in ("/sandboxes", "/v2/sandboxes"):
            sid = "ifake%015d" % len(log)
            live.add(sid)
            return self.sandbox(sid, 201)
        parts = path.strip("/").split("/")
        if parts[-1] == "connect" and parts[-2] in live:
            return self.sandbox(parts[-2], 200)
        self.reply(404, {"code": 404, "message": "no route " + path})

    def do_DELETE(self):
        path = urllib.parse.urlsplit(self.path).path
        log.append(("DELETE", path, None))
        sid = path.rsplit("/", 1)[-1]
        if sid in live:
            live.discard(sid)
            return self.reply(204)
        self.reply(404, {"code": 404, "message": "gone"})

    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path
        log.append(("GET", path, None))
        self.reply(200, []) if path == "/v2/sandboxes" else self.reply(404, {"code": 404, "message": "no"})


srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=srv.serve_forever, daemon=True).start()
env = dict(os.environ, ABX_SANDBOX_API_KEY="e2b_0123456789abcdef",
           ABX_SANDBOX_BASE_URL="http://127.0.0.1:%d" % srv.server_address[1], NO_COLOR="1")
for caps, v2 in (("[v2_routes]", True), ("[pause]", False)):
    del log[:]
    proj = project(remote_config("fake", "    capabilities: %s\n" % caps))
    p = subprocess.run([abx, "run", os.path.join(here, "routes_case.lua")], cwd=proj, env=env,
                       capture_output=True, text=True, timeout=120)
    print(p.stdout + p.stderr)
    label = "capabilities %s" % caps
    check(p.returncode == 0, "%s: the case passed (exit %d)" % (label, p.returncode))
    creates = [e for e in log if e[0] == "POST" and e[1].endswith("sandboxes")]
    connects = [e for e in log if e[0] == "POST" and e[1].endswith("/connect")]
    want_create = "/v2/sandboxes" if v2 else "/sandboxes"
    check(len(creates) == 1 and creates[0][1] == want_create,
          "%s: create is POST %s (%r)" % (label, want_create, [e[1] for e in creates]))
    if creates:
        b = creates[0][2]
        check(("secure" in b) != v2, "%s: secure is sent only on v1 (%r)" % (label, b))
        check(b.get("autoPause") is True and b.get("autoResume") == {"enabled": True},
              "%s: autoPause and autoResume {enabled} are sent (%r)" % (label, b))
    check(len(connects) == (2 if v2 else 1) and
          all(e[1].startswith("/v2/sandboxes/" if v2 else "/sandboxes/") for e in connects),
          "%s: connect uses the %s route (%r)" % (label, "v2" if v2 else "v1", [e[1] for e in connects]))
    if v2 and len(connects) == 2:
        check(connects[0][2] == {"timeout": 60} and connects[1][2].get("memory") is False,
              "v2 connect sends timeout, and memory only when given (%r)" % ([c[2] for c in connects],))
    check(not live, "%s: no sandbox left on the fake platform" % label)
srv.shutdown()
finish()
