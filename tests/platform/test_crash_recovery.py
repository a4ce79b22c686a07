#!/usr/bin/env python3
"""Crash recovery of `abxlua serve` (issue 5, item 1; platform/sandbox/recover.h): after kill -9 of a
serve holding 3 sandboxes (one with a volume, one paused, and a snapshot), its overlay mounts,
cgroups, frozen processes and state dir remain; the next serve removes them all and logs it, while
a second live serve's state stays untouched. Exit 77 = skipped (not root or no bubblewrap).
Usage: test_crash_recovery.py ABXLUA"""
import glob, os, shutil, signal, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import abxtest  # noqa: E402
from abxtest import check, finish  # noqa: E402
from test_platform import mounts_under  # noqa: E402

abx = os.path.abspath(sys.argv[1])
abxtest.needs_platform()

tmp = tempfile.mkdtemp(prefix="abx-crash-")
env = dict(os.environ, TMPDIR=tmp)

def start(name):
    log = os.path.join(tmp, name + ".log")
    p, ready = abxtest.start_serve(abx, env=env, log=log)
    ready["proc"], ready["log"] = p, log
    ready["state"] = os.path.join(tmp, "abxlua-serve.%d" % p.pid)
    return ready

def api(s, method, path, body=None):
    return abxtest.api(s, method, path, body, timeout=60)

def cgroup_dirs(pid):
    return [d for d in glob.glob("/sys/fs/cgroup/*/**/abxlua/serve.%d" % pid, recursive=True)
            if os.path.isdir(d)]

def procs_of(pid, state):
    pids = set()
    for d in cgroup_dirs(pid):
        for root, _, files in os.walk(d):
            if "cgroup.procs" in files:
                try:
                    pids |= {int(x) for x in open(os.path.join(root, "cgroup.procs")).read().split()}
                except OSError:
                    pass
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if os.readlink("/proc/%s/root" % p).startswith(state + "/"):
                    pids.add(int(p))
            except OSError:
                pass
    return pids

a = b = c = None
try:
    a = start("a")
    st, _ = api(a, "POST", "/volumes", {"name": "crashvol"})
    check(st == 201, "volume created (%s)" % st)
    ids = []
    for i, extra in enumerate(({"volumeMounts": [{"name": "crashvol", "path": "/mnt/vol"}]}, {}, {})):
        body = {"templateID": "base", "timeout": 300, "metadata": {"crash": str(i)}}
        body.update(extra)
        st, j = api(a, "POST", "/sandboxes", body)
        check(st == 201, "sandbox %d created (%s)" % (i, st))
        ids.append(j["sandboxID"] if j else None)
    st, j = api(a, "POST", "/sandboxes/%s/snapshots" % ids[1], {"name": "crashsnap"})
    check(st in (200, 201), "snapshot created (%s)" % st)
    st, _ = api(a, "POST", "/sandboxes/%s/pause" % ids[2])
    check(st == 204, "sandbox 2 paused (%s)" % st)

    b = start("b")  # a live serve whose state must survive
    st, j = api(b, "POST", "/sandboxes", {"templateID": "base", "timeout": 300})
    check(st == 201, "live serve B: sandbox created")
    b_id = j["sandboxID"] if j else ""
    b_mounts, b_cg = mounts_under(b["state"]), cgroup_dirs(b["proc"].pid)

    a_pid = a["proc"].pid
    check(len(mounts_under(a["state"])) > 0, "serve A has mounts under its state dir")
    os.kill(a_pid, signal.SIGKILL)
    a["proc"].wait()
    time.sleep(1.0)
    left_mounts, left_cg = mounts_under(a["state"]), cgroup_dirs(a_pid)
    left_procs = procs_of(a_pid, a["state"])
    print("after kill -9: %d mounts, %d cgroup dirs, %d processes, state dir %s"
          % (len(left_mounts), len(left_cg), len(left_procs), os.path.isdir(a["state"])))
    check(os.path.isdir(a["state"]), "the state dir remains after kill -9")
    check(len(left_mounts) > 0, "overlay mounts remain after kill -9")
    check(len(left_cg) > 0, "cgroup dirs remain after kill -9")
    check(len(left_procs) > 0, "the paused sandbox's frozen processes remain after kill -9")

    c = start("c")  # recovers
    log = open(c["log"]).read()
    print(log.strip())
    check("recovered crashed serve %d" % a_pid in log, "serve C logs what it removed")
    time.sleep(0.5)
    check(mounts_under(a["state"]) == [], "no mount from the old state dir in /proc/self/mountinfo")
    check(cgroup_dirs(a_pid) == [], "no cgroup dir of the old serve")
    check(not (left_procs & procs_of(a_pid, a["state"])) and
          all(not os.path.exists("/proc/%d" % p) or open("/proc/%d/stat" % p).read().split(")")[-1].split()[0] in "ZX"
              for p in left_procs), "no process of the old serve")
    check(not os.path.exists(a["state"]), "no state dir of the old serve")

    check("serve %d" % b["proc"].pid not in log, "serve C did not touch live serve B")
    check(os.path.isdir(b["state"]) and os.path.isfile(os.path.join(b["state"], "owner")), "B's state dir is intact")
    check(mounts_under(b["state"]) == b_mounts, "B's mounts are intact")
    check(cgroup_dirs(b["proc"].pid) == b_cg and b_cg, "B's cgroups are intact")
    st, _ = api(b, "GET", "/sandboxes/%s" % b_id)
    check(st == 200, "B's sandbox still answers (%s)" % st)
    st, j = api(c, "POST", "/sandboxes", {"templateID": "base", "timeout": 60})
    check(st == 201, "serve C creates sandboxes")
finally:
    for s in (a, b, c):
        if s and s["proc"].poll() is None:
            s["proc"].terminate()
            try:
                s["proc"].wait(timeout=60)
            except subprocess.TimeoutExpired:
                s["proc"].kill()
                s["proc"].wait()
for s in (b, c):
    if s:
        check(not os.path.exists(s["state"]) and not mounts_under(s["state"]),
              "serve %s cleaned up after itself on SIGTERM" % s["proc"].pid)
shutil.rmtree(tmp, ignore_errors=True)
finish()
