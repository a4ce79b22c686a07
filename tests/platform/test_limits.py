#!/usr/bin/env python3
"""Per-sandbox limits, the metrics time series, upload parents and the base template's tools of
`abxlua serve` (issue 10 parts 4 and 5).

Usage: test_limits.py [path/to/abxlua]

- limits: every sandbox gets its template's CPU count and memory as cgroup v1 limits
  (platform/sandbox/cgroup.h "Limits"); get_info (cpuCount, memoryMB), metrics (cpuCount, memTotal), the
  sandbox's own read-only view of its groups (/sys/fs/cgroup/<h>) and the host's view of the groups
  its processes are in all agree; a process allocating past the limit is OOM-killed inside the
  sandbox while envd, serve and the host live on. The allocation is a little over the limit (which
  is 1024 MiB for `base`), and is only made once the limit is seen in place, so a missing limit
  never costs the shared host more than that.
- metrics: docs/protocol/e2b-control-plane.md §3.4; samples every 5 s, start/end select
  (platform/sandbox/metrics.h, platform/api/api_metrics.c).
- uploads: envd creates an upload's missing parents as root and hands only those to the user
  (E2B envd's EnsureDirs; E2B's own write.test.ts writes /0/...).
- base tools: python, git, curl, and sudo for `user` (envd's broker: tests/platform/test_sudo.py).

Each check prints PASS/FAIL; exit 1 when any failed, 77 when
skipped (not root, no cgroup v1 memory hierarchy, or envd not usable).
"""
import fcntl
import glob
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_platform as tp  # noqa: E402

check = tp.check
MIB = 1 << 20


def run(s, sid, cmd, user="user", timeout=60):
    return tp.run_in(s, sid, cmd, user=user, timeout=timeout)


def ok(s, sid, cmd, user="user"):
    code, out, err = run(s, sid, cmd, user)
    check(code == 0, "%r as %s in %s: exit %r, %r %r" % (cmd, user, sid, code, out, err))
    return out


def info(s, sid):
    st, _, j = s.json("GET", "/sandboxes/" + sid)
    check(st == 200, "get %s: %d %r" % (sid, st, j))
    return j


def new(s, **kw):
    st, _, j = s.create(**kw)
    check(st == 201, "create %r: %d %r" % (kw, st, j))
    return j["sandboxID"]


def host_group(s, sid, hierarchy):
    """The host directory of the `hierarchy` cgroup a process started in the sandbox is in."""
    for line in ok(s, sid, "cat /proc/self/cgroup").splitlines():
        _, ctl, path = line.split(":", 2)
        if hierarchy in ctl.split(","):
            return "/sys/fs/cgroup/%s%s" % (hierarchy, path)
    raise AssertionError("no %s line in the sandbox's /proc/self/cgroup" % hierarchy)


def read(path):
    with open(path) as f:
        return f.read().strip()


# ---- limits ------------------------------------------------------------------------------------

def t_limits_reported(s, ctx):
    a = ctx["a"] = new(s, timeout=300)
    j = info(s, a)
    check(j["cpuCount"] == 2 and j["memoryMB"] == 1024,
          "base template limits are 2 CPUs / 1024 MiB, get_info says %r / %r" % (j["cpuCount"], j["memoryMB"]))
    limit = j["memoryMB"] * MIB
    inside = ok(s, a, "cd /sys/fs/cgroup && cat memory/memory.limit_in_bytes memory/memory.memsw.limit_in_bytes "
                "cpu/cpu.cfs_quota_us cpu/cpu.cfs_period_us").split()
    check(inside[:2] == [str(limit)] * 2, "memory limit seen inside %r, get_info %d" % (inside, limit))
    check(int(inside[2]) == j["cpuCount"] * int(inside[3]), "CPU quota inside %r for %d CPUs" % (inside, j["cpuCount"]))
    mem = host_group(s, a, "memory")
    check(read(mem + "/memory.limit_in_bytes") == str(limit), "host view of %s" % mem)
    if os.path.exists(mem + "/memory.memsw.limit_in_bytes"):
        check(read(mem + "/memory.memsw.limit_in_bytes") == str(limit), "memsw limit on the host (swap would hide it)")
    cpu = host_group(s, a, "cpu")
    check(int(read(cpu + "/cpu.cfs_quota_us")) == 2 * int(read(cpu + "/cpu.cfs_period_us")), "host view of %s" % cpu)
    st, _, m = s.json("GET", "/sandboxes/%s/metrics" % a)
    check(st == 200 and m and all(x["cpuCount"] == 2 and x["memTotal"] == limit for x in m),
          "metrics report the limits: %r" % m)
    st, _, e = s.json("GET", "/metrics", key=False, headers={"E2b-Sandbox-Id": a, "E2b-Sandbox-Port": str(tp.ENVD_PORT)})
    check(st == 200 and e["cpu_count"] == 2 and e["mem_total"] == limit and 0 < e["mem_used"] < limit,
          "envd's /metrics in the sandbox reports its limits, not the host's: %d %r" % (st, e))


