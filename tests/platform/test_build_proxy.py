#!/usr/bin/env python3
"""The build sandboxes' egress proxy (platform/net/build_proxy.h).

Usage: test_build_proxy.py path/to/abxlua path/to/build_proxy_harness

The harness (tests/platform/build_proxy_harness.c) links the platform library: it links network
namespaces this test makes (ip netns add) into its hub namespace exactly as serve links a sandbox
(veth, addresses, the sandbox's nftables rules) and allows some of them on the proxy. "Outside" is
one more namespace of this test's, on a veth into this namespace with the TEST-NET-2 address
198.51.100.2 (public-looking: not refused); the refused destinations are a server on loopback and
a listening "platform port", which must see no connection at all. Then a running sandbox of a real
`abxlua serve` gets 403 from serve's proxy, and a real fetch from deb.debian.org (curl, and apt-get download with
apt's own http method) and the npm registry (npm view) goes through the proxy (skipped with the reason when this machine cannot reach them).
Each check prints PASS/FAIL/SKIP (INFO lines give the measured figures); exit 1 when any failed,
77 when skipped whole (not root, no ip/nft).
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_platform as tp  # noqa: E402  (Server, run_in, check, run_checks)

check = tp.check
PID = os.getpid()
OUT_ADDR, OUT_PORT = "198.51.100.2", 8080
VETH = "abxbpo%d" % PID


def ns(name):
    return "abxbp%d-%s" % (PID, name)


OUTSIDE = r"""
import http.server, json, sys
log = open(sys.argv[3], "a", buffering=1)
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        log.write(json.dumps({"line": self.requestline, "headers": dict(self.headers)}) + "\n")
        if self.path.startswith("/big"):
            n = int(self.path.split("=")[1]); chunk = b"x" * 65536
            self.send_response(200); self.send_header("Content-Length", str(n)); self.end_headers()
            while n > 0:
                k = min(n, len(chunk)); self.wfile.write(chunk[:k]); n -= k
            return
        b = json.dumps({"line": self.requestline, "headers": dict(self.headers)}).encode() \
            if self.path.startswith("/echo") else b"hello outside"
        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers()
        self.wfile.write(b)
s = http.server.ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), H)
s.handle_error = lambda *a: None  # clients that leave early (the limits check) are expected
print("ready", flush=True)
s.serve_forever()
"""

# A raw client run inside a namespace: send the request (hex), print what came back as JSON
# {data, secs, error}. Mode "tunnel": after a 200, send the second request (hex) and read on.
# Mode "hold": after a 200, wait for the proxy to close (reports the seconds it took).
# Mode "flood N": open N connections, then one more, and report whether that one was closed.
CLIENT = r"""
import json, socket, sys, time
host, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def conn():
    s = socket.create_connection((host, port), timeout=5); s.settimeout(15); return s
def read_all(s):
    d = b""
    while True:
        try:
            k = s.recv(65536)
        except socket.timeout:
            break
        if not k: break
        d += k
    return d
t0 = time.time()
try:
    if mode == "flood":
        n = int(sys.argv[4]); socks = [conn() for _ in range(n)]; time.sleep(0.3)
        last = conn(); last.settimeout(2)
        try: closed = last.recv(10) == b""
        except socket.timeout: closed = False
        print(json.dumps({"closed": closed})); sys.exit(0)
    s = conn(); s.sendall(bytes.fromhex(sys.argv[4]))
    if mode == "plain":
        out = read_all(s)
    else:
        head = b""
        while b"\r\n\r\n" not in head:
            k = s.recv(1)
            if not k: break
            head += k
        if mode == "tunnel" and head.startswith(b"HTTP/1.1 200"):
            s.sendall(bytes.fromhex(sys.argv[5])); out = head + read_all(s)
        elif mode == "hold" and head.startswith(b"HTTP/1.1 200"):
            print("open", flush=True); s.settimeout(20); t0 = time.time()
            out = head + read_all(s)
        else:
            out = head + read_all(s)
    print(json.dumps({"data": out.decode("latin-1"), "secs": time.time() - t0}))
