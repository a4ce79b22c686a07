#!/usr/bin/env python3
"""Lifecycle, writable root, snapshots and volumes of `abxlua serve` (the local E2B platform).

Usage: test_lifecycle.py [path/to/abxlua]

Covers docs/protocol/e2b-control-plane.md §3 (pause, connect, resume, refreshes, autoPause, metrics,
snapshots, DELETE /templates) and §5 (volumes), over real HTTP, with the real envd (commands run
through the ingress). Each check prints PASS/FAIL; the exit status is 1 when any failed, 77 when
skipped (not root, or envd not usable).
"""
import base64
import os
import re
import sys
import time
import urllib.parse
from datetime import datetime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_platform as tp  # noqa: E402  (Server, run_in, check, sandbox_pids, alive)

check = tp.check


def run(s, sid, cmd, user="root"):
    return tp.run_in(s, sid, cmd, user=user)


def ok(s, sid, cmd, user="root"):
    code, out, err = run(s, sid, cmd, user)
    check(code == 0, "%r in %s: exit %r, %r %r" % (cmd, sid, code, out, err))
    return out


def ts(v):
    return datetime.strptime(v.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def info(s, sid):
    st, _, j = s.json("GET", "/sandboxes/" + sid)
    check(st == 200, "get %s: %d %r" % (sid, st, j))
    return j


def new(s, ctx, **kw):
    st, _, j = s.create(**kw)
    check(st == 201, "create %r: %d %r" % (kw, st, j))
    return j["sandboxID"]


def kill(s, sid):
    st, _, _ = s.request("DELETE", "/sandboxes/" + sid)
    return st


def host_upper(s, sid, *parts):
    return os.path.join(s.state_dir, sid, "upper", *parts)


def freezer_dirs(pid):
    base = "/sys/fs/cgroup/freezer/abxlua/serve.%d" % pid
    return os.listdir(base) if os.path.isdir(base) else []


def err_shape(j, code):
    return isinstance(j, dict) and j.get("code") == code and isinstance(j.get("message"), str)


# ---- writable root -----------------------------------------------------------------------------

def t_writable_root(s, ctx):
    a, b = new(s, ctx), new(s, ctx)
    ctx["a"], ctx["b"] = a, b
    ok(s, a, "echo abx > /etc/abx-test && touch /usr/local/bin/abx-x && mkdir /abx-newdir && "
       "rm /usr/bin/zcat && echo 'tmpuser:x:1234:1234::/:/bin/sh' >> /etc/passwd")
    check(ok(s, a, "cat /etc/abx-test") == "abx\n", "write under /etc not readable back")
    check(not os.path.exists("/etc/abx-test") and not os.path.exists("/usr/local/bin/abx-x"),
          "a write in the sandbox reached the host")
    check(not os.path.exists("/abx-newdir") and os.path.exists("/usr/bin/zcat"), "host root changed")
    check(open(host_upper(s, a, "etc", "abx-test")).read() == "abx\n", "write not in A's upper layer")
    code, out, _ = run(s, b, "cat /etc/abx-test; ls /usr/local/bin/abx-x /abx-newdir; ls /usr/bin/zcat; "
                       "grep -c tmpuser /etc/passwd")
    check("abx" not in out.split("\n")[0] and "/usr/bin/zcat" in out and out.strip().endswith("0"),
          "B sees A's root changes: %r" % out)
    code, out, _ = run(s, a, "ls /usr/bin/zcat")
    check(code != 0, "deleted file still visible in A")
    code, _, _ = run(s, a, "touch /etc/user-write", user="user")
    check(code != 0, "user may write /etc (permissions not kept)")
    check(ok(s, a, "stat -c '%u %a' /home/user /tmp /root") == "1000 755\n0 1777\n0 700\n", "skeleton modes")
    out = ok(s, a, "ls / ; ls /home; ls /opt")
    for hidden in ("work", "old_root", "farm", "boot"):
        check(hidden not in out.split(), "host /%s visible: %r" % (hidden, out))


# ---- pause / connect / resume ------------------------------------------------------------------

COUNTER = ("setsid sh -c 'i=0; while :; do i=$((i+1)); echo $i > /tmp/c; sleep 0.1; done' "
           ">/dev/null 2>&1 < /dev/null & echo $! > /tmp/c.pid")


def counter(s, sid):
    with open(host_upper(s, sid, "root", "tmp", "c")) as f:
        t = f.read().strip()
    return int(t) if t else -1


def wait_counter(s, sid, above):
    deadline = time.time() + 5
    while time.time() < deadline:
        try:
            if counter(s, sid) > above:
                return counter(s, sid)
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    raise AssertionError("counter in %s did not pass %d" % (sid, above))


def t_pause_keeps_memory(s, ctx):
    a = ctx["a"]
    ok(s, a, COUNTER)
    pid = ok(s, a, "cat /tmp/c.pid").strip()
    v = wait_counter(s, a, 5)
    t0 = time.time()
    st, _, data = s.request("POST", "/sandboxes/%s/pause" % a)
    check(st == 204 and data == b"", "pause %d %r" % (st, data))
    j = info(s, a)
    check(j["state"] == "paused" and j["domain"] is None, "paused detail %r" % j)
    check(abs(ts(j["endAt"]) - t0) < 3, "endAt is not the pause time: %r" % j["endAt"])
    frozen = counter(s, a)
    check(frozen >= v, "counter went back")
    time.sleep(1.0)
    check(counter(s, a) == frozen, "counter advanced while paused: %d → %d" % (frozen, counter(s, a)))
    st, _, j = s.json("GET", "/health", key=False, headers={"E2b-Sandbox-Id": a, "E2b-Sandbox-Port": "49983"})
    # the edge's shape for a paused sandbox (e2b-dev/infra proxy/template/sandbox_paused.go)
    check(st == 502 and j == {"sandboxId": a, "message": "The sandbox is paused", "code": 502,
                              "canAutoResume": False}, "ingress to a paused sandbox %d %r" % (st, j))
    st, _, j = s.json("POST", "/sandboxes/%s/pause" % a)
    check(st == 409 and err_shape(j, 409) and "already paused" in j["message"], "second pause %d %r" % (st, j))
    st, _, j = s.json("POST", "/sandboxes/%s/timeout" % a, {"timeout": 30})
    check(st == 404 and err_shape(j, 404), "timeout on a paused sandbox %d %r" % (st, j))
    st, _, j = s.json("POST", "/sandboxes/%s/connect" % a, {"timeout": 120})
    check(st == 201 and j["sandboxID"] == a and j["domain"] == "localhost", "connect paused %d %r" % (st, j))
    check(abs(ts(info(s, a)["endAt"]) - (time.time() + 120)) < 3, "connect of a paused sandbox: TTL")
    check(info(s, a)["state"] == "running", "state after connect")
    after = wait_counter(s, a, frozen)
    check(frozen < after <= frozen + 15, "counter did not continue from %d: %d" % (frozen, after))
    check(ok(s, a, "cat /tmp/c.pid; kill -0 $(cat /tmp/c.pid) && echo alive").split() == [pid, "alive"],
          "counter process restarted or gone")
    for cycle in range(2):
        st, _, _ = s.request("POST", "/sandboxes/%s/pause" % a)
        check(st == 204, "pause cycle %d: %d" % (cycle, st))
        v = counter(s, a)
        st, _, _ = s.request("POST", "/sandboxes/%s/connect" % a, {"timeout": 120})
        check(st == 201, "connect cycle %d: %d" % (cycle, st))
        check(wait_counter(s, a, v) <= v + 15, "cycle %d counter" % cycle)


def t_list_states(s, ctx):
    a, b = ctx["a"], ctx["b"]
    st, _, _ = s.request("POST", "/sandboxes/%s/pause" % b)
    check(st == 204, "pause b %d" % st)
    st, _, j = s.json("GET", "/v2/sandboxes?state=paused")
    check(st == 200 and [x["sandboxID"] for x in j] == [b] and j[0]["state"] == "paused", "paused %r" % j)
    st, _, j = s.json("GET", "/v2/sandboxes?state=running")
    ids = [x["sandboxID"] for x in j]
    check(a in ids and b not in ids, "running %r" % ids)
    st, _, j = s.json("GET", "/v2/sandboxes")
    check({a, b} <= {x["sandboxID"] for x in j}, "no state filter shows both: %r" % j)
    st, _, j = s.json("GET", "/sandboxes")
    check(b not in [x["sandboxID"] for x in j], "deprecated list shows a paused sandbox")
    st, _, j = s.json("POST", "/sandboxes/%s/resume" % a, {"timeout": 60})
    check(st == 409 and err_shape(j, 409) and j["message"] == "Sandbox %s is already running" % a,
          "resume running %d %r" % (st, j))
    st, _, j = s.json("POST", "/sandboxes/%s/resume" % b, {})
    check(st == 201 and j["sandboxID"] == b, "resume paused %d %r" % (st, j))
    check(abs(ts(info(s, b)["endAt"]) - (time.time() + 15)) < 3, "resume default timeout 15")
    st, _, j = s.json("POST", "/sandboxes/inotthere00000000000/pause")
    check(st == 404 and err_shape(j, 404), "pause unknown %d %r" % (st, j))
    st, _, j = s.json("POST", "/sandboxes/inotthere00000000000/resume", {})
    check(st == 404 and err_shape(j, 404), "resume unknown %d" % st)


def t_connect_ttl(s, ctx):
    a = ctx["a"]
    st, _, _ = s.request("POST", "/sandboxes/%s/timeout" % a, {"timeout": 300})
    check(st == 204, "timeout %d" % st)
    st, _, j = s.json("POST", "/sandboxes/%s/connect" % a, {"timeout": 10})
    check(st == 200 and j["sandboxID"] == a, "connect running %d %r" % (st, j))
    check(abs(ts(info(s, a)["endAt"]) - (time.time() + 300)) < 3, "connect shortened the TTL")
    st, _, _ = s.request("POST", "/sandboxes/%s/connect" % a, {"timeout": 600})
    check(st == 200 and abs(ts(info(s, a)["endAt"]) - (time.time() + 600)) < 3, "connect did not extend")
    st, _, j = s.json("POST", "/sandboxes/%s/connect" % a, {})
    check(st == 400 and err_shape(j, 400), "connect without timeout %d" % st)


def t_refreshes(s, ctx):
    a = ctx["a"]
    s.request("POST", "/sandboxes/%s/timeout" % a, {"timeout": 1})
    st, _, data = s.request("POST", "/sandboxes/%s/refreshes" % a, {"duration": 0})
    check(st == 204 and data == b"", "refresh %d" % st)
    check(abs(ts(info(s, a)["endAt"]) - (time.time() + 15)) < 3, "refresh minimum 15 s")
    st, _, _ = s.request("POST", "/sandboxes/%s/refreshes" % a, {"duration": 100})
    check(abs(ts(info(s, a)["endAt"]) - (time.time() + 100)) < 3, "refresh did not extend")
    st, _, _ = s.request("POST", "/sandboxes/%s/refreshes" % a, {"duration": 20})
    check(st == 204 and abs(ts(info(s, a)["endAt"]) - (time.time() + 100)) < 3, "refresh shortened")
    st, _, _ = s.request("POST", "/sandboxes/%s/refreshes" % a)
    check(st == 204, "refresh without a body %d" % st)
    for bad in ({"duration": 3601}, {"duration": -1}, {"duration": "x"}):
        st, _, j = s.json("POST", "/sandboxes/%s/refreshes" % a, bad)
        check(st == 400 and err_shape(j, 400), "%r → %d" % (bad, st))
    st, _, j = s.json("POST", "/sandboxes/inotthere00000000000/refreshes", {"duration": 30})
    check(st == 404 and err_shape(j, 404), "refresh unknown %d" % st)
    s.request("POST", "/sandboxes/%s/timeout" % a, {"timeout": 600})


def t_kill_paused(s, ctx):
    sid = new(s, ctx)
    ok(s, sid, COUNTER)
    pids = [p for p in tp.sandbox_pids(os.path.join(s.state_dir, sid))]
    st, _, _ = s.request("POST", "/sandboxes/%s/pause" % sid)
    check(st == 204, "pause %d" % st)
    check(sid in freezer_dirs(s.proc.pid), "no freezer cgroup for the sandbox")
    check(kill(s, sid) == 204, "kill paused")
    st, _, j = s.json("GET", "/sandboxes/" + sid)
    check(st == 404, "paused sandbox still listed after kill: %d" % st)
    check(kill(s, sid) == 404, "second kill")
    time.sleep(0.2)
    check(not [p for p in pids if tp.alive(p)], "processes left: %r" % pids)
    check(sid not in freezer_dirs(s.proc.pid), "freezer cgroup left")
    check(not tp.mounts_under(os.path.join(s.state_dir, sid)), "overlay mounts left")
    check(not os.path.exists(os.path.join(s.state_dir, sid)), "state dir left")


def t_auto_pause(s, ctx):
    sid = new(s, ctx, timeout=2, autoPause=True)
    check(info(s, sid)["lifecycle"] == {"autoResume": False, "onTimeout": "pause"}, "lifecycle")
    ok(s, sid, "echo kept > /home/user/k")
    deadline = time.time() + 8
    state = None
    while time.time() < deadline:
        st, _, j = s.json("GET", "/sandboxes/" + sid)
        check(st == 200, "autoPause sandbox was killed (%d)" % st)
        state = j["state"]
        if state == "paused":
            break
        time.sleep(0.2)
    check(state == "paused", "not paused at TTL")
    time.sleep(1)
    check(info(s, sid)["state"] == "paused", "a paused sandbox expired")
    st, _, j = s.json("POST", "/sandboxes/%s/connect" % sid, {"timeout": 60})
    check(st == 201, "connect after autoPause %d" % st)
    check(ok(s, sid, "cat /home/user/k") == "kept\n", "files after autoPause")
    check(kill(s, sid) == 204, "kill")
    sid = new(s, ctx, timeout=30)
    check(info(s, sid)["lifecycle"]["onTimeout"] == "kill", "lifecycle kill")
    check(kill(s, sid) == 204, "kill 2")


def t_metrics(s, ctx):
    a = ctx["a"]
    ok(s, a, "head -c 3000000 /dev/urandom > /home/user/blob")
    written = time.time()
    # samples come every 5 s (metrics.h): wait for one taken after the write
    deadline = written + 12
    while True:
        st, _, j = s.json("GET", "/sandboxes/%s/metrics" % a)
        check(st == 200 and isinstance(j, list) and len(j) >= 1, "metrics %d %r" % (st, j))
        if j[-1]["timestampUnix"] > written or time.time() > deadline:
            break
        time.sleep(0.5)
    m = j[-1]
    ints = ("timestampUnix", "cpuCount", "memUsed", "memTotal", "memCache", "diskUsed", "diskTotal")
    for f in ints:
        check(isinstance(m.get(f), int) and m[f] >= 0, "field %s: %r" % (f, m))
    check(isinstance(m.get("cpuUsedPct"), (int, float)) and 0 <= m["cpuUsedPct"] <= 100, "cpu %r" % m)
    check(tp.RFC3339_RE.match(m.get("timestamp", "")), "timestamp %r" % m)
    check(abs(m["timestampUnix"] - time.time()) < 5, "timestampUnix %r" % m)
    check(m["memUsed"] > 0 and m["memTotal"] >= m["memUsed"], "memory %r" % m)
    check(m["diskUsed"] >= 3000000 and m["diskTotal"] > m["diskUsed"], "disk %r" % m)
    ok(s, a, "rm /home/user/blob")
    removed = time.time()
    time.sleep(1 + 5)
    st, _, j = s.json("GET", "/sandboxes/%s/metrics?start=%d&end=%d" % (a, removed + 1, time.time() + 1))
    check(st == 200 and j and j[-1]["diskUsed"] < 3000000, "metrics after rm %r" % j)
    st, _, j = s.json("GET", "/sandboxes/%s/metrics?start=x" % a)
    check(st == 400 and err_shape(j, 400), "bad start %d" % st)
    st, _, j = s.json("GET", "/sandboxes/inotthere00000000000/metrics")
    check(st == 404 and err_shape(j, 404), "metrics unknown %d" % st)


def t_list_order_template(s, ctx):
    st, _, j = s.json("GET", "/v2/sandboxes?order=sideways")
    check(st == 400 and err_shape(j, 400), "bad order %d %r" % (st, j))
    st, _, desc = s.json("GET", "/v2/sandboxes?order=desc")
    st, _, asc = s.json("GET", "/v2/sandboxes?order=asc")
    check([x["sandboxID"] for x in asc] == [x["sandboxID"] for x in desc][::-1], "asc is not desc reversed")
    seen, token = [], None
    for _ in range(20):
        st, hd, j = s.json("GET", "/v2/sandboxes?order=asc&limit=1" +
                           ("&nextToken=" + urllib.parse.quote(token) if token else ""))
        seen += [x["sandboxID"] for x in j]
        token = hd.get("x-next-token")
        if not token:
            break
    check(seen == [x["sandboxID"] for x in asc], "asc paging %r" % seen)
    st, _, j = s.json("GET", "/v2/sandboxes?template=base")
    check(st == 200 and len(j) == len(desc), "template=base %r" % j)
    st, _, j = s.json("GET", "/v2/sandboxes?template=nosuch")
    check(st == 200 and j == [], "template=nosuch %r" % j)


# ---- snapshots ---------------------------------------------------------------------------------

def t_snapshots(s, ctx):
    a = ctx["a"]
    ok(s, a, "echo v1 > /home/user/snap.txt && echo e1 > /etc/snap-etc && echo g > /home/user/gone.txt && "
       "chown user /home/user/snap.txt")
    st, _, j = s.json("POST", "/sandboxes/%s/snapshots" % a, {"name": "snap-one"})
    check(st == 201 and j == {"snapshotID": "snap-one", "names": ["snap-one:default"]}, "snapshot %d %r" % (st, j))
    check(info(s, a)["state"] == "running", "sandbox not running after the snapshot")
    ok(s, a, "echo v2 > /home/user/snap.txt")
    st, _, j = s.json("POST", "/sandboxes/%s/snapshots" % a, {})
    check(st == 201 and re.match(r"^snap-[a-z0-9]{16}$", j["snapshotID"]) and j["names"] == [j["snapshotID"] + ":default"],
          "unnamed snapshot %r" % j)
    ctx["unnamed"] = j["snapshotID"]
    for bad in ({"name": "Bad Name"}, {"name": "../x"}, {"name": 5}, {"name": "-x"}):
        st, _, j = s.json("POST", "/sandboxes/%s/snapshots" % a, bad)
        check(st == 400 and err_shape(j, 400), "%r → %d" % (bad, st))
    st, _, j = s.json("POST", "/sandboxes/inotthere00000000000/snapshots", {})
    check(st == 404 and err_shape(j, 404), "snapshot unknown %d" % st)
    st, _, j = s.create(templateID="snap-one")
    check(st == 201 and j["templateID"] == "snap-one", "create from snapshot %d %r" % (st, j))
    s1 = j["sandboxID"]
    s2 = new(s, ctx, templateID="snap-one:default")
    for sid in (s1, s2):
        check(ok(s, sid, "cat /home/user/snap.txt /etc/snap-etc; stat -c %U /home/user/snap.txt") ==
              "v1\ne1\nuser\n", "restore in %s" % sid)
    ok(s, s1, "echo mine > /home/user/s1.txt && rm /home/user/gone.txt")
    code, out, _ = run(s, s2, "cat /home/user/s1.txt; cat /home/user/gone.txt")
    check("mine" not in out and "g" in out, "clones share changes: %r" % out)
    st, _, j = s.json("POST", "/sandboxes/%s/snapshots" % s1, {"name": "snap-two"})
    check(st == 201, "stacked snapshot %d" % st)
    s3 = new(s, ctx, templateID="snap-two")
    code, out, _ = run(s, s3, "cat /home/user/snap.txt /home/user/s1.txt; ls /home/user/gone.txt")
    check(code != 0 and out.startswith("v1\nmine\n"), "stacked layers %r" % out)
    check(ok(s, s3, "echo x > /usr/local/abx-s3 && cat /usr/local/abx-s3") == "x\n", "writable on snapshot")
    # list, filters, pagination
    st, hd, j = s.json("GET", "/snapshots")
    names = [x["snapshotID"] for x in j]
    check(st == 200 and {"snap-one", "snap-two", ctx["unnamed"]} <= set(names) and "x-next-token" not in hd,
          "list %r" % j)
    check(all(set(x) == {"snapshotID", "names"} for x in j), "SnapshotInfo shape %r" % j)
    check(names.index("snap-two") < names.index("snap-one"), "not newest first %r" % names)
    st, _, j = s.json("GET", "/snapshots?sandboxID=" + s1)
    check([x["snapshotID"] for x in j] == ["snap-two"], "sandboxID filter %r" % j)
    st, _, j = s.json("GET", "/snapshots?name=snap-one")
    check([x["snapshotID"] for x in j] == ["snap-one"], "name filter %r" % j)
    seen, token, pages = [], None, 0
    while pages < 10:
        st, hd, j = s.json("GET", "/snapshots?limit=1" + ("&nextToken=" + urllib.parse.quote(token) if token else ""))
        check(st == 200 and len(j) <= 1, "page %r" % j)
        seen += [x["snapshotID"] for x in j]
        pages += 1
        token = hd.get("x-next-token")
        if not token:
            break
    check(seen == names and pages == len(names), "paging %r vs %r" % (seen, names))
    for q in ("limit=0", "nextToken=%21", "nextToken=" + base64.urlsafe_b64encode(b"zz").decode()):
        st, _, j = s.json("GET", "/snapshots?" + q)
        check(st == 400 and err_shape(j, 400), "%s → %d" % (q, st))
    # delete
    st, _, j = s.json("DELETE", "/templates/snap-one")
    check(st == 400 and err_shape(j, 400), "delete in use %d %r" % (st, j))
    for sid in (s1, s2):
        check(kill(s, sid) == 204, "kill clone")
    st, _, data = s.request("DELETE", "/templates/snap-one")
    check(st == 204 and data == b"", "delete %d %r" % (st, data))
    st, _, j = s.json("DELETE", "/templates/snap-one")
    check(st == 404 and err_shape(j, 404), "delete twice %d %r" % (st, j))
    st, _, j = s.create(templateID="snap-one")
    check(st == 404, "create from a deleted snapshot %d" % st)
    check(ok(s, s3, "cat /home/user/snap.txt") == "v1\n", "child snapshot lost its parent layer")
    st, _, j = s.json("DELETE", "/templates/base")
    check(st == 400, "delete base %d" % st)
    st, _, j = s.json("DELETE", "/templates/%2e%2e")
    check(st == 404, "delete '..' %d" % st)
    check(kill(s, s3) == 204, "kill s3")
    for t in ("snap-two", ctx["unnamed"]):
        st, _, _ = s.request("DELETE", "/templates/" + urllib.parse.quote(t + ":default", safe=""))
        check(st == 204, "delete %s %d" % (t, st))
    check(os.listdir(os.path.join(s.state_dir, "templates")) == ["base"], "snapshot layers left: %r" %
          os.listdir(os.path.join(s.state_dir, "templates")))


# ---- volumes -----------------------------------------------------------------------------------

def t_volumes(s, ctx):
    st, _, v = s.json("POST", "/volumes", {"name": "vol-A_1"})
    check(st == 201 and set(v) == {"volumeID", "name", "token"} and v["name"] == "vol-A_1", "create %d %r" % (st, v))
    vid = v["volumeID"]
    st, _, j = s.json("POST", "/volumes", {"name": "vol-A_1"})
    check(st == 409 and err_shape(j, 409), "duplicate %d %r" % (st, j))
    for bad in ({"name": "a/b"}, {"name": ""}, {"name": "../x"}, {}, {"name": 3}):
        st, _, j = s.json("POST", "/volumes", bad)
        check(st == 400 and err_shape(j, 400), "%r → %d" % (bad, st))
    st, _, j = s.json("GET", "/volumes")
    check(st == 200 and {"volumeID": vid, "name": "vol-A_1"} in j, "list %r" % j)
    st, _, j = s.json("GET", "/volumes/" + vid)
    check(st == 200 and j == v, "get %r" % j)
    st, _, j = s.json("GET", "/volumes/volnothere")
    check(st == 404 and err_shape(j, 404), "get unknown %d" % st)
    hostdir = os.path.join(s.state_dir, "volumes", vid)
    stt = os.stat(hostdir)
    check(stt.st_uid == 1000 and stt.st_gid == 1000 and stt.st_mode & 0o777 == 0o755, "volume dir owner/mode")
    mounts = [{"name": "vol-A_1", "path": "/mnt/data"}, {"name": "vol-A_1", "path": "/mnt/ro", "readOnly": True}]
    sid = new(s, ctx, volumeMounts=mounts)
    check(info(s, sid)["volumeMounts"] == [dict(m, readOnly=m.get("readOnly", False)) for m in mounts],
          "volumeMounts in detail %r" % info(s, sid).get("volumeMounts"))
    ok(s, sid, "set -C; echo here > /mnt/data/sentinel", user="user")
    check(open(os.path.join(hostdir, "sentinel")).read() == "here\n", "sentinel not on the host dir")
    code, out, err = run(s, sid, "echo x > /mnt/ro/x", user="root")
    check(code != 0 and "Read-only file system" in err, "read-only mount accepted a write: %r" % err)
    check(ok(s, sid, "cat /mnt/ro/sentinel") == "here\n", "read-only mount content")
    check("/mnt/data" in ok(s, sid, "cat /proc/mounts"), "mount not present")
    st, _, j = s.json("DELETE", "/volumes/" + vid)
    check(st == 400 and err_shape(j, 400), "delete mounted %d %r" % (st, j))
    check(kill(s, sid) == 204, "kill")
    check(os.path.exists(os.path.join(hostdir, "sentinel")), "data lost with the sandbox")
    sid = new(s, ctx, volumeMounts=[{"name": "vol-A_1", "path": "/home/user/v"}])
    check(ok(s, sid, "cat /home/user/v/sentinel") == "here\n", "data not visible to a new sandbox")
    code, _, _ = run(s, sid, "set -C; echo again > /home/user/v/sentinel", user="user")
    check(code != 0, "exclusive create of an existing sentinel succeeded")
    check(kill(s, sid) == 204, "kill 2")
    for bad in ([{"name": "vol-A_1", "path": "rel"}], [{"name": "vol-A_1", "path": "/"}],
                [{"name": "vol-A_1", "path": "/a/../b"}], [{"name": "vol-A_1", "path": "/proc/x"}],
                [{"name": "vol-A_1"}], {"name": "x"},
                [{"name": "vol-A_1", "path": "/m"}, {"name": "vol-A_1", "path": "/m"}]):
        st, _, j = s.create(volumeMounts=bad)
        check(st == 400 and err_shape(j, 400), "%r → %d %r" % (bad, st, j))
    st, _, j = s.create(volumeMounts=[{"name": "nosuch", "path": "/m"}])
    check(st == 400 and "nosuch" in j["message"], "unknown volume %d %r" % (st, j))
    st, _, data = s.request("DELETE", "/volumes/" + vid)
    check(st == 204 and data == b"", "delete %d" % st)
    check(not os.path.exists(hostdir), "volume dir left")
    st, _, j = s.json("GET", "/volumes/" + vid)
    check(st == 404, "get deleted %d" % st)
    st, _, j = s.json("DELETE", "/volumes/" + vid)
    check(st == 404 and err_shape(j, 404), "delete twice %d" % st)


def t_shutdown_cleanup(s, ctx):
    sid = new(s, ctx)
    st, _, _ = s.request("POST", "/sandboxes/%s/pause" % sid)
    check(st == 204, "pause %d" % st)
    pids = tp.sandbox_pids(s.state_dir)
    pid = s.proc.pid
    rc, _, err = s.stop()
    ctx["stopped"] = True
    check(rc == 0, "serve exit %r %r" % (rc, err[-300:]))
    check(not [p for p in pids if tp.alive(p)], "processes left")
    check(not tp.mounts_under(s.state_dir), "mounts left: %r" % tp.mounts_under(s.state_dir))
    check(not os.path.exists("/sys/fs/cgroup/freezer/abxlua/serve.%d" % pid), "freezer cgroup left")
    check(not os.path.exists("/sys/fs/cgroup/memory/abxlua/serve.%d" % pid) and
          not any(os.path.exists(d) for d in _memory_dirs(pid)), "memory cgroup left")
    check(not os.path.exists(s.state_dir), "state dir left")


def _memory_dirs(pid):
    out = []
    for root, dirs, _ in os.walk("/sys/fs/cgroup/memory"):
        if "serve.%d" % pid in dirs:
            out.append(os.path.join(root, "serve.%d" % pid))
        if root.count("/") > 8:
            dirs[:] = []
    return out


CHECKS = [t_writable_root, t_pause_keeps_memory, t_list_states, t_connect_ttl, t_refreshes,
          t_kill_paused, t_auto_pause, t_metrics, t_list_order_template, t_snapshots, t_volumes,
          t_shutdown_cleanup]


def main():
    s = tp.start_for_checks("freezer")
    if s == 77:
        return 77
    ctx, failed = {}, 0
    try:
        failed = tp.run_checks(s, ctx, CHECKS, width=22)
    finally:
        if not ctx.get("stopped"):
            s.stop()
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
