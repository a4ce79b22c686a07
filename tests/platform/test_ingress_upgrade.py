#!/usr/bin/env python3
"""Protocol upgrades through the ingress (platform/ingress/ingress_upgrade.c, docs/PLATFORM.md "Edge"):
a WebSocket-style request (Connection: Upgrade, Upgrade: websocket) to a port of a sandbox whose
public traffic is off, answered by a server in the sandbox (python3, the host's), over plain HTTP
and over `serve --tls`. Checks: the 101 and its headers reach the client; bytes the server sent
with its head (before the client spoke) arrive first; bytes both ways after it are relayed
unchanged (a short echo and 1 MiB, 256 KiB over TLS); a client half-close reaches the server,
whose last words still arrive; a non-101 answer to an upgrade request is an ordinary response
(status, headers, body); a 101 naming another protocol is the edge's 502; without e2b-traffic-access-token, or with
a wrong one, the upgrade is refused with 403 and never reaches the server. Then serve stops and
nothing of it is left. Exit 1 when a check failed, 77 when skipped (not root, no bwrap).
Usage: test_ingress_upgrade.py ABXLUA"""
import base64, http.client, json, os, signal, socket, ssl, struct, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import abxtest
from abxtest import check, finish

abxtest.needs_platform()
BIN = os.path.abspath(sys.argv[1])
ENVD = 49983
PORT = 8080
TLS_DOMAIN = "e2b.localhost"

# The server in the sandbox: /ws answers 101 websocket, sends "hello\n" in the same write as its
# head, then echoes until the client half-closes, then says "bye <n>\n" (n: bytes it got) and
# closes; /plain answers 200 with a body and a header of its own to the upgrade request; /other
# answers 101 naming another protocol. Every request's path and token header go to /tmp/seen.
SERVER = r"""
import socket, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 8080)); s.listen(16)
def h(c):
    head = b""
    while b"\r\n\r\n" not in head:
        d = c.recv(4096)
        if not d: return
        head += d
    head, rest = head.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    path = lines[0].split()[1]
    hd = {l.split(":", 1)[0].strip().lower(): l.split(":", 1)[1].strip() for l in lines[1:]}
    open("/tmp/seen", "a").write("%s upgrade=%s token=%s\n" % (path, hd.get("upgrade"),
                                 "e2b-traffic-access-token" in hd))
    if path == "/plain":
        b = b"no upgrade here"
        c.sendall(b"HTTP/1.1 200 OK\r\nX-From-Sandbox: yes\r\nContent-Type: text/plain\r\n"
                  b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(b) + b)
        c.close(); return
    if path == "/other":
        c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n")
        c.close(); return
    c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Accept: " + hd.get("sec-websocket-key", "").encode() + b"\r\n"
              b"X-From-Sandbox: yes\r\n\r\nhello\n")
    n = len(rest)
    if rest: c.sendall(rest)
    while True:
        d = c.recv(65536)
        if not d: break
        n += len(d); c.sendall(d)
    c.sendall(b"bye %d\n" % n)
    c.close()
while True:
    c, _ = s.accept(); threading.Thread(target=h, args=(c,), daemon=True).start()
"""


