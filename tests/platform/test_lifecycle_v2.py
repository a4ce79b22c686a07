#!/usr/bin/env python3
"""Lifecycle fidelity of `abxlua serve`: auto-resume on traffic, lifecycle in get_info, the
filesystem-only pause (a fresh boot with its own boot id), fork and network.maskRequestHost.

Usage: test_lifecycle_v2.py [path/to/abxlua]

Covers issue 10 parts 2, 3 and the maskRequestHost item of 5, over real HTTP with the real envd
(docs/PLATFORM.md "Pause and resume", "Fork", "maskRequestHost"; docs/protocol/e2b-control-plane.md
§3.2-§3.4, docs/protocol/e2b-v2-and-peers.md §1.3-§1.4). Each check prints PASS/FAIL; the exit
status is 1 when any failed, 77 when skipped (not root, no cgroup v1 freezer, or envd not usable).
"""
import os
import sys
import threading
import time
from datetime import datetime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_platform as tp  # noqa: E402  (Server, run_in, check)

check = tp.check
ENVD = str(tp.ENVD_PORT)

PAUSED = {"message": "The sandbox is paused", "code": 502}


def ok(s, sid, cmd, user="root", token=None):
    code, out, err = tp.run_in(s, sid, cmd, user=user, token=token)
    check(code == 0, "%r in %s: exit %r, %r %r" % (cmd, sid, code, out, err))
    return out


def new(s, **kw):
    st, _, j = s.create(**kw)
    check(st == 201, "create %r: %d %r" % (kw, st, j))
    return j


def info(s, sid):
    st, _, j = s.json("GET", "/sandboxes/" + sid)
    check(st == 200, "get %s: %d %r" % (sid, st, j))
    return j


