#!/usr/bin/env python3
"""`abxlua serve --tls`: E2B's default addressing over HTTPS (issue 10 part 6; platform/util/tls.h).

Usage: test_tls.py [path/to/abxlua]

Checks, over real TLS on loopback: the flag and its fail-closed domain rule; the ready line
(ca_cert beside the old fields); the chain validating against the state dir's CA for
api.<domain>, 49983-<id>.<domain>, <port>-<id>.<domain> (and refusing names it does not cover,
and refusing to validate without the CA); *.localhost names resolving (libnss-myhostname); a
sandbox's domain reported with the port and envd reached by host name; plain HTTP on the TLS port
getting no answer while HTTPS keeps working; the CA kept across starts on one state dir and
refused for another domain or with a key that is not its own; E2B's official JS SDK
(tests/platform/tls_sdk, npm e2b pinned in its package-lock.json) with nothing but E2B_API_KEY,
E2B_DOMAIN and NODE_EXTRA_CA_CERTS; and `abxlua run --provider local-tls` running scenarios over
TLS. Exit 1 when a check failed, 77 when skipped (not root, no bwrap).
"""
import base64
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import abxtest  # noqa: E402
from abxtest import check  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/abxlua"))
DOMAIN = "e2b.localhost"
SDK_DIR = os.path.join(HERE, "tls_sdk")


def serve_env():
    env = dict(os.environ)
    env.pop("ABX_LOCAL_API_KEY", None)
    return env