except OSError as e:
    print(json.dumps({"error": "%s: %s" % (type(e).__name__, e), "secs": time.time() - t0}))
"""


def sh(*cmd, check_rc=True, **kw):
    p = subprocess.run(list(cmd), capture_output=True, text=True, **kw)
    if check_rc and p.returncode != 0:
        raise AssertionError("%s: rc %d %s" % (" ".join(cmd), p.returncode, p.stderr[-400:]))
    return p


class Harness:
    def __init__(self, path):
        self.p = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, bufsize=1)
        self.err = []
        threading.Thread(target=lambda: [self.err.append(ln) for ln in self.p.stderr],
                         daemon=True).start()

    def cmd(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().rstrip("\n")

    def ok(self, line):
        a = self.cmd(line)
        check(a.startswith("ok"), "%s -> %r" % (line, a))
        return a.split(" ")[1:]

    def quit(self):
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.close()
        except OSError:
            pass
        try:
            return self.p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return -9


class Listener:
    """A TCP listener in this (the host's) namespace counting the connections it gets."""
    def __init__(self):
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(16)
        self.port = self.s.getsockname()[1]
        self.count = 0
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            try:
                c, _ = self.s.accept()
            except OSError:
                return
            self.count += 1
            c.close()


def client(ctx, nsname, mode, *args, url=None, timeout=40):
    host, port = (url or ctx["url1"])[7:].split(":")
    p = sh("ip", "netns", "exec", nsname, sys.executable, "-c", CLIENT, host, port, mode, *args,
           timeout=timeout)
    return json.loads(p.stdout.strip().splitlines()[-1])


def raw(ctx, nsname, request, url=None):
    return client(ctx, nsname, "plain" if not request.startswith("CONNECT") else "connect",
                  request.encode().hex(), url=url)


def curl(nsname, *args, timeout=60):
    return sh("ip", "netns", "exec", nsname, "curl", "-sS", "--max-time", "30", *args,
              check_rc=False, timeout=timeout)


def outside_log(ctx):
    with open(ctx["outlog"]) as f:
        return [json.loads(ln) for ln in f if ln.strip()]


# ---- checks ---------------------------------------------------------------------------------

def t_rules(s, ctx):
    pp = ctx["platform"].port
    local = ctx["local_addr"]
    cases = [
        ("127.0.0.1", 80, "deny loopback address (127.0.0.0/8)"),
        ("127.255.0.9", 80, "deny loopback"),
        ("10.1.2.3", 80, "deny private address (10.0.0.0/8, RFC 1918)"),
        ("172.16.0.1", 80, "deny private address (172.16.0.0/12"), ("172.32.0.1", 80, "allow"),
        ("192.168.1.1", 80, "deny private address (192.168.0.0/16"),
        ("100.64.0.1", 80, "deny private address (100.64.0.0/10, carrier-grade NAT)"),
        ("100.128.0.1", 80, "allow"),
        ("169.254.169.254", 80, "deny link-local address (169.254.0.0/16)"),
        ("0.0.0.0", 80, "deny unspecified"), ("224.0.0.1", 80, "deny multicast"),
        ("255.255.255.255", 80, "deny reserved or broadcast"),
        ("203.0.113.80", 80, "allow"), ("198.51.100.2", 8080, "allow"), ("192.0.2.77", 80, "allow"),
        ("8.8.8.8", 443, "allow"),
        ("::1", 80, "deny loopback address (::1)"), ("::", 80, "deny unspecified address (::)"),
        ("fe80::1", 80, "deny link-local address (fe80::/10)"),
        ("fd12::1", 80, "deny private address (fc00::/7, unique local)"),
        ("ff02::1", 80, "deny multicast address (ff00::/8)"),
        ("::ffff:127.0.0.1", 80, "deny loopback address (127.0.0.0/8)"),
        ("::ffff:10.0.0.1", 80, "deny private address (10.0.0.0/8"),
        ("64:ff9b::a9fe:a9fe", 80, "deny link-local address (169.254.0.0/16)"),
        ("2001:db8::1", 80, "allow"),
        ("127.0.0.1", pp, "deny the platform's own port (%d) on an address of this machine" % pp),
        (local, pp, "deny the platform's own port (%d)" % pp),
        (local, 22, "deny an address of this machine"),
    ]
    for addr, port, want in cases:
        got = ctx["h"].cmd("check %s %d %d" % (addr, port, pp))
        check(got.startswith(want), "%s:%d: want %r, got %r" % (addr, port, want, got))


def t_parse(s, ctx):
    h = ctx["h"]

    def parse(head):
        return h.cmd("parse " + head.encode().hex()).split(" ")

    a = parse("CONNECT registry.npmjs.org:443 HTTP/1.1\r\nHost: registry.npmjs.org:443\r\n\r\n")
    check(a[:5] == ["ok", "1", "registry.npmjs.org", "443", "CONNECT"], "connect %r" % a)
    a = parse("CONNECT [2001:db8::1]:8443 HTTP/1.1\r\n\r\n")
    check(a[:4] == ["ok", "1", "2001:db8::1", "8443"], "connect v6 %r" % a)
    a = parse("GET http://Deb.Debian.org/debian/x?y=1 HTTP/1.1\r\nHost: evil.example\r\n"
              "Proxy-Connection: keep-alive\r\nConnection: keep-alive\r\nUser-Agent: apt\r\n"
              "Proxy-Authorization: Basic eA==\r\n\r\n")
    check(a[:5] == ["ok", "0", "Deb.Debian.org", "80", "GET"], "absolute %r" % a)
    head = bytes.fromhex(a[5]).decode()
    check(head == "GET /debian/x?y=1 HTTP/1.1\r\nHost: Deb.Debian.org\r\nUser-Agent: apt\r\n"
          "Connection: close\r\n\r\n", "rewritten head %r" % head)
    a = parse("GET http://198.51.100.2:8080 HTTP/1.0\r\n\r\n")
    check(a[:4] == ["ok", "0", "198.51.100.2", "8080"] and
          bytes.fromhex(a[5]).decode().startswith("GET / HTTP/1.0\r\nHost: 198.51.100.2:8080\r\n"),
          "no path %r" % a)
    bad = [("GET / HTTP/1.1\r\nHost: x\r\n\r\n", "absolute http:// URL or CONNECT"),
           ("GET https://x/ HTTP/1.1\r\n\r\n", "CONNECT host:443"),
           ("GET http://u:p@x/ HTTP/1.1\r\n\r\n", "user information"),
           ("GET http://x/ HTTP/1.1\r\nA: b\r\n c\r\n\r\n", "malformed header line"),
           ("CONNECT x HTTP/1.1\r\n\r\n", "CONNECT needs host:port"),
           ("CONNECT x:0 HTTP/1.1\r\n\r\n", "CONNECT needs host:port"),
           ("CONNECT x:70000 HTTP/1.1\r\n\r\n", "CONNECT needs host:port"),
           ("GET http://a b/ HTTP/1.1\r\n\r\n", "malformed request line"),
           ("GET http://x!/ HTTP/1.1\r\n\r\n", "bad host or port"),
           ("GET http://x/ HTTP/2.0\r\n\r\n", "malformed request line")]
    for req, want in bad:
        a = " ".join(parse(req))
        check(a.startswith("err 400") and want in a, "%r: want %r, got %r" % (req, want, a))


def t_env(s, ctx):
    env = json.loads(ctx["h"].cmd("env http://10.200.0.5:3128"))
    u = "http://10.200.0.5:3128"
    check(env == {"http_proxy": u, "https_proxy": u, "HTTP_PROXY": u, "HTTPS_PROXY": u,
                  "no_proxy": "localhost,127.0.0.1", "NO_PROXY": "localhost,127.0.0.1",
                  "NODE_EXTRA_CA_CERTS": "/etc/ssl/certs/ca-certificates.crt"}, "env %r" % env)


def t_plain_fetch(s, ctx):
    p = curl(ns("sb1"), "-x", ctx["url1"], "-H", "Proxy-Connection: keep-alive",
             "http://%s:%d/echo/plain" % (OUT_ADDR, OUT_PORT))
    check(p.returncode == 0, "curl rc %d %s" % (p.returncode, p.stderr))
    j = json.loads(p.stdout)
    check(j["line"] == "GET /echo/plain HTTP/1.1", "origin saw %r" % j["line"])
    hd = {k.lower(): v for k, v in j["headers"].items()}
    check(hd.get("host") == "%s:%d" % (OUT_ADDR, OUT_PORT) and hd.get("connection") == "close"
          and "proxy-connection" not in hd, "origin headers %r" % hd)


def t_connect_fetch(s, ctx):
    p = curl(ns("sb1"), "-p", "-x", ctx["url1"], "http://%s:%d/hello" % (OUT_ADDR, OUT_PORT))
    check(p.returncode == 0 and p.stdout == "hello outside", "curl -p: %d %r %s" %
          (p.returncode, p.stdout, p.stderr))
    inner = "GET /echo/tunnel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    r = client(ctx, ns("sb1"), "tunnel",
               ("CONNECT %s:%d HTTP/1.1\r\nHost: x\r\n\r\n" % (OUT_ADDR, OUT_PORT)).encode().hex(),
               inner.encode().hex())
    d = r.get("data", "")
    check(d.startswith("HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.") and
          "GET /echo/tunnel HTTP/1.1" in d, "tunnel %r" % r)


