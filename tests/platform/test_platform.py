#!/usr/bin/env python3
"""Platform tests for `abxlua serve` (the embedded local E2B platform).

Usage: test_platform.py [path/to/abxlua]

Starts `abxlua serve --port 0 --ready-fd 3` and checks, over real HTTP, the control plane
(docs/protocol/e2b-control-plane.md §2-§3), the ingress (§7) and sandbox isolation. Checks run in
order; each prints PASS/FAIL/SKIP; the exit status is 1 when any check failed.
"""
import base64
import http.client
import json
import os
import re
import signal
import struct
import subprocess
import sys
import time
import urllib.parse

BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../build/abxlua")
ENVD_PORT = 49983
ID_RE = re.compile(r"^i[a-z0-9]{20}$")
RFC3339_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")


class Server:
    def __init__(self, env_extra=None, args=()):
        r, w = os.pipe()
        env = dict(os.environ)
        env.pop("ABX_LOCAL_API_KEY", None)
        env.update(env_extra or {})
        self.proc = subprocess.Popen([BIN, "serve", "--port", "0", "--ready-fd", str(w), *args],
                                     pass_fds=(w,), env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        os.close(w)
        data = b""
        deadline = time.time() + 10
        while not data.endswith(b"\n") and time.time() < deadline:
            chunk = os.read(r, 4096)
            if not chunk:
                break
            data += chunk
        os.close(r)
        if not data:
            self.proc.kill()
            raise RuntimeError("serve did not write its ready line: %r" % (self.proc.communicate()[1],))
        self.ready = json.loads(data)
        self.port = self.ready["port"]
        self.key = self.ready["api_key"]
        self.state_dir = os.path.join(os.environ.get("TMPDIR") or "/tmp", "abxlua-serve.%d" % self.proc.pid)

    def request(self, method, path, body=None, key=True, headers=None, host=None, timeout=30):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = dict(headers or {})
        if key is True:
            h["X-API-Key"] = self.key
        elif key:
            h["X-API-Key"] = key
        if host:
            h["Host"] = host
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
            h.setdefault("Content-Type", "application/json")
        c.request(method, path, body, h)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data

    def json(self, method, path, body=None, **kw):
        st, hd, data = self.request(method, path, body, **kw)
        try:
            j = json.loads(data) if data else None
        except ValueError:
            j = data
        return st, hd, j

    def create(self, **fields):
        body = {"templateID": "base", "timeout": 60}
        body.update(fields)
        return self.json("POST", "/sandboxes", body)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            out, err = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        return self.proc.returncode, out, err


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


# ---- envd helpers (docs/protocol/envd-protocol.md §2.3, §4.3) ------------------------------------

def run_in(srv, sid, cmd, user="user", timeout=30, times=None, token=None):
    """Run `bash -c cmd` in sandbox `sid` through process.Process/Start via the ingress (header
    routing). Returns (exit_code, stdout, stderr). When `times` is a list, appends
    (seconds since request, kind) for every event as it arrives."""
    msg = json.dumps({"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}}).encode()
    body = b"\x00" + struct.pack(">I", len(msg)) + msg
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=timeout)
    t0 = time.time()
    c.request("POST", "/process.Process/Start", body, {
        "Content-Type": "application/connect+json", "Connect-Protocol-Version": "1",
        "E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": str(ENVD_PORT),
        "Authorization": "Basic " + base64.b64encode((user + ":").encode()).decode(),
        **({"X-Access-Token": token} if token else {})})
    r = c.getresponse()
    if r.status != 200:
        raise AssertionError("Start answered %d: %r" % (r.status, r.read()[:300]))
    buf, out, err, code, ended = b"", b"", b"", None, False
    while not ended:
        chunk = r.read1(65536)
        if not chunk:
            break
        buf += chunk
        while len(buf) >= 5:
            flags, n = struct.unpack(">BI", buf[:5])
            if len(buf) < 5 + n:
                break
            payload = json.loads(buf[5:5 + n] or b"{}")
            buf = buf[5 + n:]
            if flags & 2:
                check("error" not in payload, "stream error: %r" % payload)
                ended = True
                break
            ev = payload.get("event", {})
            if times is not None:
                times.append((time.time() - t0, next(iter(ev), "?")))
            if "data" in ev:
                out += base64.b64decode(ev["data"].get("stdout", ""))
                err += base64.b64decode(ev["data"].get("stderr", ""))
            if "end" in ev:
                code = ev["end"].get("exitCode", 0)
    c.close()
    check(ended, "stream ended without an end-stream envelope")
    return code, out.decode(errors="replace"), err.decode(errors="replace")


# ---- checks ------------------------------------------------------------------------------------

def t_ready_line(s, ctx):
    r = s.ready
    check(set(r) == {"url", "port", "api_key", "domain", "access_token"}, "ready keys: %r" % r)
    check(re.fullmatch(r"sk_e2b_[0-9a-f]{40}", r["access_token"]), "access token %r" % r["access_token"])
    check(r["url"] == "http://127.0.0.1:%d" % r["port"], "url %r" % r["url"])
    check(re.match(r"^e2b_[0-9a-f]{40}$", r["api_key"]), "api key %r" % r["api_key"])
    check(r["domain"] == "localhost", "domain %r" % r["domain"])


def t_health(s, ctx):
    st, _, data = s.request("GET", "/health", key=False)
    check(st == 200 and data == b"Health check successful", "health %d %r" % (st, data))


def t_auth(s, ctx):
    for key in (False, "e2b_" + "0" * 40, ""):
        st, _, j = s.json("GET", "/v2/sandboxes", key=key)
        check(st == 401, "key %r gave %d" % (key, st))
        check(isinstance(j, dict) and j.get("code") == 401 and j.get("message"), "401 body %r" % j)
    st, _, _ = s.json("GET", "/v2/sandboxes", key=False, headers={"x-api-key": s.key})
    check(st == 200, "lower-case header name gave %d" % st)


def t_create_shape(s, ctx):
    st, _, j = s.create(metadata={"user": "abc", "app": "prod"}, envVars={"FOO": "bar"})
    check(st == 201, "create %d %r" % (st, j))
    check(ID_RE.match(j["sandboxID"]), "id %r" % j["sandboxID"])
    check(j["templateID"] == "base" and j["alias"] == "base", "template %r" % j)
    check(j["clientID"] == "6532622b" and j["envdVersion"] == "0.6.4", "ids %r" % j)
    check("trafficAccessToken" in j and j["trafficAccessToken"] is None, "traffic token %r" % j)
    check("envdAccessToken" not in j, "token without secure: %r" % j)
    check(j["domain"] == "localhost", "domain %r" % j)
    ctx["a"] = j["sandboxID"]
    st, _, j = s.create(metadata={"user": "xyz"}, secure=True)
    check(st == 201 and re.match(r"^[0-9a-f]{16,}$", j.get("envdAccessToken", "")), "secure %r" % j)
    ctx["b"] = j["sandboxID"]
    ctx["b_token"] = j["envdAccessToken"]


def t_create_validation(s, ctx):
    cases = [("{not json", "validation error"), ({"timeout": 10}, "validation error"),
             ({"templateID": 5}, "validation error"), ({"templateID": "base", "timeout": 0},
                                                         "Timeout must be greater than 0"),
             ({"templateID": "base", "timeout": -3}, "Timeout must be greater than 0"),
             ({"templateID": "base", "timeout": "x"}, "validation error"),
             ({"templateID": "base", "metadata": {"a": 1}}, "validation error"),
             ({"templateID": "base", "secure": "yes"}, "validation error")]
    for body, want in cases:
        st, _, j = s.json("POST", "/sandboxes", body)
        check(st == 400 and j["code"] == 400 and want in j["message"], "%r → %d %r" % (body, st, j))
    st, _, j = s.json("POST", "/sandboxes", {"templateID": "nope"})
    check(st == 404 and j == {"code": 404, "message": "template 'nope' not found"}, "template %r" % j)


def t_get(s, ctx):
    st, _, j = s.json("GET", "/sandboxes/" + ctx["a"])
    check(st == 200, "get %d %r" % (st, j))
    for f in ("templateID", "sandboxID", "clientID", "startedAt", "endAt", "cpuCount", "memoryMB",
              "diskSizeMB", "state", "envdVersion", "metadata", "alias", "domain"):
        check(f in j, "field %s missing in %r" % (f, j))
    check(j["state"] == "running" and j["metadata"] == {"user": "abc", "app": "prod"}, "%r" % j)
    check(RFC3339_RE.match(j["startedAt"]) and RFC3339_RE.match(j["endAt"]), "times %r" % j)
    check(j["cpuCount"] >= 1 and j["memoryMB"] >= 128, "resources %r" % j)
    check("envdAccessToken" not in j, "token on a non-secure sandbox")
    st, _, j = s.json("GET", "/sandboxes/" + ctx["b"])
    check(j.get("envdAccessToken") == ctx["b_token"], "secure detail %r" % j)
    st, _, j = s.json("GET", "/sandboxes/%s-6532622b" % ctx["a"])
    check(st == 200 and j["sandboxID"] == ctx["a"], "legacy id form %d" % st)


def t_get_errors(s, ctx):
    st, _, j = s.json("GET", "/sandboxes/inotthere00000000000")
    check(st == 404 and j == {"code": 404, "message":
          'Sandbox "inotthere00000000000" doesn\'t exist or you don\'t have access to it'}, "%r" % j)
    for bad in ("ABC", "a_b", "%2e%2e"):
        st, _, j = s.json("GET", "/sandboxes/" + bad)
        check(st == 400 and j == {"code": 400, "message": "Invalid sandbox ID"}, "%s → %d %r" % (bad, st, j))


def meta_param(d):
    inner = urllib.parse.urlencode({urllib.parse.quote(k): urllib.parse.quote(v) for k, v in d.items()})
    return urllib.parse.quote(inner, safe="")


def ids(j):
    return [x["sandboxID"] for x in j]


def t_list_filters(s, ctx):
    st, hd, j = s.json("GET", "/v2/sandboxes")
    check(st == 200 and {ctx["a"], ctx["b"]} <= set(ids(j)), "list %r" % j)
    check("x-next-token" not in hd, "next token without more results")
    st, _, j = s.json("GET", "/v2/sandboxes?metadata=" + meta_param({"user": "abc", "app": "prod"}))
    check(st == 200 and ids(j) == [ctx["a"]], "metadata filter %r" % j)
    st, _, j = s.json("GET", "/v2/sandboxes?metadata=" + meta_param({"user": "nobody"}))
    check(st == 200 and j == [], "metadata miss %r" % j)
    st, _, j = s.json("GET", "/v2/sandboxes?state=paused")
    check(st == 200 and j == [], "paused %r" % j)
    st, _, j = s.json("GET", "/v2/sandboxes?state=running,paused")
    check(st == 200 and {ctx["a"], ctx["b"]} <= set(ids(j)), "running,paused %r" % j)
    st, _, j = s.json("GET", "/v2/sandboxes?state=bogus")
    check(st == 400, "bad state gave %d" % st)
    st, _, j = s.json("GET", "/sandboxes?metadata=" + meta_param({"user": "xyz"}))
    check(st == 200 and ids(j) == [ctx["b"]], "deprecated list %r" % j)
    x = j[0]
    check(x["state"] == "running" and x["clientID"] == "6532622b" and "envdAccessToken" not in x, "%r" % x)


def t_pagination(s, ctx):
    st, _, j = s.create()
    check(st == 201, "third create %d" % st)
    ctx["c"] = j["sandboxID"]
    st, _, everything = s.json("GET", "/v2/sandboxes")
    want = ids(everything)
    starts = [x["startedAt"] for x in everything]
    check(starts == sorted(starts, reverse=True), "not newest first: %r" % starts)
    seen, token, pages = [], None, 0
    while True:
        path = "/v2/sandboxes?limit=1" + ("&nextToken=" + urllib.parse.quote(token) if token else "")
        st, hd, j = s.json("GET", path)
        check(st == 200 and len(j) <= 1, "page %d %r" % (st, j))
        seen += ids(j)
        pages += 1
        token = hd.get("x-next-token")
        if not token or pages > 10:
            break
    check(seen == want, "pages %r vs %r" % (seen, want))
    check(pages == len(want), "pages %d for %d sandboxes" % (pages, len(want)))
    for q in ("limit=0", "limit=101", "limit=x", "nextToken=%21%21%21", "nextToken=" +
              base64.urlsafe_b64encode(b"nonsense").decode()):
        st, _, j = s.json("GET", "/v2/sandboxes?" + q)
        check(st == 400 and j["code"] == 400, "%s → %d" % (q, st))
    st, _, j = s.json("GET", "/v2/sandboxes?nextToken=%21")
    check(j["message"] == "Invalid next token", "%r" % j)


def end_at(s, sid):
    st, _, j = s.json("GET", "/sandboxes/" + sid)
    check(st == 200, "get %d" % st)
    from datetime import datetime
    return datetime.strptime(j["endAt"].replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def t_timeout_connect(s, ctx):
    sid = ctx["c"]
    st, _, _ = s.request("POST", "/sandboxes/%s/timeout" % sid, {"timeout": 500})
    check(st == 204, "timeout %d" % st)
    check(abs(end_at(s, sid) - (time.time() + 500)) < 3, "endAt not now+500")
    st, _, _ = s.request("POST", "/sandboxes/%s/timeout" % sid, {"timeout": 100})
    check(abs(end_at(s, sid) - (time.time() + 100)) < 3, "timeout did not shorten")
    st, _, j = s.json("POST", "/sandboxes/%s/connect" % sid, {"timeout": 10})
    check(st == 200 and j["sandboxID"] == sid and j["envdVersion"] == "0.6.4", "connect %d %r" % (st, j))
    check(abs(end_at(s, sid) - (time.time() + 100)) < 3, "connect shortened the TTL")
    st, _, j = s.json("POST", "/sandboxes/%s/connect" % sid, {"timeout": 300})
    check(abs(end_at(s, sid) - (time.time() + 300)) < 3, "connect did not extend")
    for path in ("/sandboxes/inotthere00000000000/timeout", "/sandboxes/inotthere00000000000/connect"):
        st, _, j = s.json("POST", path, {"timeout": 10})
        check(st == 404 and j["code"] == 404, "%s → %d" % (path, st))
    st, _, j = s.json("POST", "/sandboxes/%s/timeout" % sid, {"timeout": "x"})
    check(st == 400, "bad timeout body %d" % st)


def t_ttl(s, ctx):
    st, _, j = s.create(timeout=2)
    check(st == 201, "create %d" % st)
    sid = j["sandboxID"]
    deadline = time.time() + 6
    while time.time() < deadline:
        st, _, _ = s.json("GET", "/sandboxes/" + sid)
        if st == 404:
            break
        time.sleep(0.2)
    check(st == 404, "sandbox still there after its TTL")
    # the registry forgets the sandbox first, then kills it and removes its state: allow a moment
    gone_by = time.time() + 5
    while os.path.exists(os.path.join(s.state_dir, sid)) and time.time() < gone_by:
        time.sleep(0.1)
    check(not os.path.exists(os.path.join(s.state_dir, sid)), "state dir of expired sandbox left")


def t_kill_twice(s, ctx):
    st, _, j = s.create()
    sid = j["sandboxID"]
    st, _, data = s.request("DELETE", "/sandboxes/" + sid)
    check(st == 204 and data == b"", "first kill %d %r" % (st, data))
    st, _, j = s.json("DELETE", "/sandboxes/" + sid)
    check(st == 404 and j["code"] == 404 and sid in j["message"], "second kill %d %r" % (st, j))
    check(not os.path.exists(os.path.join(s.state_dir, sid)), "state dir left after kill")


def t_ingress_routing(s, ctx):
    sid = ctx["a"]
    st, _, _ = s.request("GET", "/health", key=False,
                         headers={"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": str(ENVD_PORT)})
    check(st == 204, "envd health by headers %d" % st)
    st, _, _ = s.request("GET", "/health", key=False, host="%d-%s.localhost:%d" % (ENVD_PORT, sid, s.port))
    check(st == 204, "envd health by host %d" % st)
    st, _, j = s.json("GET", "/health", key=False, host="8080-%s.localhost" % sid)
    check(st == 502 and j == {"sandboxId": sid, "message": "The sandbox is running but port is not open",
                              "port": 8080, "code": 502}, "closed port %d %r" % (st, j))
    st, _, j = s.json("GET", "/health", key=False, headers={"E2b-Sandbox-Id": "inotthere00000000000",
                                                            "E2b-Sandbox-Port": "49983"})
    check(st == 502 and j == {"sandboxId": "inotthere00000000000", "message": "The sandbox was not found",
                              "code": 502}, "unknown sandbox %d %r" % (st, j))
    st, _, j = s.json("GET", "/health", key=False, headers={"E2b-Sandbox-Id": sid})
    check(st == 400, "half routing info %d" % st)


def t_stream_and_user(s, ctx):
    times = []
    code, out, err = run_in(s, ctx["a"], "id -un; for i in 1 2 3; do echo tick$i; sleep 0.6; done", times=times)
    check(code == 0 and out == "user\ntick1\ntick2\ntick3\n", "run %r %r %r" % (code, out, err))
    first = [t for t, k in times if k == "data"][0]
    last = times[-1][0]
    check(last - first > 1.0, "output was not streamed (first data at %.2fs, end at %.2fs)" % (first, last))
    code, out, _ = run_in(s, ctx["a"], "echo $FOO; hostname", user="root")
    check(out == "bar\n%s\n" % ctx["a"], "env/hostname %r" % out)


def t_isolation_processes(s, ctx):
    code, out, _ = run_in(s, ctx["a"], "ps -e -o pid=")
    pids = [int(x) for x in out.split()]
    check(code == 0 and 0 < len(pids) < 10, "ps in sandbox: %r" % out)
    check(os.getpid() not in pids or len(pids) < 10, "host pid visible")
    code, out, _ = run_in(s, ctx["a"], "ps ax -o args=")
    check("test_platform" not in out and "abxlua serve" not in out, "host processes visible: %r" % out)


def t_isolation_files(s, ctx):
    code, _, _ = run_in(s, ctx["a"], "echo secret-a > /home/user/a-only.txt && echo ok > /tmp/a-tmp")
    check(code == 0, "write in A failed")
    check(os.path.exists(os.path.join(s.state_dir, ctx["a"], "upper", "root", "home", "user", "a-only.txt")),
          "file not in A's upper layer")
    try:
        run_in(s, ctx["b"], "true")
        raise AssertionError("secure sandbox ran a command without X-Access-Token")
    except AssertionError as e:
        check("401" in str(e), "secure sandbox without token: %s" % e)
    code, out, _ = run_in(s, ctx["b"], "cat /home/user/a-only.txt /tmp/a-tmp; "
                          "find / -xdev -name a-only.txt 2>/dev/null; ls %s" % s.state_dir, user="root",
                          token=ctx["b_token"])
    check(code != 0 and "secret-a" not in out and "a-only" not in out, "B sees A's files: %r" % out)
    code, out, _ = run_in(s, ctx["b"], "ls /work /home /root 2>&1; cat /etc/passwd", user="root",
                          token=ctx["b_token"])
    check("/work" in out and "No such file" in out, "host /work visible: %r" % out)
    check("user:x:1000:1000" in out, "passwd %r" % out)


def t_isolation_network(s, ctx):
    code, out, err = run_in(s, ctx["a"], "echo > /dev/tcp/127.0.0.1/%d && echo reached" % s.port)
    check(code != 0 and "reached" not in out, "platform port reachable from the sandbox: %r %r" % (out, err))
    code, out, _ = run_in(s, ctx["a"], "cat /proc/net/dev | tail -n +3 | cut -d: -f1")
    # loopback, plus eth0 (the sandbox's own link into the platform's hub namespace, network.h)
    check(sorted(x.strip() for x in out.split()) in (["lo"], ["eth0", "lo"]), "interfaces %r" % out)


def t_sandbox_binary(s, ctx):
    """/opt/abx/abxlua in a sandbox is abxlua-envd when it sits beside abxlua (envd and sudo only,
    without the engine's libraries), the full abxlua otherwise (platform/sandbox/sandbox.c)."""
    small = os.path.join(os.path.dirname(os.path.abspath(BIN)), "abxlua-envd")
    want = small if os.access(small, os.X_OK) else os.path.abspath(BIN)
    code, out, err = run_in(s, ctx["a"], "stat -c %s /opt/abx/abxlua; /opt/abx/abxlua run x; echo rc=$?",
                            user="root")
    check(out.split()[:1] == [str(os.path.getsize(want))],
          "the sandbox's binary is %s: %r" % (os.path.basename(want), out))
    refused = "rc=4" in out and "sandbox side of abxlua" in err
    check(refused == (want == small), "abxlua-envd refuses `run`, abxlua does not: %r %r" % (out, err))
    code, out, _ = run_in(s, ctx["a"], "sudo -n id -u")
    check(code == 0 and out.strip() == "0", "sudo through the sandbox binary: %r" % out)


def sandbox_pids(state_dir):
    """Pids of bwrap processes for this server and all their descendants."""
    procs = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
            ppid = int(st[st.rindex(")") + 2:].split()[1])
            procs[int(d)] = (ppid, cmd, st[st.rindex(")") + 2])
        except (OSError, ValueError):
            continue
    roots = {p for p, (_, cmd, _) in procs.items() if state_dir in cmd}
    found, changed = set(roots), True
    while changed:
        changed = False
        for p, (pp, _, _) in procs.items():
            if pp in found and p not in found:
                found.add(p)
                changed = True
    return found


def mounts_under(d):
    """Mount points at d or below it, from this process's mountinfo (spaces unescaped)."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4].replace("\\040", " ")
            if mp == d or mp.startswith(d + "/"):
                out.append(mp)
    return out


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            st = f.read()
        return st[st.rindex(")") + 2] not in "ZX"
    except OSError:
        return False


def start_for_checks(cgroup):
    """The Server for a list of t_* checks, or an exit status 77 (skipped) when this is not root,
    /sys/fs/cgroup/<cgroup> is missing or the real envd does not start (a probe sandbox)."""
    if os.geteuid() != 0:
        print("SKIP: abxlua serve needs root (bubblewrap, overlayfs, cgroups)")
        return 77
    if not os.path.isdir("/sys/fs/cgroup/" + cgroup):
        print("SKIP: no cgroup v1 %s hierarchy" % cgroup)
        return 77
    s = Server()
    st, _, j = s.create()
    if st != 201:
        s.stop()
        print("SKIP: the real envd does not start: %r" % (j,))
        return 77
    s.request("DELETE", "/sandboxes/" + j["sandboxID"])
    return s


def run_checks(s, ctx, checks, only=None, width=28, outcome=None):
    """Runs each check fn(s, ctx) in order (only those named in the comma list `only`, by name
    without the t_ prefix, when given), prints PASS/FAIL with its time and keeps going after a
    failure. outcome(fn) may name a passing check's status instead of PASS (e.g. XFAIL). Returns
    the number that failed."""
    failed = 0
    for fn in checks:
        name = fn.__name__[2:]
        if only and name not in only.split(","):
            continue
        t0 = time.time()
        try:
            fn(s, ctx)
            print("%s %-*s %.2fs" % (outcome(fn) if outcome else "PASS", width, name, time.time() - t0))
        except Exception as e:  # noqa: BLE001 - report every failure and keep going
            failed += 1
            print("FAIL %-*s %s: %s" % (width, name, type(e).__name__, e))
    return failed


def stop_and_sum(s, failed):
    """Stops serve (SIGTERM), counts a non-zero exit as one more failure (with its stderr tail),
    prints the total and returns the exit status of a check list: 1 when any failed, else 0."""
    code, _, err = s.stop()
    if code != 0:
        print("FAIL serve exit %r: %s" % (code, err.decode(errors="replace")[-500:]))
        failed += 1
    print("%d failed" % failed)
    return 1 if failed else 0


def t_shutdown(s, ctx):
    pids = sandbox_pids(s.state_dir)
    check(len(pids) >= 2, "no sandbox processes found before shutdown: %r" % pids)
    rc, out, err = s.stop()
    ctx["stopped"] = True
    check(rc == 0, "serve exit %r: %r" % (rc, err[-500:]))
    check(b"api key e2b_" in out and b"listening on http://127.0.0.1:" in out, "stdout %r" % out)
    left = [p for p in pids if alive(p)]
    check(not left, "processes left after SIGTERM: %r" % left)
    check(not os.path.exists(s.state_dir), "state dir left: %s" % s.state_dir)


def t_bad_env_key(s, ctx):
    env = dict(os.environ, ABX_LOCAL_API_KEY="not-a-key")
    p = subprocess.run([BIN, "serve", "--port", "0"], env=env, capture_output=True, timeout=10)
    check(p.returncode == 4 and b"ABX_LOCAL_API_KEY" in p.stderr, "bad key: %r %r" % (p.returncode, p.stderr))


def t_port_taken(s, ctx):
    """A port already taken: serve says so, exits 1 and leaves no state dir (the rows of serve.c's
    start table that started stop in reverse)."""
    import socket
    import tempfile
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    tmp = tempfile.mkdtemp()
    try:
        env = dict(os.environ, TMPDIR=tmp)
        env.pop("ABX_LOCAL_API_KEY", None)
        p = subprocess.run([BIN, "serve", "--port", str(taken.getsockname()[1])], env=env,
                           capture_output=True, timeout=30)
        check(p.returncode == 1 and b"cannot listen on 127.0.0.1:" in p.stderr,
              "port taken: %r %r" % (p.returncode, p.stderr[-300:]))
        check(os.listdir(tmp) == [], "left in TMPDIR: %r" % os.listdir(tmp))
    finally:
        taken.close()
        subprocess.run(["rm", "-rf", tmp])


CHECKS = [t_ready_line, t_health, t_auth, t_create_shape, t_create_validation, t_get, t_get_errors,
          t_list_filters, t_pagination, t_timeout_connect, t_ttl, t_kill_twice, t_ingress_routing,
          t_stream_and_user, t_isolation_processes, t_isolation_files, t_isolation_network,
          t_sandbox_binary,
          t_shutdown, t_bad_env_key, t_port_taken]


def main():
    if os.geteuid() != 0:
        print("SKIP: abxlua serve needs root (bubblewrap namespaces, setns)")
        return 77
    ctx = {}
    s = Server()
    failed = 0
    try:
        for fn in CHECKS:
            name = fn.__name__[2:]
            t0 = time.time()
            try:
                fn(s, ctx)
                print("PASS %-22s %.2fs" % (name, time.time() - t0))
            except Exception as e:  # noqa: BLE001 - report every failure and keep going
                failed += 1
                print("FAIL %-22s %s: %s" % (name, type(e).__name__, e))
    finally:
        if not ctx.get("stopped"):
            s.stop()
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