def start(state, *args, log=None):
    return abxtest.start_serve(BIN, "--tls", "--state-dir", state, *args, env=serve_env(), log=log)


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def handshake(port, name, ctx):
    """TLS handshake with 127.0.0.1:port for server name `name`; returns (peer cert dict, None)
    or (None, the error)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname=name) as s:
                return s.getpeercert(), None
    except (ssl.SSLError, OSError) as e:
        return None, e


def https(ctx, host_port, method, path, key=None, body=None):
    """One HTTPS request to host_port (name resolved by the system); (status, bytes)."""
    host, port = host_port.rsplit(":", 1)
    c = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=30)
    h = {"X-API-Key": key} if key else {}
    if body is not None:
        body = json.dumps(body)
        h["Content-Type"] = "application/json"
    c.request(method, path, body, h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def cli_checks():
    p = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True)
    check(p.returncode == 0 and "--tls" in p.stdout and "NODE_EXTRA_CA_CERTS" in p.stdout,
          "serve --help lists --tls and what the SDK needs")
    p = subprocess.run([BIN, "serve", "--tls", "--domain", "localhost"], capture_output=True,
                       text=True, timeout=30)
    check(p.returncode == 4 and "two or more labels" in p.stderr,
          "--tls --domain localhost: exit 4 naming the rule (%d %r)" % (p.returncode, p.stderr))


def resolution_checks(port):
    for name in ("api." + DOMAIN, "49983-iabc." + DOMAIN):
        try:
            addrs = {a[4][0] for a in socket.getaddrinfo(name, port, proto=socket.IPPROTO_TCP)}
        except socket.gaierror as e:
            addrs = {str(e)}
        check("127.0.0.1" in addrs, "getaddrinfo(%s) gives loopback: %r (install libnss-myhostname "
              "with scripts/deps.sh; /etc/nsswitch.conf hosts needs myhostname)" % (name, addrs))


def chain_checks(ready, sid):
    port, ca = ready["port"], ready["ca_cert"]
    ctx = ssl.create_default_context(cafile=ca)
    for name in ("api." + DOMAIN, "49983-%s.%s" % (sid, DOMAIN), "8080-%s.%s" % (sid, DOMAIN),
                 DOMAIN):
        cert, err = handshake(port, name, ctx)
        check(cert is not None, "the chain validates against the CA for %s (%s)" % (name, err))
    cert, _ = handshake(port, "api." + DOMAIN, ctx)
    if cert:
        san = sorted(v for _, v in cert.get("subjectAltName", ()))
        check(san == sorted([DOMAIN, "*." + DOMAIN, "127.0.0.1"]), "leaf SAN %r" % san)
    for name in ("api.other.localhost", "a.b." + DOMAIN):
        cert, err = handshake(port, name, ctx)
        check(cert is None and isinstance(err, ssl.SSLCertVerificationError),
              "a name the leaf does not cover is refused: %s (%s)" % (name, err))
    cert, err = handshake(port, "api." + DOMAIN, ssl.create_default_context())
    check(cert is None and isinstance(err, ssl.SSLCertVerificationError),
          "without the CA the chain does not validate (%s)" % err)
    return ctx


def plain_http_checks(ready, ctx):
    c = http.client.HTTPConnection("127.0.0.1", ready["port"], timeout=10)
    t0 = time.time()
    try:
        c.request("GET", "/health")
        r = c.getresponse()
        got = "status %d" % r.status
    except (http.client.HTTPException, OSError) as e:
        got = "no answer (%s)" % type(e).__name__
    c.close()
    check(got.startswith("no answer") and time.time() - t0 < 9,
          "plain HTTP on the TLS port gets no HTTP answer, at once: %s" % got)
    st, body = https(ctx, "api.%s:%d" % (DOMAIN, ready["port"]), "GET", "/health")
    check(st == 200, "HTTPS still answers after it: %d %r" % (st, body))


def sandbox_checks(ready, ctx):
    hp = "api.%s:%d" % (DOMAIN, ready["port"])
    st, body = https(ctx, hp, "GET", "/health")
    check(st == 200, "GET https://%s/health by name: %d" % (hp, st))
    st, body = https(ctx, hp, "POST", "/sandboxes", key=ready["api_key"],
                     body={"templateID": "base", "timeout": 60})
    j = json.loads(body) if st == 201 else {}
    check(st == 201, "create over TLS: %d %r" % (st, body[:200]))
    sid = j.get("sandboxID", "inone")
    check(j.get("domain") == "%s:%d" % (DOMAIN, ready["port"]),
          "the sandbox's domain carries the port, as the SDK derives URLs from it: %r"
          % j.get("domain"))
    st, body = https(ctx, "49983-%s.%s:%d" % (sid, DOMAIN, ready["port"]), "GET", "/health")
    check(st == 204, "envd's /health by host name 49983-<id>.%s:<port>: %d %r" % (DOMAIN, st, body))
    st, body = https(ctx, "8080-%s.%s:%d" % (sid, DOMAIN, ready["port"]), "GET", "/")
    check(st == 502 and b"port is not open" in body,
          "a closed sandbox port by host name answers the edge's 502: %d %r" % (st, body[:120]))
    return sid


def run_in(ctx, port, sid, cmd):
    """`bash -c cmd` as user in sandbox sid through envd's process.Process/Start, reached by host
    name over TLS (docs/protocol/envd-protocol.md §2.3). Returns (exit code, stdout)."""
    msg = json.dumps({"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}}).encode()
    c = http.client.HTTPSConnection("49983-%s.%s" % (sid, DOMAIN), port, context=ctx, timeout=30)
    c.request("POST", "/process.Process/Start", b"\x00" + struct.pack(">I", len(msg)) + msg,
              {"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1",
               "Authorization": "Basic " + base64.b64encode(b"user:").decode()})
    r = c.getresponse()
    data = r.read()
    c.close()
    if r.status != 200:
        raise AssertionError("process.Process/Start answered %d: %r" % (r.status, data[:300]))
    out, code = b"", None
    while len(data) >= 5:
        flags, n = struct.unpack(">BI", data[:5])
        ev = json.loads(data[5:5 + n] or b"{}").get("event", {}) if not flags & 2 else {}
        data = data[5 + n:]
        out += base64.b64decode(ev.get("data", {}).get("stdout", ""))
        code = ev["end"].get("exitCode", 0) if "end" in ev else code
    return code, out.decode(errors="replace")


# An in-sandbox server on 8080 that never answers and logs when the proxy closes its connection.
SILENT_SERVER = r"""
import socket, threading, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 8080)); s.listen(16)
def h(c):
    c.recv(65536); t = time.time(); c.settimeout(120)
    try: c.recv(1)
    except OSError: pass
    open("/tmp/closed", "a").write("%.1f " % (time.time() - t))
while True:
    c, _ = s.accept(); threading.Thread(target=h, args=(c,), daemon=True).start()
