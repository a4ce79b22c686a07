#!/usr/bin/env python3
"""Isolation of the local platform, tested from inside sandboxes (issue 5, item 8): no writes to
the host filesystem, no view of host processes, no connection to the platform's port or to other
host loopback services, no reading another sandbox's files, no mount or module loading (root in
the sandbox lacks the capabilities), request names that cannot leave the state directory, every
control-plane route requires the API key, envd requires its token when secure.
Usage: test_isolation.py ABXLUA"""
import http.server, os, socket, sys, tempfile, threading, uuid
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "platform"))
import test_platform as tp  # Server, run_in
from abxtest import check, finish

# a host loopback service the sandboxes must not reach
class Quiet(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
    def log_message(self, *a):
        pass
host_srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
threading.Thread(target=host_srv.serve_forever, daemon=True).start()
host_port = host_srv.server_address[1]

s = tp.Server()
try:
    st, _, a = s.create(timeout=120)
    st2, _, b = s.create(timeout=120)
    check(st == 201 and st2 == 201, "two sandboxes created")
    A, B = a["sandboxID"], b["sandboxID"]

    # host filesystem: root in the sandbox writes everywhere it can; the host sees nothing
    marker = "abx-iso-" + uuid.uuid4().hex[:8]
    code, out, err = tp.run_in(s, A, "for d in /usr /etc /opt /var /root /tmp /home/user; do "
                               "echo x > $d/%s 2>/dev/null && echo wrote $d; done; true" % marker,
                               user="root")
    for d in ("/usr", "/etc", "/opt", "/var", "/root", "/tmp", "/home"):
        check(not os.path.exists(os.path.join(d, marker)), "host %s is untouched" % d)
    check(not any(os.path.exists(os.path.join(dp, marker)) for dp, _, _ in os.walk("/home")),
          "no host home directory got the file")

    # host processes
    code, out, _ = tp.run_in(s, A, "ls /proc | grep -c '^[0-9]'")
    check(code == 0 and int(out.strip() or "999") < 20, "the sandbox sees only its own few processes (%s)" % out.strip())
    code, out, _ = tp.run_in(s, A, "cat /proc/%d/cmdline 2>&1 || echo no" % os.getpid())
    check("test_isolation" not in out, "the host test process is invisible")

    # network: the platform's port, a host loopback service
    for port, what in ((s.port, "the platform's port"), (host_port, "a host loopback service")):
        code, _, _ = tp.run_in(s, A, "timeout 3 bash -c 'echo > /dev/tcp/127.0.0.1/%d'" % port)
        check(code != 0, "connecting to %s fails" % what)

    # another sandbox's files
    tp.run_in(s, A, "echo secret-a > /home/user/a.txt; echo secret-root > /root/r.txt", user="root")
    code, out, _ = tp.run_in(s, B, "cat /home/user/a.txt /root/r.txt 2>&1; "
                                   "grep -rl secret-a / --include=a.txt 2>/dev/null | head -3",
                             user="root")
    check("secret-a" not in out and "secret-root" not in out, "sandbox B cannot read A's files")

    # capabilities: no mount, no module loading, no raw network admin
    code, out, _ = tp.run_in(s, A, "grep CapEff /proc/self/status", user="root")
    eff = int(out.split()[-1], 16) if out.strip() else -1
    for bit, name in ((21, "CAP_SYS_ADMIN"), (16, "CAP_SYS_MODULE"), (12, "CAP_NET_ADMIN"),
                      (17, "CAP_SYS_RAWIO"), (19, "CAP_SYS_PTRACE")):
        check(eff >= 0 and not (eff >> bit) & 1, "root in the sandbox lacks %s" % name)
    code, _, _ = tp.run_in(s, A, "mkdir -p /tmp/m && mount -t tmpfs none /tmp/m", user="root")
    check(code != 0, "mount fails for root in the sandbox")
    code, _, _ = tp.run_in(s, A, "python3 - <<'P'\nimport ctypes,sys\nlibc=ctypes.CDLL(None)\n"
                                 "sys.exit(0 if libc.syscall(175, 0, 0, b'') == 0 else 1)\nP",
                           user="root")  # init_module(NULL, 0, "")
    check(code != 0, "init_module fails for root in the sandbox")

    # names from requests cannot leave the state directory
    for tpl in ("../../etc", "..", "/etc/passwd", "base/../../x", "a%2f..%2f..", "."):
        st, _, j = s.create(templateID=tpl)
        check(st in (400, 404), "template %r is refused (%d)" % (tpl, st))
    for bad in ("..", "../x", "a/b", "%2e%2e"):
        st, _, _ = s.json("GET", "/sandboxes/" + bad)
        check(st in (400, 404), "sandbox id %r is refused (%d)" % (bad, st))
    # snapshot (template) and volume ids by path: a decoded "../" must not reach a directory
    # outside the state dir, so a sentinel beside it survives every attempt
    sentinel = tempfile.mkdtemp(prefix="abx-iso-sentinel-")
    for bad in ("..", "%2e%2e", "..%2f..%2f" + os.path.basename(sentinel), "%2e%2e%2fx"):
        for method, path in (("GET", "/volumes/" + bad), ("DELETE", "/volumes/" + bad),
                             ("DELETE", "/templates/" + bad), ("GET", "/templates/" + bad)):
            st, _, _ = s.json(method, path)
            check(st in (400, 404, 405), "%s %s is refused (%d)" % (method, path, st))
    check(os.path.isdir(sentinel), "a directory beside the state dir survives those requests")
    os.rmdir(sentinel)

    # every control-plane route requires the key
    routes = [("GET", "/v2/sandboxes"), ("GET", "/sandboxes"), ("POST", "/sandboxes"),
              ("GET", "/sandboxes/" + A), ("DELETE", "/sandboxes/" + A),
              ("POST", "/sandboxes/%s/timeout" % A), ("POST", "/sandboxes/%s/connect" % A),
              ("POST", "/sandboxes/%s/pause" % A), ("POST", "/sandboxes/%s/resume" % A),
              ("POST", "/sandboxes/%s/refreshes" % A), ("GET", "/sandboxes/%s/metrics" % A),
              ("POST", "/sandboxes/%s/snapshots" % A), ("GET", "/snapshots"),
              ("DELETE", "/templates/x"), ("GET", "/volumes"), ("POST", "/volumes"),
              ("PUT", "/sandboxes/%s/network" % A)]
    for method, path in routes:
        st, _, _ = s.request(method, path, body={} if method in ("POST", "PUT") else None, key=False)
        check(st == 401, "%s %s without the key is 401 (%d)" % (method, path, st))
        st, _, _ = s.request(method, path, body={} if method in ("POST", "PUT") else None,
                             key="e2b_" + "0" * 40)
        check(st == 401, "%s %s with a wrong key is 401 (%d)" % (method, path, st))
    st, _, _ = s.json("GET", "/sandboxes/" + A)
    check(st == 200, "sandbox A still exists after the unauthenticated attempts")

    # envd requires its token when the sandbox is secure
    st, _, sec = s.create(secure=True, timeout=60)
    try:
        tp.run_in(s, sec["sandboxID"], "true")
        check(False, "a secure sandbox's envd refuses a call without the token")
    except AssertionError as e:
        check("401" in str(e), "a secure sandbox's envd refuses a call without the token")
    code, out, _ = tp.run_in(s, sec["sandboxID"], "echo in", token=sec["envdAccessToken"])
    check(code == 0 and out == "in\n", "with the token it answers")
finally:
    s.stop()
    host_srv.shutdown()

finish()