class Edge:
    """How the test reaches one serve: plain (127.0.0.1, Host <port>-<id>.localhost:<port>) or TLS
    (names under e2b.localhost, the state dir's CA)."""

    def __init__(self, ready, tls):
        self.ready, self.tls, self.port = ready, tls, ready["port"]
        self.domain = TLS_DOMAIN if tls else "localhost"
        self.ctx = ssl.create_default_context(cafile=ready["ca_cert"]) if tls else None
        self.envd_token = None  # the sandbox's (secure: true), for envd

    def host(self, port, sid):
        return "%d-%s.%s" % (port, sid, self.domain)

    def sock(self, host):
        raw = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        return self.ctx.wrap_socket(raw, server_hostname=host) if self.tls else raw

    def api(self, method, path, body=None):
        c = (http.client.HTTPSConnection("api." + TLS_DOMAIN, self.port, context=self.ctx, timeout=60)
             if self.tls else http.client.HTTPConnection("127.0.0.1", self.port, timeout=60))
        c.request(method, path, json.dumps(body) if body is not None else None,
                  {"X-API-Key": self.ready["api_key"], "Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, json.loads(data) if data else None

    def run_in(self, sid, cmd):
        """`bash -c cmd` as user through envd's process.Process/Start by host name
        (docs/protocol/envd-protocol.md §2.3); returns (exit code, stdout)."""
        msg = json.dumps({"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}}).encode()
        host = self.host(ENVD, sid)
        s = self.sock(host)
        body = b"\x00" + struct.pack(">I", len(msg)) + msg
        s.sendall(("POST /process.Process/Start HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: "
                   "application/connect+json\r\nConnect-Protocol-Version: 1\r\nAuthorization: "
                   "Basic %s\r\nX-Access-Token: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                   % (host, self.port, base64.b64encode(b"user:").decode(), self.envd_token,
                      len(body))).encode() + body)
        data = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
        s.close()
        head, data = data.split(b"\r\n\r\n", 1)
        if b" 200 " not in head.split(b"\r\n")[0]:
            raise AssertionError("Start answered %r" % head[:200])
        if b"chunked" in head.lower():
            out, rest = b"", data
            while rest:
                n, rest = rest.split(b"\r\n", 1)
                n = int(n, 16)
                out, rest = out + rest[:n], rest[n + 2:]
                if n == 0:
                    break
            data = out
        out, code = b"", None
        while len(data) >= 5:
            flags, n = struct.unpack(">BI", data[:5])
            ev = json.loads(data[5:5 + n] or b"{}").get("event", {}) if not flags & 2 else {}
            data = data[5 + n:]
            out += base64.b64decode(ev.get("data", {}).get("stdout", ""))
            code = ev["end"].get("exitCode", 0) if "end" in ev else code
        return code, out.decode(errors="replace")


def read_head(s):
    """(status, {header: value} lowercased names, bytes after the head)"""
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(65536)
        if not d:
            break
        buf += d
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode(errors="replace").split("\r\n")
    status = int(lines[0].split()[1]) if len(lines[0].split()) > 1 else 0
    hd = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hd[k.strip().lower()] = v.strip()
    return status, hd, rest


def read_until(s, want, have=b"", seconds=20):
    end = time.time() + seconds
    s.settimeout(seconds)
    while want not in have and time.time() < end:
        d = s.recv(65536)
        if not d:
            break
        have += d
    return have


def upgrade(edge, sid, path, token):
    host = edge.host(PORT, sid)
    s = edge.sock(host)
    extra = "e2b-traffic-access-token: %s\r\n" % token if token else ""
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: keep-alive, Upgrade\r\n"
               "Upgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
               "Sec-WebSocket-Version: 13\r\n%s\r\n" % (path, host, edge.port, extra)).encode())
    return s


def checks(edge, what):
    st, j = edge.api("POST", "/sandboxes", {"templateID": "base", "timeout": 120, "secure": True,
                                            "network": {"allowPublicTraffic": False}})
    check(st == 201, "%s: create with allowPublicTraffic false: %d" % (what, st))
    sid, token = (j or {}).get("sandboxID", "inone"), (j or {}).get("trafficAccessToken")
    edge.envd_token = (j or {}).get("envdAccessToken")
    check(bool(token), "%s: the sandbox has a traffic access token" % what)
    code, _ = edge.run_in(sid, "cat > /tmp/srv.py <<'EOF'\n%s\nEOF\n"
                          "setsid nohup python3 /tmp/srv.py >/tmp/srv.log 2>&1 & "
                          "for i in $(seq 50); do ss -Htln 'sport = :8080' | grep -q . && exit 0; "
                          "sleep 0.1; done; exit 1" % SERVER)
    check(code == 0, "%s: the upgrade server listens on 8080 in the sandbox (exit %r)" % (what, code))

    # the upgrade, relayed both ways
    s = upgrade(edge, sid, "/ws", token)
    status, hd, rest = read_head(s)
    check(status == 101 and hd.get("upgrade", "").lower() == "websocket"
          and "upgrade" in hd.get("connection", "").lower(),
          "%s: 101 with Upgrade: websocket and Connection: Upgrade (%d %s)" % (what, status, hd))
    check(hd.get("sec-websocket-accept") == "dGhlIHNhbXBsZSBub25jZQ==" and hd.get("x-from-sandbox") == "yes",
          "%s: the server's own headers of the 101 are passed on" % what)
    got = read_until(s, b"hello\n", rest)
    check(got == b"hello\n", "%s: the bytes the server sent with its head arrive first: %r" % (what, got))
    s.sendall(b"ping 1\n")
    got = read_until(s, b"ping 1\n")
    check(got == b"ping 1\n", "%s: a short message is echoed: %r" % (what, got))
    # 1 MiB plain; 256 KiB over TLS, whose upgraded side costs libmicrohttpd about 1.6 s of CPU
    # per MiB (docs/PLATFORM.md): on a busy runner 1 MiB did not get through in 30 s (issue 22).
    # The property is the bytes, unchanged; the 90 s is only the guard against a hang.
    big = os.urandom((256 << 10) if edge.tls else (1 << 20))
    t0 = time.time()
    s.sendall(big)
    back, end = b"", time.time() + 90
    s.settimeout(90)
    while len(back) < len(big) and time.time() < end:
        d = s.recv(1 << 16)
        if not d:
            break
        back += d
    check(back == big, "%s: %d KiB relayed both ways unchanged (%d bytes back in %.2f s)"
          % (what, len(big) >> 10, len(back), time.time() - t0))
    if edge.tls:
        s.close()  # TLS has no half-close (a close_notify ends the session): checked plain only
    else:
        s.shutdown(socket.SHUT_WR)
        got = read_until(s, b"\n", seconds=20)
        want = b"bye %d\n" % (len(b"ping 1\n") + len(big))
        check(got == want, "%s: the client's half-close reaches the server, whose last words "
              "arrive: %r" % (what, got))
        s.settimeout(10)
        check(s.recv(10) == b"", "%s: then the connection ends" % what)
        s.close()

    # a non-101 answer is an ordinary response
    s = upgrade(edge, sid, "/plain", token)
    status, hd, rest = read_head(s)
    body = read_until(s, b"here", rest, seconds=10)
    check(status == 200 and hd.get("x-from-sandbox") == "yes" and body == b"no upgrade here",
          "%s: a 200 to the upgrade request is an ordinary response (%d %s %r)" % (what, status, hd, body))
    s.close()
    # a 101 naming another protocol: the edge's 502
    s = upgrade(edge, sid, "/other", token)
    status, hd, rest = read_head(s)
    body = read_until(s, b"}", rest, seconds=10)
    check(status == 502 and b"answered badly" in body,
          "%s: a 101 naming another protocol is a 502 (%d %r)" % (what, status, body[:160]))
    s.close()

    # the traffic token: missing or wrong, 403 before the sandbox sees anything
    _, before = edge.run_in(sid, "cat /tmp/seen")
    for label, tok in (("without", None), ("with a wrong", "x" * len(token or "x"))):
        s = upgrade(edge, sid, "/ws", tok)
        status, hd, rest = read_head(s)
        body = read_until(s, b"}", rest, seconds=10)
        check(status == 403, "%s: an upgrade %s e2b-traffic-access-token is refused: %d %r"
              % (what, label, status, body[:160]))
        s.close()
    _, after = edge.run_in(sid, "cat /tmp/seen")
    check(after == before, "%s: the refused upgrades never reached the server: %r" % (what, after[len(before):]))
    seen = [line for line in after.splitlines() if line.startswith("/ws ")]
    check(seen and all("upgrade=websocket" in line for line in seen),
          "%s: the server got the upgrade request with its Upgrade header: %r" % (what, seen))
    return sid, token


def main():
    tmp = tempfile.mkdtemp(prefix="abxlua-upgrade-test.")
    env = dict(os.environ, TMPDIR=tmp)
    env.pop("ABX_LOCAL_API_KEY", None)
    for tls in (False, True):
        what = "tls" if tls else "plain"
        state = os.path.join(tmp, "state-" + what)
        args = ["--state-dir", state] + (["--tls"] if tls else [])
        proc, ready = abxtest.start_serve(BIN, *args, env=env, log=os.path.join(tmp, what + ".log"))
        held = None
        try:
            edge = Edge(ready, tls)
            sid, token = checks(edge, what)
            # one upgraded connection open while serve stops: serve ends it and exits
            held = upgrade(edge, sid, "/ws", token)
            status, _, rest = read_head(held)
            check(status == 101 and read_until(held, b"hello\n", rest) == b"hello\n",
                  "%s: an upgraded connection is open at the stop" % what)
        except (AssertionError, OSError, ValueError, KeyError) as e:
            check(False, "%s: %s: %s" % (what, type(e).__name__, e))
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = proc.wait()
        check(rc == 0, "%s: serve stops cleanly with a relay open: exit %r" % (what, rc))
        if held:
            try:
                held.settimeout(10)
                end = held.recv(100)
            except (OSError, ssl.SSLError) as e:
                end = repr(e).encode()
            check(end == b"" or b"Reset" in end or b"EOF" in end,
                  "%s: the stop ended the relayed connection: %r" % (what, end))
            held.close()
    abxtest.nothing_left(tmp, "the serves")
    finish()


main()