"""


def hangup_checks(ready, ctx, sid):
    """A client that leaves while the sandbox has not answered ends the upstream connection, also
    when it closes TLS properly (close_notify, then FIN): the alert stays unread in serve's socket,
    which a peek for EOF never sees (platform/ingress/ingress.c client_gone)."""
    port = ready["port"]
    code, _ = run_in(ctx, port, sid, "cat > /tmp/srv.py <<'EOF'\n%s\nEOF\n"
                     "setsid nohup python3 /tmp/srv.py >/dev/null 2>&1 & sleep 0.5" % SILENT_SERVER)
    check(code == 0, "a silent server on 8080 in the sandbox: exit %r" % code)
    host = "8080-%s.%s" % (sid, DOMAIN)
    for how in ("close_notify", "FIN only"):
        raw = socket.create_connection(("127.0.0.1", port), timeout=10)
        tls = ctx.wrap_socket(raw, server_hostname=host)
        tls.sendall(("GET / HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host, port)).encode())
        time.sleep(0.5)
        if how == "close_notify":
            try:
                tls.settimeout(1)
                tls.unwrap().close()
            except (ssl.SSLError, OSError):
                tls.close()
        else:
            tls.close()
        want = 1 if how == "close_notify" else 2
        t0, closed = time.time(), ""
        while time.time() - t0 < 8:
            _, closed = run_in(ctx, port, sid, "cat /tmp/closed 2>/dev/null")
            if len(closed.split()) >= want:
                break
            time.sleep(0.5)
        check(len(closed.split()) >= want, "a TLS client that leaves with %s ends the upstream "
              "connection within 8 s (closes seen: %r)" % (how, closed.split()))


def sdk_checks(ready):
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:  # as tests/conformance: the SDK part needs them, the rest does not
        print("SKIP the official SDK: node and npm not found")
        return
    lock = os.path.join(SDK_DIR, "package-lock.json")
    stamp = os.path.join(SDK_DIR, "node_modules", ".tls-lock.sha256")
    want = subprocess.run(["sha256sum", lock], capture_output=True, text=True).stdout.split()[0]
    if not os.path.exists(stamp) or open(stamp).read().strip() != want:
        p = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=SDK_DIR,
                           capture_output=True, text=True, timeout=300)
        check(p.returncode == 0, "npm ci in tests/platform/tls_sdk: %s" % p.stderr[-500:])
        if p.returncode != 0:
            return
        with open(stamp, "w") as f:
            f.write(want)
    sdk_domain = "%s:%d" % (DOMAIN, ready["port"])
    # nothing else: no PATH, no E2B_API_URL / E2B_SANDBOX_URL, no proxy settings
    env = {"E2B_API_KEY": ready["api_key"], "E2B_DOMAIN": sdk_domain,
           "NODE_EXTRA_CA_CERTS": ready["ca_cert"]}
    p = subprocess.run([node, "sdk_tls.mjs"], cwd=SDK_DIR, env=env, capture_output=True,
                       text=True, timeout=180)
    steps = [l[3:] for l in p.stdout.splitlines() if l.startswith("ok ")]
    print("\n".join("     sdk: " + l for l in p.stdout.splitlines()))
    check(p.returncode == 0 and len(steps) == 8 and steps[-1] == "kill",
          "the official SDK with only E2B_API_KEY, E2B_DOMAIN, NODE_EXTRA_CA_CERTS: create, "
          "command, files, signed download and upload URLs, getHost, connect (%d steps; %s)"
          % (len(steps), p.stderr[-800:]))
    env.pop("NODE_EXTRA_CA_CERTS")
    probe = ("fetch('https://api.%s/health').then(r => console.log('status', r.status), "
             "e => console.log('error', e.cause && e.cause.code))" % sdk_domain)
    p = subprocess.run([node, "-e", probe], env=env, capture_output=True, text=True, timeout=60)
    check(p.stdout.startswith("error ") and "undefined" not in p.stdout,
          "without NODE_EXTRA_CA_CERTS Node refuses the server: %r" % p.stdout.strip())


def engine_checks():
    p = subprocess.run([BIN, "run", "--provider", "local-tls", "-j", "2", "-vv",
                        "scenarios/01_platform.lua", "scenarios/03_commands.lua",
                        "scenarios/04_files_envd.lua"],
                       cwd=ROOT, capture_output=True, text=True, errors="replace", timeout=600)
    last = (p.stdout.strip().splitlines() or [""])[-1]
    print("     run: " + last)
    check(p.returncode == 0 and " passed, 0 failed" in last,
          "abxlua run --provider local-tls passes scenarios over TLS: %s" % last)
    check("https://api.%s:" % DOMAIN in p.stderr and (".%s:" % DOMAIN) in p.stderr
          and "https://49983-" in p.stderr and "http://127.0.0.1" not in p.stderr,
          "the run's requests went to https://api.<domain> and https://49983-<id>.<domain>")


def main():
    abxtest.needs_platform()
    cli_checks()
    tmp = tempfile.mkdtemp(prefix="abxlua-tls-test.")
    state_a, state_b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    os.mkdir(state_a, 0o700)  # a state dir serve did not create outlives it, and so does its CA
    os.mkdir(state_b, 0o700)
    log = os.path.join(tmp, "serve.log")
    try:
        proc, ready = start(state_a, log=log)
        try:
            want = {"url", "port", "api_key", "domain", "ca_cert", "access_token"}
            check(set(ready) == want, "ready keys %r" % sorted(ready))
            port = ready["port"]
            check(ready["url"] == "https://api.%s:%d" % (DOMAIN, port), "url %r" % ready["url"])
            check(ready["domain"] == DOMAIN, "default domain with --tls: %r" % ready["domain"])
            ca = ready["ca_cert"]
            check(ca == os.path.join(state_a, "tls", "ca.pem") and os.path.isfile(ca),
                  "ca_cert names <state>/tls/ca.pem: %r" % ca)
            key = os.path.join(state_a, "tls", "ca.key")
            check(os.path.isfile(key) and os.stat(key).st_mode & 0o777 == 0o600,
                  "the CA key is private (0600)")
            resolution_checks(port)
            ctx = ssl.create_default_context(cafile=ca)
            sid = sandbox_checks(ready, ctx)
            chain_checks(ready, sid)
            hangup_checks(ready, ctx, sid)
            plain_http_checks(ready, ctx)
            sdk_checks(ready)
        finally:
            rc = stop(proc)
        check(rc == 0, "serve --tls stops cleanly: exit %r" % rc)
        first = open(os.path.join(state_a, "tls", "ca.pem"), "rb").read()

        proc, ready = start(state_a, log=log)
        try:
            check(open(ready["ca_cert"], "rb").read() == first,
                  "a second start on the same --state-dir keeps the CA")
            cert, err = handshake(ready["port"], "api." + DOMAIN,
                                  ssl.create_default_context(cafile=ready["ca_cert"]))
            check(cert is not None, "its new leaf validates against the kept CA (%s)" % err)
        finally:
            stop(proc)

        proc, ready = start(state_b, "--domain", "other.localhost", log=log)
        stop(proc)
        check(ready["domain"] == "other.localhost" and
              open(ready["ca_cert"], "rb").read() != first, "another state dir, another CA")
        p = subprocess.run([BIN, "serve", "--tls", "--state-dir", state_a, "--domain",
                            "other.localhost"], capture_output=True, text=True, timeout=60,
                           env=serve_env())
        check(p.returncode == 1 and "cannot vouch for api.other.localhost" in p.stderr,
              "the CA made for %s is refused for another domain: %d %r"
              % (DOMAIN, p.returncode, p.stderr[-300:]))
        good_key = open(os.path.join(state_a, "tls", "ca.key"), "rb").read()
        shutil.copy(os.path.join(state_b, "tls", "ca.key"), os.path.join(state_a, "tls", "ca.key"))
        p = subprocess.run([BIN, "serve", "--tls", "--state-dir", state_a], capture_output=True,
                           text=True, timeout=60, env=serve_env())
        check(p.returncode == 1 and "do not belong together" in p.stderr,
              "a CA key that is not the certificate's fails the start: %d %r"
              % (p.returncode, p.stderr[-300:]))
        with open(os.path.join(state_a, "tls", "ca.key"), "wb") as f:
            f.write(good_key)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    engine_checks()
    abxtest.finish()


if __name__ == "__main__":
    main()