def weights_locked(abxlua_dir):
    """cpu.shares of the abxlua group and of each serve.* group under it, read under the flock
    that serve's rebalancing takes (platform/sandbox/cgroup.c), so no other serve changes them meanwhile."""
    fd = os.open(abxlua_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        serves = {d: int(read(d + "/cpu.shares")) for d in glob.glob(abxlua_dir + "/serve.*")}
        return int(read(abxlua_dir + "/cpu.shares")), serves
    finally:
        os.close(fd)


def sandbox_weights(serve_dir):
    return {d: int(read(d + "/cpu.shares")) for d in glob.glob(serve_dir + "/*") if os.path.isdir(d)}


def t_cpu_weights(s, ctx):
    """A sandbox weighs 1024 cpu.shares per CPU, its serve's group the sum of its sandboxes', the
    abxlua group the sum of the serves' (cgroup.h Weights): with the kernel's default 1024 at each
    level, every sandbox together weighed one host process and starved beside a busy suite."""
    a = ctx["a"]
    cpu = host_group(s, a, "cpu")
    serve_dir, abxlua_dir = os.path.dirname(cpu), os.path.dirname(os.path.dirname(cpu))
    check(int(read(cpu + "/cpu.shares")) == 2048, "a 2-CPU sandbox weighs 2048: %s" % read(cpu + "/cpu.shares"))
    cap = 1024 * os.cpu_count()  # at most the machine's CPUs' worth (cgroup.h Weights)
    before = sandbox_weights(serve_dir)
    want = min(cap, sum(before.values()))
    check(int(read(serve_dir + "/cpu.shares")) == want,
          "serve's group weighs its sandboxes' sum %d, at most %d: %s" % (sum(before.values()), cap,
                                                                          read(serve_dir + "/cpu.shares")))
    b = new(s)
    grown = int(read(serve_dir + "/cpu.shares"))
    check(grown == min(cap, sum(sandbox_weights(serve_dir).values())) and grown >= want,
          "one more sandbox counts: %d after %r" % (grown, before))
    total, serves = weights_locked(abxlua_dir)
    check(serves.get(serve_dir) == grown and total == min(cap, max(2, sum(serves.values()))),
          "abxlua weighs the serves' sum, at most %d: %d for %r" % (cap, total, serves))
    st, _, _ = s.request("DELETE", "/sandboxes/" + b)
    check(st == 204, "kill %s: %d" % (b, st))
    deadline = time.time() + 60
    while int(read(serve_dir + "/cpu.shares")) != want and time.time() < deadline:
        time.sleep(0.1)
    check(int(read(serve_dir + "/cpu.shares")) == want,
          "a killed sandbox's weight goes: %s, want %d" % (read(serve_dir + "/cpu.shares"), want))
    check(min(cap, 2048 * 3) == int(read(serve_dir + "/cpu.shares")) or sum(before.values()) != 2048 * 3,
          "three 2-CPU sandboxes on this machine weigh min(cap, 6144)")


def t_limits_read_only(s, ctx):
    a = ctx["a"]
    code, _, err = run(s, a, "echo 9223372036854771712 > /sys/fs/cgroup/memory/memory.limit_in_bytes", user="root")
    check(code != 0 and "Read-only" in err, "root in the sandbox raised its memory limit: %r %r" % (code, err))
    code, _, err = run(s, a, "echo -1 > /sys/fs/cgroup/cpu/cpu.cfs_quota_us || mkdir /sys/fs/cgroup/memory/x "
                       "|| touch /sys/x", user="root")
    check(code != 0, "the sandbox could write its cgroups or /sys: %r" % err)
    check(info(s, a)["memoryMB"] * MIB == int(read(host_group(s, a, "memory") + "/memory.limit_in_bytes")),
          "limit changed")
    out = ok(s, a, "ls /sys; ls /sys/fs/cgroup")
    check(out.split() == ["fs", "cpu", "cpuacct", "memory"], "host /sys visible in the sandbox: %r" % out)


def t_oom_inside(s, ctx):
    a, b = ctx["a"], new(s)
    mb = info(s, a)["memoryMB"]
    limit = int(read(host_group(s, a, "memory") + "/memory.limit_in_bytes"))
    # never allocate on the shared host unless the limit is really there
    check(limit == mb * MIB and mb <= 2048, "limit %d not in place (get_info %d MiB): not allocating" % (limit, mb))
    code, out, err = run(s, a, "python3 -c 'x = bytearray(b\"x\") * (%d << 20); print(len(x))'; echo rc=$?" % (mb + 256))
    check(out.splitlines()[-1:] == ["rc=137"], "allocating %d MiB past a %d MiB limit was not SIGKILLed: %r %r %r"
          % (mb + 256, mb, code, out, err))
    oom = ok(s, a, "grep -E '^oom_kill ' /sys/fs/cgroup/memory/memory.oom_control || "
             "cat /sys/fs/cgroup/memory/memory.failcnt")
    check(int(oom.split()[-1]) >= 1, "the kernel did not act in the sandbox's memory group: %r" % oom)
    check(ok(s, a, "echo alive") == "alive\n", "envd of the sandbox died with the allocation")
    check(ok(s, b, "echo other") == "other\n", "another sandbox was hit")
    st, _, _ = s.json("GET", "/health", key=False)
    check(st == 200 and s.proc.poll() is None, "serve did not survive: %r" % st)
    st, _, j = s.json("GET", "/sandboxes/" + a)
    check(st == 200 and j["state"] == "running", "sandbox gone after its OOM: %d %r" % (st, j))
    s.request("DELETE", "/sandboxes/" + b)


def t_snapshot_inherits(s, ctx):
    a = ctx["a"]
    st, _, j = s.json("POST", "/sandboxes/%s/snapshots" % a, {"name": "limits-snap"})
    check(st == 201, "snapshot %d %r" % (st, j))
    c = new(s, templateID="limits-snap")
    ja, jc = info(s, a), info(s, c)
    check((jc["cpuCount"], jc["memoryMB"]) == (ja["cpuCount"], ja["memoryMB"]),
          "a snapshot's sandbox has %r/%r, its source %r/%r" % (jc["cpuCount"], jc["memoryMB"], ja["cpuCount"], ja["memoryMB"]))
    check(read(host_group(s, c, "memory") + "/memory.limit_in_bytes") == str(jc["memoryMB"] * MIB),
          "the snapshot's sandbox limit is not applied")
    s.request("DELETE", "/sandboxes/" + c)
    s.request("DELETE", "/templates/limits-snap")


# ---- metrics time series -------------------------------------------------------------------------

def t_metrics_series(s, ctx):
    t0 = time.time()
    m = new(s, timeout=120)
    st, _, j = s.json("GET", "/sandboxes/%s/metrics" % m)
    check(st == 200 and len(j) >= 1, "no sample right after create (E2B takes one at start): %r" % j)
    check(int(t0) <= j[0]["timestampUnix"] <= time.time() + 1, "first sample time %r (created %d)" % (j[0], t0))
    time.sleep(11)
    st, _, j = s.json("GET", "/sandboxes/%s/metrics" % m)
    ts = [x["timestampUnix"] for x in j]
    check(st == 200 and len(j) >= 3 and ts == sorted(ts), "no series after 11 s: %r" % ts)
    gaps = [b - a for a, b in zip(ts, ts[1:])]
    check(all(4 <= g <= 7 for g in gaps), "samples not ~5 s apart: %r" % gaps)
    for x in j:
        check(tp.RFC3339_RE.match(x["timestamp"]) and 0 <= x["cpuUsedPct"] <= 100 and x["memUsed"] > 0,
              "sample %r" % x)
    mid = ts[1]
    st, _, k = s.json("GET", "/sandboxes/%s/metrics?start=%d&end=%d" % (m, mid, mid))
    check(st == 200 and [x["timestampUnix"] for x in k] == [mid], "start=end=%d gave %r" % (mid, k))
    st, _, k = s.json("GET", "/sandboxes/%s/metrics?start=%d" % (m, mid))
    check([x["timestampUnix"] for x in k] == ts[1:], "start only %r vs %r" % (k, ts))
    st, _, k = s.json("GET", "/sandboxes/%s/metrics?end=%d" % (m, ts[0]))
    check([x["timestampUnix"] for x in k] == ts[:1], "end only %r vs %r" % (k, ts))
    # E2B's own test: a range from before the sandbox existed returns none
    st, _, k = s.json("GET", "/sandboxes/%s/metrics?start=%d&end=%d" % (m, t0 - 3600, t0 - 1800))
    check(st == 200 and k == [], "range before the sandbox %d %r" % (st, k))
    for q, name in (("start=abc", "start"), ("end=1.5", "end"), ("start=", "start"),
                    ("end=99999999999999999999", "end")):
        st, _, e = s.json("GET", "/sandboxes/%s/metrics?%s" % (m, q))
        check(st == 400 and e.get("code") == 400 and "'%s'" % name in e.get("message", ""),
              "%s → %d %r (must be 400 naming %s)" % (q, st, e, name))
    st, _, e = s.json("GET", "/sandboxes/%s/metrics?start=%d&end=%d" % (m, mid + 10, mid))
    check(st == 400 and "'start'" in e.get("message", "") and "'end'" in e.get("message", ""),
          "start after end %d %r" % (st, e))
    st, _, e = s.json("GET", "/sandboxes/inotthere00000000000/metrics?start=1&end=2")
    check(st == 404 and e.get("code") == 404, "unknown sandbox %d %r" % (st, e))
    st, _, _ = s.request("POST", "/sandboxes/%s/pause" % m)
    check(st == 204, "pause %d" % st)
    time.sleep(6)
    st, _, k = s.json("GET", "/sandboxes/%s/metrics" % m)
    check(st == 200 and [x["timestampUnix"] for x in k][:len(ts)] == ts and len(k) <= len(ts) + 1,
          "a paused sandbox keeps its samples and gets no new ones: %r then %r" % (ts, k))
    s.request("DELETE", "/sandboxes/" + m)


# ---- envd uploads ---------------------------------------------------------------------------------

def upload(s, sid, path, data, user="user"):
    return s.json("POST", "/files?path=%s&username=%s" % (path, user), data, key=False,
                  headers={"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": str(tp.ENVD_PORT),
                           "Content-Type": "application/octet-stream"})


def t_upload_parents(s, ctx):
    a = ctx["a"]
    st, _, j = upload(s, a, "/0/multi_test_file0.txt", b"zero")
    check(st == 200 and j == [{"path": "/0/multi_test_file0.txt", "name": "multi_test_file0.txt", "type": "file"}],
          "upload of /0/file as user (E2B write.test.ts): %d %r" % (st, j))
    st, _, j = upload(s, a, "/opt/new/deep/f.txt", b"deep")
    check(st == 200, "upload into new dirs under /opt as user: %d %r" % (st, j))
    out = ok(s, a, "stat -c '%n %U %a' / /0 /0/multi_test_file0.txt /opt /opt/new /opt/new/deep "
             "/opt/new/deep/f.txt; cat /0/multi_test_file0.txt")
    check(out.splitlines() == ["/ root 755", "/0 user 755", "/0/multi_test_file0.txt user 644", "/opt root 755",
                               "/opt/new user 755", "/opt/new/deep user 755", "/opt/new/deep/f.txt user 644", "zero"],
          "owners: only the new directories are the user's: %r" % out)
    st, _, j = upload(s, a, "/etc/abx-nope", b"x")
    check(st == 403, "the file itself is still written as the user: /etc as user %d %r" % (st, j))


# ---- the base template's tools --------------------------------------------------------------------

def t_base_tools(s, ctx):
    a = ctx["a"]
    out = ok(s, a, "python --version; git --version; curl --version | head -1")
    lines = out.splitlines()
    check(len(lines) == 3 and lines[0].startswith("Python 3.") and lines[1].startswith("git version ") and
          lines[2].startswith("curl "), "python/git/curl as user: %r" % out)
    out = ok(s, a, "stat -c '%U %a' /etc/sudoers.d/user && cat /etc/sudoers.d/user", user="root")
    check(out == "root 440\nuser ALL=(ALL:ALL) NOPASSWD: ALL\n", "sudoers entry for user: %r" % out)
    code, out, err = run(s, a, "sudo -n true && sudo -n id -u")
    check(code == 0 and out == "0\n", "sudo -n id -u as user: %r %r %r" % (code, out, err))


CHECKS = [t_limits_reported, t_cpu_weights, t_limits_read_only, t_oom_inside, t_snapshot_inherits, t_metrics_series,
          t_upload_parents, t_base_tools]


def main():
    s = tp.start_for_checks("memory")
    if s == 77:
        return 77
    only = os.environ.get("ABX_ONLY")  # e.g. ABX_ONLY=metrics_series (limits_reported always runs)
    try:
        failed = tp.run_checks(s, {}, CHECKS, only and only + ",limits_reported", width=22)
    finally:
        code, _, err = s.stop()
    left = [d for h in ("cpu", "memory", "cpuacct") for d in
            glob.glob("/sys/fs/cgroup/%s/**/abxlua/serve.%d" % (h, s.proc.pid), recursive=True)]
    if left:
        print("FAIL cgroups left after serve stopped: %r" % left)
        failed += 1
    if code != 0:
        print("FAIL serve exit %r: %s" % (code, err.decode(errors="replace")[-500:]))
        failed += 1
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