def ts(v):
    return datetime.strptime(v.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def pause(s, sid, memory=None):
    st, _, data = s.request("POST", "/sandboxes/%s/pause" % sid,
                            None if memory is None else {"memory": memory})
    check(st == 204, "pause %s (memory %r): %d %r" % (sid, memory, st, data))


def port_get(s, sid, port, headers=None, path="/"):
    h = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": str(port)}
    h.update(headers or {})
    return s.json("GET", path, key=False, headers=h)


def start_http(s, sid, port, token=None):
    ok(s, sid, "cd /tmp && setsid python3 -m http.server %d --bind 127.0.0.1 >/dev/null 2>&1 "
       "</dev/null & echo started" % port, token=token)
    deadline = time.time() + 15
    while time.time() < deadline:
        st, _, _ = port_get(s, sid, port)
        if st == 200:
            return
        time.sleep(0.2)
    raise AssertionError("http.server on %d did not answer" % port)


def boot_id(s, sid, token=None):
    return ok(s, sid, "cat /proc/sys/kernel/random/boot_id", token=token).strip()


def sleeper(s, sid, token=None):
    """A background process; returns its pid inside the sandbox."""
    ok(s, sid, "setsid sleep 1000 >/dev/null 2>&1 </dev/null & echo $! > /tmp/sleeper.pid",
       token=token)
    return ok(s, sid, "cat /tmp/sleeper.pid", token=token).strip()


def alive_in(s, sid, pid, token=None):
    code, _, _ = tp.run_in(s, sid, "kill -0 %s" % pid, user="root", token=token)
    return code == 0


def cgroup_procs(s, sid):
    """Pids in the sandbox's freezer cgroup (cgroup.h layout), None when it is not found."""
    want = os.path.join("serve.%d" % s.proc.pid, sid)
    for root, dirs, _ in os.walk("/sys/fs/cgroup/freezer"):
        if root.endswith(want):
            with open(os.path.join(root, "cgroup.procs")) as f:
                return [int(x) for x in f.read().split()]
        if root.count("/") > 10:
            dirs[:] = []
    return None


def kill(s, sid):
    s.request("DELETE", "/sandboxes/" + sid)


# ---- lifecycle in get_info ---------------------------------------------------------------------

def t_get_info_lifecycle(s, ctx):
    a = new(s, autoPause=True, autoResume={"enabled": True})["sandboxID"]
    b = new(s)["sandboxID"]
    ctx["auto"] = a
    check(info(s, a)["lifecycle"] == {"autoResume": True, "onTimeout": "pause"},
          "autoResume sandbox lifecycle %r" % info(s, a).get("lifecycle"))
    check(info(s, b)["lifecycle"] == {"autoResume": False, "onTimeout": "kill"},
          "plain sandbox lifecycle %r" % info(s, b).get("lifecycle"))
    ctx["plain"] = b


# ---- auto-resume ---------------------------------------------------------------------------------

def t_paused_502_without_auto_resume(s, ctx):
    b = ctx["plain"]
    start_http(s, b, 8000)
    pause(s, b)
    for port in (8000, ENVD):
        st, _, j = port_get(s, b, port)
        check(st == 502 and j == dict(PAUSED, sandboxId=b, canAutoResume=False),
              "port %s of a paused sandbox without autoResume: %d %r" % (port, st, j))
    check(info(s, b)["state"] == "paused", "a request resumed a sandbox without autoResume")
    kill(s, b)


def t_auto_resume_port(s, ctx):
    a = ctx["auto"]
    start_http(s, a, 8000)
    bid = boot_id(s, a)
    pause(s, a)
    check(info(s, a)["state"] == "paused", "not paused")
    t0 = time.time()
    st, _, _ = port_get(s, a, 8000)
    check(st == 200, "request to port 8000 of a paused autoResume sandbox: %d" % st)
    j = info(s, a)
    check(j["state"] == "running", "state after auto-resume %r" % j["state"])
    # TTL of an auto-resume: now + max(create timeout (60 here), 300 s) (lifecycle.h)
    check(abs(ts(j["endAt"]) - (t0 + 300)) < 5, "auto-resume TTL: endAt %r, want now+300" % j["endAt"])
    check(boot_id(s, a) == bid, "a memory auto-resume changed the boot id")


def t_auto_resume_envd(s, ctx):
    j = new(s, secure=True, autoPause=True, autoResume={"enabled": True})
    sid, tok = j["sandboxID"], j["envdAccessToken"]
    ok(s, sid, "echo hi > /tmp/x", token=tok)
    pause(s, sid)
    st, _, body = port_get(s, sid, ENVD, path="/envs")
    check(st == 403 and body.get("code") == 403 and "can't be resumed" in body.get("message", ""),
          "envd request without X-Access-Token: %d %r" % (st, body))
    check(info(s, sid)["state"] == "paused", "resumed without the envd access token")
    out = ok(s, sid, "cat /tmp/x", token=tok)  # through envd's port, with the token
    check(out == "hi\n", "after an envd auto-resume %r" % out)
    check(info(s, sid)["state"] == "running", "envd request did not resume")
    kill(s, sid)


def t_auto_resume_traffic_token(s, ctx):
    j = new(s, secure=True, autoPause=True, autoResume={"enabled": True},
            network={"allowPublicTraffic": False})
    sid, tt = j["sandboxID"], j["trafficAccessToken"]
    pause(s, sid)
    st, _, body = port_get(s, sid, 8000)
    check(st == 403 and "can't be resumed" in body.get("message", ""),
          "port request without the traffic token: %d %r" % (st, body))
    st, _, body = port_get(s, sid, 8000, {"e2b-traffic-access-token": "0" * 64})
    check(st == 403 and info(s, sid)["state"] == "paused", "wrong traffic token: %d %r" % (st, body))
    st, _, body = port_get(s, sid, 8000, {"e2b-traffic-access-token": tt})
    check(st == 502 and body.get("port") == 8000,
          "with the token: resumed, port closed: %d %r" % (st, body))
    check(info(s, sid)["state"] == "running", "the traffic token did not resume")
    kill(s, sid)


def t_auto_resume_concurrent(s, ctx):
    a = ctx["auto"]
    pid = sleeper(s, a)
    pause(s, a)
    res = []

    def hit():
        st, _, _ = port_get(s, a, 8000)
        res.append(st)
    th = [threading.Thread(target=hit) for _ in range(6)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    check(res == [200] * 6, "concurrent requests to a paused sandbox: %r" % res)
    check(info(s, a)["state"] == "running", "not running after concurrent auto-resume")
    check(alive_in(s, a, pid), "a memory auto-resume lost a process")


def t_auto_resume_not_fs_paused(s, ctx):
    a = ctx["auto"]
    pause(s, a, memory=False)
    st, _, j = port_get(s, a, ENVD, path="/health")
    check(st == 502 and j == dict(PAUSED, sandboxId=a, canAutoResume=False),
          "filesystem-paused autoResume sandbox: %d %r" % (st, j))
    st, _, j = s.json("POST", "/sandboxes/%s/resume" % a, {"timeout": 60})  # deprecated route
    check(st == 201 and j["sandboxID"] == a, "resume of a fs-paused sandbox %d %r" % (st, j))
    check(ok(s, a, "echo up") == "up\n", "not usable after /resume of a fs pause")
    kill(s, a)


# ---- filesystem-only pause ---------------------------------------------------------------------

def t_fs_pause(s, ctx):
    sid = new(s, metadata={"k": "v"}, envVars={"ABX_E": "env-kept"})["sandboxID"]
    ok(s, sid, "echo kept > /home/user/f && mkdir -p /opt/d && echo deep > /opt/d/g", user="root")
    pid = sleeper(s, sid)
    bid = boot_id(s, sid)
    check(len(bid) == 36 and bid != open("/proc/sys/kernel/random/boot_id").read().strip(),
          "boot id %r is the host's or malformed" % bid)
    pause(s, sid, memory=False)
    j = info(s, sid)
    check(j["state"] == "paused" and j["domain"] is None, "fs-paused detail %r" % j)
    procs = cgroup_procs(s, sid)
    check(procs == [], "processes left in the sandbox's cgroup after a fs pause: %r" % procs)
    st, _, lst = s.json("GET", "/v2/sandboxes?state=paused")
    check(st == 200 and sid in [x["sandboxID"] for x in lst], "fs-paused not listed as paused %r" % lst)
    st, _, m = s.json("GET", "/sandboxes/%s/metrics" % sid)
    check(st == 200 and isinstance(m, list), "metrics of a fs-paused sandbox %d %r" % (st, m))
    st, _, snap = s.json("POST", "/sandboxes/%s/snapshots" % sid, {"name": "fs-paused-snap"})
    check(st == 201, "snapshot of a fs-paused sandbox %d %r" % (st, snap))
    r = new(s, templateID="fs-paused-snap")["sandboxID"]
    check(ok(s, r, "cat /home/user/f") == "kept\n", "snapshot of a fs-paused sandbox lacks the file")
    kill(s, r)
    st, _, body = s.request("PUT", "/sandboxes/%s/network" % sid, {"denyOut": ["10.0.0.0/8"]})
    check(st == 204, "PUT network on a fs-paused sandbox %d %r" % (st, body))
    st, _, j = s.json("POST", "/sandboxes/%s/connect" % sid, {"timeout": 60})
    check(st == 201 and j["sandboxID"] == sid, "connect of a fs-paused sandbox %d %r" % (st, j))
    check(ok(s, sid, "cat /home/user/f /opt/d/g") == "kept\ndeep\n", "files lost by a fs pause")
    check(not alive_in(s, sid, pid) and "sleep 1000" not in ok(s, sid, "ps -eo args"),
          "a process survived a filesystem-only pause")
    check(boot_id(s, sid) != bid, "a fresh boot kept the boot id")
    check(ok(s, sid, "echo $ABX_E") == "env-kept\n", "envVars lost by the reboot")
    check(info(s, sid)["metadata"] == {"k": "v"}, "metadata lost")
    check(info(s, sid)["network"]["denyOut"] == ["10.0.0.0/8"], "network update lost")
    ctx["fs"] = sid


def t_memory_pause_keeps_boot(s, ctx):
    sid = ctx["fs"]
    pid = sleeper(s, sid)
    bid = boot_id(s, sid)
    pause(s, sid)
    st, _, j = s.json("POST", "/sandboxes/%s/resume" % sid, {"timeout": 60})
    check(st == 201, "resume %d %r" % (st, j))
    check(boot_id(s, sid) == bid, "a memory pause changed the boot id")
    check(alive_in(s, sid, pid), "a memory pause lost a process")
    # connect {memory:false} of a memory-paused sandbox: a cold boot from its files
    pause(s, sid)
    st, _, j = s.json("POST", "/sandboxes/%s/connect" % sid, {"timeout": 60, "memory": False})
    check(st == 201, "connect memory false %d %r" % (st, j))
    check(boot_id(s, sid) != bid and not alive_in(s, sid, pid), "connect memory:false was not a boot")
    check(ok(s, sid, "cat /home/user/f") == "kept\n", "files lost")
    st, _, j = s.json("POST", "/sandboxes/%s/pause" % sid, {"memory": "no"})
    check(st == 400 and "memory" in j["message"], "pause memory:'no' %d %r" % (st, j))
    kill(s, sid)


def t_cold_boot_repeated(s, ctx):
    """Memory pause, then connect {memory:false}, many times over: the cold boot halts the frozen
    sandbox and spawns it again while holding its op mutex; the main loop's tick, which runs the
    spawner, once took that mutex (it had reaped the halted bwrap) and both waited forever."""
    sid = new(s, timeout=120)["sandboxID"]
    for i in range(int(os.environ.get("ABX_COLD_BOOTS", "25"))):
        sleeper(s, sid)  # frozen processes for the halt to kill: bwrap takes longer to go
        pause(s, sid)
        st, _, j = s.json("POST", "/sandboxes/%s/connect" % sid, {"timeout": 120, "memory": False},
                          timeout=20)
        check(st == 201, "cold boot %d: connect memory false %d %r" % (i, st, j))
    check(ok(s, sid, "echo alive") == "alive\n", "the sandbox runs after the cold boots")
    kill(s, sid)


def t_fs_auto_pause(s, ctx):
    sid = new(s, timeout=2, autoPause=True, autoPauseMemory=False)["sandboxID"]
    ok(s, sid, "echo marker > /home/user/m")
    bid = boot_id(s, sid)
    deadline = time.time() + 15
    while info(s, sid)["state"] != "paused" and time.time() < deadline:
        time.sleep(0.3)
    check(info(s, sid)["state"] == "paused", "no auto-pause at the TTL")
    time.sleep(2)
    check(info(s, sid)["state"] == "paused", "a fs-paused sandbox was killed by the tick")
    st, _, j = s.json("POST", "/sandboxes/%s/connect" % sid, {"timeout": 60})
    check(st == 201, "connect %d %r" % (st, j))
    check(ok(s, sid, "cat /home/user/m") == "marker\n", "file lost by a fs auto-pause")
    check(boot_id(s, sid) != bid, "fs auto-pause resume kept the boot id")
    kill(s, sid)


# ---- fork --------------------------------------------------------------------------------------

def t_fork(s, ctx):
    src = new(s, metadata={"m": "1"}, envVars={"ABX_F": "from-src"})["sandboxID"]
    ok(s, src, "echo before > /home/user/state.txt && rm /usr/bin/zcat")
    st, _, res = s.json("POST", "/sandboxes/%s/fork" % src, {"count": 2, "timeout": 60})
    check(st == 201 and isinstance(res, list) and len(res) == 2, "fork count 2: %d %r" % (st, res))
    check(all("sandbox" in r and "error" not in r for r in res), "fork results %r" % res)
    ids = [r["sandbox"]["sandboxID"] for r in res]
    check(len(set(ids)) == 2 and src not in ids, "fork ids %r (source %s)" % (ids, src))
    for r in res:
        sb = r["sandbox"]
        check(sb["templateID"] == "base" and sb["envdVersion"] and sb["clientID"], "shape %r" % sb)
    a, b = ids
    for f in ids:
        check(info(s, f)["state"] == "running", "fork %s not running" % f)
        check(ok(s, f, "cat /home/user/state.txt") == "before\n", "fork %s lacks the file" % f)
        check(ok(s, f, "test -e /usr/bin/zcat || echo gone") == "gone\n", "fork %s lost a whiteout" % f)
        check(ok(s, f, "echo $ABX_F") == "from-src\n", "fork %s envVars" % f)
        check(info(s, f)["metadata"] == {"m": "1"}, "fork %s metadata %r" % (f, info(s, f)["metadata"]))
    ok(s, a, "echo in-a > /home/user/state.txt")
    check(ok(s, b, "cat /home/user/state.txt") == "before\n", "fork B saw fork A's change")
    check(ok(s, src, "cat /home/user/state.txt") == "before\n", "the source saw fork A's change")
    ok(s, src, "echo src-later > /home/user/later")
    check(ok(s, a, "test -e /home/user/later || echo no") == "no\n", "fork saw a later source change")
    check(info(s, src)["state"] == "running", "the source does not run after the fork")
    st, _, res = s.json("POST", "/sandboxes/%s/fork" % src)
    check(st == 201 and len(res) == 1 and "sandbox" in res[0], "fork default count %d %r" % (st, res))
    ids.append(res[0]["sandbox"]["sandboxID"])
    end = ts(info(s, ids[-1])["endAt"])
    check(abs(end - (time.time() + 15)) < 5, "fork default timeout: endAt %r" % end)
    for body, what in (({"count": 0}, "at least 1"), ({"count": 101}, "greater than 100"),
                       ({"count": "2"}, "count"), ({"timeout": 0}, "greater than 0"),
                       ({"timeout": 90000}, "24 hours")):
        st, _, j = s.json("POST", "/sandboxes/%s/fork" % src, body)
        check(st == 400 and what in j["message"], "fork %r: %d %r" % (body, st, j))
    pause(s, src)
    st, _, j = s.json("POST", "/sandboxes/%s/fork" % src)
    check(st == 409 and "paused" in j["message"], "fork of a paused sandbox %d %r" % (st, j))
    kill(s, src)
    st, _, j = s.json("POST", "/sandboxes/%s/fork" % src)
    check(st == 404 and j["code"] == 404, "fork of a killed sandbox %d %r" % (st, j))
    st, _, j = s.json("POST", "/sandboxes/inotthere00000000000/fork")
    check(st == 404, "fork of an unknown sandbox %d %r" % (st, j))
    for f in ids:
        kill(s, f)


# ---- maskRequestHost ---------------------------------------------------------------------------

HEADERS_SERVER = r"""
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open('/tmp/headers.txt', 'w') as f:
            for k, v in self.headers.items():
                f.write(k + ': ' + v + chr(10))
        self.send_response(200); self.send_header('Content-Length', '0'); self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(('127.0.0.1', 8080), H).serve_forever()
"""


def t_mask_request_host(s, ctx):
    for bad in ("${PORT}-x.example.com", "a b.example.com", "x:1:2", "h:8a", "h:", "h_x.com",
                "bücher.de", "h:" + "${PORT}" * 40, "-" * 64 + ".com"):
        st, _, j = s.create(network={"maskRequestHost": bad})
        check(st == 400 and "mask request host" in j["message"], "mask %r: %d %r" % (bad, st, j))
    for good in ("localhost:${PORT}", "127.0.0.1:${PORT}", "Example.COM", "a-b.example.com:8080",
                 "x.example.com:${PORT}${PORT}", ""):
        st, _, j = s.create(network={"maskRequestHost": good})
        check(st == 201, "mask %r refused: %d %r" % (good, st, j))
        kill(s, j["sandboxID"])
    st, _, j = s.create(network={"maskRequestHost": 7})
    check(st == 400 and "maskRequestHost" in j["message"], "mask 7: %d %r" % (st, j))
    sid = new(s, network={"maskRequestHost": "custom-host.example.com:${PORT}"})["sandboxID"]
    check(info(s, sid)["network"].get("maskRequestHost") == "custom-host.example.com:${PORT}",
          "get_info network %r" % info(s, sid)["network"])
    open_py = HEADERS_SERVER.replace("'", "'\"'\"'")
    ok(s, sid, "setsid python3 -c '%s' >/dev/null 2>&1 </dev/null &" % open_py)
    deadline = time.time() + 15
    while time.time() < deadline:
        st, _, _ = s.request("GET", "/", key=False, host="8080-%s.localhost:%d" % (sid, s.port))
        if st == 200:
            break
        time.sleep(0.2)
    check(st == 200, "request to the header server %d" % st)
    hd = ok(s, sid, "cat /tmp/headers.txt")
    check("Host: custom-host.example.com:8080\n" in hd, "Host seen in the sandbox: %r" % hd)
    check("X-Forwarded-Host: 8080-%s.localhost:%d\n" % (sid, s.port) in hd, "X-Forwarded-Host %r" % hd)
    st, _, j = s.json("PUT", "/sandboxes/%s/network" % sid, {"maskRequestHost": "x.example.com"})
    check(st == 400 and "maskRequestHost" in j["message"], "PUT maskRequestHost %d %r" % (st, j))
    st, _, _ = s.request("PUT", "/sandboxes/%s/network" % sid, {"denyOut": []})
    check(st == 204 and info(s, sid)["network"].get("maskRequestHost"), "PUT network dropped the mask")
    st, _, res = s.json("POST", "/sandboxes/%s/fork" % sid, {"timeout": 30})
    check(st == 201 and "sandbox" in res[0], "fork %d %r" % (st, res))
    f = res[0]["sandbox"]["sandboxID"]
    check(info(s, f)["network"].get("maskRequestHost") == "custom-host.example.com:${PORT}",
          "fork lost maskRequestHost")
    # envd's port never sees the mask; an unmasked sandbox still gets localhost:<port>
    plain = new(s)["sandboxID"]
    ok(s, plain, "setsid python3 -c '%s' >/dev/null 2>&1 </dev/null &" % open_py)
    deadline = time.time() + 15
    while port_get(s, plain, 8080)[0] != 200 and time.time() < deadline:
        time.sleep(0.2)
    hd = ok(s, plain, "cat /tmp/headers.txt")
    check("Host: localhost:8080\n" in hd and "X-Forwarded-Host" not in hd, "unmasked Host %r" % hd)
    for x in (sid, f, plain):
        kill(s, x)


def t_left_paused(s, ctx):
    """Leave one sandbox paused filesystem only and one with memory: shutdown must clean both."""
    for memory in (False, True):
        sid = new(s)["sandboxID"]
        ok(s, sid, "echo x > /tmp/x")
        pause(s, sid, memory=memory)


CHECKS = [t_get_info_lifecycle, t_paused_502_without_auto_resume, t_auto_resume_port,
          t_auto_resume_envd, t_auto_resume_traffic_token, t_auto_resume_concurrent,
          t_auto_resume_not_fs_paused, t_fs_pause, t_memory_pause_keeps_boot, t_cold_boot_repeated,
          t_fs_auto_pause, t_fork, t_mask_request_host, t_left_paused]


def main():
    s = tp.start_for_checks("freezer")
    if s == 77:
        return 77
    ctx, failed = {}, 0
    try:
        failed = tp.run_checks(s, ctx, CHECKS, os.environ.get("ABX_ONLY"))
    finally:
        pid = s.proc.pid
        rc, _, err = s.stop()
        left = tp.mounts_under(s.state_dir)
        if rc != 0 or left or os.path.exists(s.state_dir) or \
                os.path.exists("/sys/fs/cgroup/freezer/abxlua/serve.%d" % pid):
            failed += 1
            print("FAIL shutdown: exit %r, mounts %r, state dir left %r; %r" %
                  (rc, left, os.path.exists(s.state_dir), err[-400:]))
        else:
            print("PASS shutdown")
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