def t_refused(s, ctx):
    lp, pp, local = ctx["loop"].port, ctx["platform"].port, ctx["local_addr"]
    cases = [
        ("127.0.0.1:%d" % lp, "loopback address (127.0.0.0/8)"),
        ("localhost:%d" % lp, "loopback address"),         # a name resolving to loopback
        ("2130706433:%d" % lp, "loopback address (127.0.0.0/8)"),  # 127.0.0.1 as one number
        ("[::1]:%d" % lp, "loopback address (::1)"),
        ("[::ffff:127.0.0.1]:%d" % lp, "loopback address (127.0.0.0/8)"),
        ("0.0.0.0:%d" % lp, "unspecified"),
        ("10.1.2.3:80", "private address (10.0.0.0/8, RFC 1918)"),
        ("10.200.0.1:80", "private address (10.0.0.0/8, RFC 1918)"),
        ("169.254.169.254:80", "link-local address (169.254.0.0/16)"),
        ("100.64.0.1:80", "carrier-grade NAT"),
        ("127.0.0.1:%d" % pp, "the platform's own port (%d)" % pp),
        ("%s:%d" % (local, pp), "the platform's own port (%d)" % pp),
        ("%s:%d" % (local, lp), "an address of this machine"),
    ]
    for target, rule in cases:
        host = target.rsplit(":", 1)[0]
        for req in ("GET http://%s/x HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target),
                    "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)):
            r = raw(ctx, ns("sb1"), req)
            d = r.get("data", "")
            check(d.startswith("HTTP/1.1 403 Forbidden\r\n") and rule in d and
                  ("refused %s" % host.strip("[]")) in d,
                  "%s: want 403 naming %r, got %r" % (req.split("\r")[0], rule, r))
    check(ctx["loop"].count == 0 and ctx["platform"].count == 0,
          "refused destinations were connected: loopback %d, platform %d" %
          (ctx["loop"].count, ctx["platform"].count))


def t_unregistered(s, ctx):
    r = raw(ctx, ns("sb2"), "GET http://%s:%d/unregistered HTTP/1.1\r\n\r\n" % (OUT_ADDR, OUT_PORT),
            url=ctx["url2"])
    d = r.get("data", "")
    check(d.startswith("HTTP/1.1 403 Forbidden") and "%s is not a build sandbox" % ctx["sb2"][1] in d,
          "unregistered: %r" % r)
    check(not [e for e in outside_log(ctx) if "unregistered" in e["line"]],
          "the outside server got the unregistered request")


def t_link_reused(s, ctx):
    h = ctx["h"]
    a5 = h.ok("sandbox s5 /run/netns/%s 1" % ns("sb5"))
    h.ok("allow s5")
    h.ok("detach s5")  # gone, not revoked: its link is free again
    a6 = h.ok("sandbox s6 /run/netns/%s 1" % ns("sb6"))
    check(a5 == a6, "the new sandbox did not get the freed link: %r %r" % (a5, a6))
    r = raw(ctx, ns("sb6"), "GET http://%s:%d/reused HTTP/1.1\r\n\r\n" % (OUT_ADDR, OUT_PORT),
            url="http://%s:3128" % a6[0])
    check("is not a build sandbox" in r.get("data", ""), "reused link: %r" % r)


def t_internet_off(s, ctx):
    # The documented rule: a sandbox without internet access cannot reach the proxy at all.
    p = curl(ns("sb3"), "-x", ctx["url3"], "http://%s:%d/hello" % (OUT_ADDR, OUT_PORT))
    check(p.returncode == 7, "internet off: curl rc %d %r %s" % (p.returncode, p.stdout, p.stderr))


def t_limits(s, ctx):
    r = raw(ctx, ns("sb1"), "GET http://%s/ HTTP/1.1\r\nX: %s\r\n\r\n" % (OUT_ADDR, "a" * 17000))
    check(r.get("data", "").startswith("HTTP/1.1 431 "), "big head: %r" % r)
    r = client(ctx, ns("sb1"), "flood", "32")
    check(r.get("closed") is True, "the 33rd connection of one client was not closed: %r" % r)


def t_throughput(s, ctx):
    n = 256 * 1024 * 1024
    hp = ctx["h"].p.pid

    def cpu():
        with open("/proc/%d/stat" % hp) as f:
            v = f.read().rsplit(")", 1)[1].split()
        return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")

    c0, t0 = cpu(), time.time()
    p = curl(ns("sb1"), "-p", "-x", ctx["url1"], "-o", "/dev/null", "-w", "%{size_download}",
             "http://%s:%d/big?n=%d" % (OUT_ADDR, OUT_PORT, n), timeout=120)
    secs, c1 = time.time() - t0, cpu()
    check(p.returncode == 0 and p.stdout == str(n), "big download: %d %r %s" %
          (p.returncode, p.stdout, p.stderr))
    print("INFO one tunnel: %d MiB in %.2f s (%.0f MiB/s), proxy CPU %.2f s" %
          (n >> 20, secs, (n >> 20) / secs, c1 - c0))
    procs = [subprocess.Popen(["ip", "netns", "exec", ns("sb1"), "curl", "-sS", "-p", "-x",
                               ctx["url1"], "-o", "/dev/null", "--limit-rate", "2M",
                               "http://%s:%d/big?n=%d" % (OUT_ADDR, OUT_PORT, 8 << 20)])
             for _ in range(20)]
    threads = 0
    for _ in range(30):  # each takes 4 s at 2 MiB/s: sample the peak
        time.sleep(0.1)
        with open("/proc/%d/status" % hp) as f:
            threads = max(threads, int([ln for ln in f if ln.startswith("Threads:")][0].split()[1]))
    rcs = [p.wait(timeout=60) for p in procs]
    check(rcs == [0] * 20, "parallel downloads: %r" % rcs)
    print("INFO 20 parallel tunnels: peak %d threads in the harness (main + acceptor + one each)" %
          threads)
    check(threads <= 20 + 3, "threads %d for 20 tunnels" % threads)
    check(threads >= 12, "only %d threads: the 20 tunnels were not open at once" % threads)


def t_revoke(s, ctx):
    hold = subprocess.Popen(["ip", "netns", "exec", ns("sb1"), sys.executable, "-c", CLIENT,
                             ctx["url1"][7:].split(":")[0], "3128", "hold",
                             ("CONNECT %s:%d HTTP/1.1\r\n\r\n" % (OUT_ADDR, OUT_PORT)).encode().hex()],
                            stdout=subprocess.PIPE, text=True)
    line = hold.stdout.readline()
    check(line.strip() == "open", "tunnel did not open: %r" % line)
    ctx["h"].ok("revoke s1")
    r = json.loads(hold.communicate(timeout=30)[0].strip().splitlines()[-1])
    check(r.get("secs", 99) < 3, "the open tunnel was not cut at revoke: %r" % r)
    r = raw(ctx, ns("sb1"), "GET http://%s:%d/revoked HTTP/1.1\r\n\r\n" % (OUT_ADDR, OUT_PORT))
    check("is not a build sandbox" in r.get("data", ""), "after revoke: %r" % r)
    ctx["h"].ok("allow s1")


def t_serve_running_sandbox(s, ctx):
    srv = tp.Server()
    try:
        st, _, j = srv.create()
        check(st == 201, "create %d %r" % (st, j))
        sid = j["sandboxID"]
        _, _, d = srv.json("GET", "/sandboxes/" + sid)
        hub = d["abxNetwork"]["hostAddress"]
        code, out, err = tp.run_in(srv, sid, "curl -sS --max-time 10 -x http://%s:3128 "
                                   "http://%s:%d/from-serve; echo; curl -sS --max-time 10 -p -x "
                                   "http://%s:3128 https://deb.debian.org/ 2>&1" %
                                   (hub, OUT_ADDR, OUT_PORT, hub))
        check("is not a build sandbox" in out and "403" in out,
              "running sandbox: %r %r %r" % (code, out, err))
        check(not [e for e in outside_log(ctx) if "from-serve" in e["line"]],
              "the outside server got the running sandbox's request")
    finally:
        rc, _, err = srv.stop()
    check(rc == 0 and b"no build proxy" not in err, "serve: %r %r" % (rc, err[-400:]))


def t_real_registries(s, ctx):
    try:
        socket.create_connection(("deb.debian.org", 80), timeout=5).close()
        socket.create_connection(("registry.npmjs.org", 443), timeout=5).close()
    except OSError as e:
        print("SKIP real_registries: deb.debian.org or registry.npmjs.org unreachable from this "
              "machine: %s" % e)
        return
    p = curl(ns("sb1"), "-x", ctx["url1"], "http://deb.debian.org/debian/dists/bookworm/Release")
    check(p.returncode == 0 and "Codename: bookworm" in p.stdout, "Debian Release: %d %s %r" %
          (p.returncode, p.stderr, p.stdout[:200]))
    dl = tempfile.mkdtemp(prefix="abxbp-apt-")
    try:  # apt's own http method, through http_proxy (the host's package lists)
        p = sh("ip", "netns", "exec", ns("sb1"), "env", "http_proxy=" + ctx["url1"], "apt-get",
               "download", "hello", check_rc=False, timeout=120, cwd=dl)
        debs = [f for f in os.listdir(dl) if f.startswith("hello_") and f.endswith(".deb")]
    finally:
        shutil.rmtree(dl, ignore_errors=True)
    check(p.returncode == 0 and debs, "apt-get download hello: %d %r %s" %
          (p.returncode, debs, p.stdout[-300:] + p.stderr[-300:]))
    print("INFO apt-get download through the proxy: %s" % debs[0])
    env = json.loads(ctx["h"].cmd("env " + ctx["url1"]))
    home = tempfile.mkdtemp(prefix="abxbp-npm-")
    try:
        p = sh("ip", "netns", "exec", ns("sb1"), "env", *["%s=%s" % kv for kv in env.items()],
               "HOME=" + home, "npm", "view", "is-number", "version", check_rc=False, timeout=120)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    check(p.returncode == 0 and p.stdout.strip().count(".") == 2, "npm view: %d %r %s" %
          (p.returncode, p.stdout, p.stderr[-400:]))
    print("INFO npm view is-number version through the proxy: %s" % p.stdout.strip())


CHECKS = [t_rules, t_parse, t_env, t_plain_fetch, t_connect_fetch, t_refused, t_unregistered,
          t_link_reused, t_internet_off, t_limits, t_throughput, t_revoke, t_serve_running_sandbox,
          t_real_registries]


def setup(ctx, harness):
    for n in ("sb1", "sb2", "sb3", "sb5", "sb6", "out"):
        sh("ip", "netns", "add", ns(n))
        ctx.setdefault("netns", []).append(ns(n))
        sh("ip", "-n", ns(n), "link", "set", "lo", "up")  # as bwrap does in a sandbox
    sh("ip", "link", "add", VETH, "type", "veth", "peer", "name", "eth0", "netns", ns("out"))
    ctx["veth"] = True
    sh("ip", "addr", "add", "198.51.100.1/24", "dev", VETH)
    sh("ip", "link", "set", VETH, "up")
    sh("ip", "-n", ns("out"), "addr", "add", OUT_ADDR + "/24", "dev", "eth0")
    sh("ip", "-n", ns("out"), "link", "set", "eth0", "up")
    ctx["tmp"] = tempfile.mkdtemp(prefix="abxbp-")
    ctx["outlog"] = os.path.join(ctx["tmp"], "outside.log")
    open(ctx["outlog"], "w").close()
    out = subprocess.Popen(["ip", "netns", "exec", ns("out"), sys.executable, "-c", OUTSIDE,
                            OUT_ADDR, str(OUT_PORT), ctx["outlog"]], stdout=subprocess.PIPE)
    ctx["outside"] = out
    check(out.stdout.readline().strip() == b"ready", "outside server did not start")
    ctx["loop"], ctx["platform"] = Listener(), Listener()
    addrs = sh("ip", "-4", "-o", "addr", "show", "scope", "global").stdout.split()
    ctx["local_addr"] = [a.split("/")[0] for a in addrs if "/" in a and
                         not a.startswith("198.51.100.")][0]
    h = ctx["h"] = Harness(harness)
    h.ok("start %d" % ctx["platform"].port)
    ctx["sb1"] = h.ok("sandbox s1 /run/netns/%s 1" % ns("sb1"))
    ctx["sb2"] = h.ok("sandbox s2 /run/netns/%s 1" % ns("sb2"))
    ctx["sb3"] = h.ok("sandbox s3 /run/netns/%s 0" % ns("sb3"))
    ctx["url1"] = h.ok("allow s1")[0]
    ctx["url3"] = h.ok("allow s3")[0]
    ctx["url2"] = "http://%s:3128" % ctx["sb2"][0]
    check(ctx["url1"] == "http://%s:3128" % ctx["sb1"][0], "url %r for link %r" %
          (ctx["url1"], ctx["sb1"]))


def teardown(ctx):
    rc = ctx["h"].quit() if "h" in ctx else 0
    if "outside" in ctx:
        ctx["outside"].kill()
        ctx["outside"].wait()
    if ctx.get("veth"):
        sh("ip", "link", "del", VETH, check_rc=False)
    for n in ctx.get("netns", []):
        sh("ip", "netns", "del", n, check_rc=False)
    if "tmp" in ctx:
        shutil.rmtree(ctx["tmp"], ignore_errors=True)
    return rc


def main():
    if len(sys.argv) < 3:
        print("usage: test_build_proxy.py ABXLUA HARNESS")
        return 2
    tp.BIN = sys.argv[1]
    if os.geteuid() != 0:
        print("SKIP: needs root (network namespaces, veth, nftables)")
        return 77
    if not shutil.which("ip") or not shutil.which("nft") or not shutil.which("curl"):
        print("SKIP: needs ip (iproute2), nft (nftables) and curl")
        return 77
    ctx = {}
    failed = 0
    try:
        setup(ctx, sys.argv[2])
        only = os.environ.get("ABX_ONLY")
        failed = tp.run_checks(None, ctx, CHECKS, only=only)
    except Exception as e:  # noqa: BLE001 - setup failure is one failure
        print("FAIL setup %s: %s" % (type(e).__name__, e))
        failed += 1
    finally:
        rc = teardown(ctx)
        if rc != 0:
            print("FAIL harness exit %r: %s" % (rc, "".join(ctx["h"].err)[-400:]))
            failed += 1
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
