#!/usr/bin/env python3
"""The warm pool of `abxlua serve` (platform/sandbox/warm_pool.h, issue 26 part 3).

Usage: test_warm_pool.py [path/to/abxlua]

With `--pool base=1`: the pooled sandbox is booted and never listed; a create claims it and gets
exactly what it asked for (metadata, envVars in later commands, secure with a new access token
that envd then requires, outbound rules and internet access), its logs say it was claimed, the
pool refills, and a create the pool cannot serve (public traffic off) boots a sandbox of its own.
serve stops every pooled sandbox, also one still booting; a bad --pool is a usage error (exit 4);
without --pool the default pool (code-interpreter-v1) waits for its template's first create. Each check prints
PASS/FAIL; exit 1 when any failed, 77 when skipped (not root, or envd not usable).
"""
import os
import re
import select
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_platform as tp  # noqa: E402  (Server, run_in, check, alive)
import test_template_build as tb  # noqa: E402  (build: a template through the build API)

check = tp.check
STARTED = re.compile(rb"sandbox (i[a-z0-9]{20}) started: warm pool from template base")
READY = re.compile(rb"warm pool: a sandbox of base is ready")


class Log:
    """serve's stderr, read as it comes (the pool's lines are how a test sees it fill)."""

    def __init__(self, s):
        self.s, self.buf = s, b""

    def wait(self, pattern, count=1, timeout=90):
        """Waits until `pattern` (regex bytes) matched `count` times; returns the matches."""
        end = time.time() + timeout
        while True:
            found = re.findall(pattern, self.buf)
            if len(found) >= count or time.time() > end:
                return found
            r, _, _ = select.select([self.s.proc.stderr], [], [], 0.5)
            if r:
                self.buf += os.read(self.s.proc.stderr.fileno(), 65536) or b""


def logs_of(s, sid):
    st, _, j = s.json("GET", "/v2/sandboxes/%s/logs" % sid)
    check(st == 200, "logs of %s: %d %r" % (sid, st, j))
    return " | ".join(x.get("message", "") if isinstance(x, dict) else str(x) for x in j.get("logs", []))


def t_pooled_not_listed(s, ctx):
    ctx["log"].wait(READY)
    ids = re.findall(STARTED, ctx["log"].buf)
    check(len(ids) == 1, "no 'started: warm pool' line in serve's log: %r" % ctx["log"].buf[-800:])
    ctx["pooled"] = ids[0].decode()
    st, _, j = s.json("GET", "/sandboxes")
    check(st == 200 and j == [], "a pooled sandbox is listed: %r" % (j,))
    st, _, _ = s.request("GET", "/sandboxes/" + ctx["pooled"])
    check(st == 404, "a pooled sandbox answers GET /sandboxes/{id}: %d" % st)


def t_claim_applies_the_create(s, ctx):
    st, _, j = s.create(metadata={"who": "pool-test"}, envVars={"POOL_VAR": "from-create"},
                        secure=True, allow_internet_access=False,
                        network={"denyOut": ["10.1.2.0/24"]})
    check(st == 201, "create: %d %r" % (st, j))
    sid, token = j["sandboxID"], j.get("envdAccessToken")
    check(sid == ctx["pooled"], "the create did not claim the pooled sandbox %s: got %s"
          % (ctx["pooled"], sid))
    check(isinstance(token, str) and len(token) == 32, "no new access token: %r" % (j,))
    ctx["claimed"] = sid
    code, out, err = tp.run_in(s, sid, "echo $POOL_VAR", token=token)
    check(code == 0 and out == "from-create\n", "envVars in a later command: %r %r %r" % (code, out, err))
    try:
        tp.run_in(s, sid, "true")
        check(False, "envd answered without the access token")
    except AssertionError as e:
        check("401" in str(e), "without the token: %s" % e)
    st, _, d = s.json("GET", "/sandboxes/" + sid)
    check(st == 200 and d["metadata"] == {"who": "pool-test"}, "metadata: %r" % (d,))
    check(d.get("allowInternetAccess") is False, "internet access not applied: %r" % (d,))
    check("10.1.2.0/24" in (d.get("network") or {}).get("denyOut", []), "denyOut not applied: %r" % (d,))
    st, _, lst = s.json("GET", "/sandboxes")
    check([x["sandboxID"] for x in lst] == [sid], "listed after the claim: %r" % (lst,))
    check("claimed from the warm pool" in logs_of(s, sid), "the logs do not say it was claimed")


def t_refills(s, ctx):
    ctx["log"].wait(READY, count=2)
    ids = re.findall(STARTED, ctx["log"].buf)
    check(len(ids) >= 2, "the pool did not refill after the claim: %r" % ctx["log"].buf[-800:])
    ctx["pooled"] = ids[1].decode()
    check(ctx["pooled"] != ctx["claimed"], "the refill reused the claimed id")


def t_miss_boots_its_own(s, ctx):
    st, _, j = s.create(secure=True, network={"allowPublicTraffic": False})
    check(st == 201, "create: %d %r" % (st, j))
    check(j["sandboxID"] != ctx["pooled"], "a create with public traffic off claimed the pool")
    check(isinstance(j.get("trafficAccessToken"), str), "no traffic token: %r" % (j,))
    check("claimed from the warm pool" not in logs_of(s, j["sandboxID"]), "its logs say claimed")


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def t_stop_kills_the_pool(s, ctx):
    pids = tp.sandbox_pids(s.state_dir)
    pooled = [p for p in pids if "--hostname %s " % ctx["pooled"] in cmdline(p)]
    check(pooled, "no process of the pooled sandbox %s before the stop" % ctx["pooled"])
    rc, _, err = s.stop()
    ctx["stopped"] = True
    check(rc == 0, "serve exit %r: %r" % (rc, err[-300:]))
    left = [p for p in pids if tp.alive(p)]
    check(not left, "processes left after SIGTERM (pooled: %r): %r" % (pooled, left))
    check(not os.path.exists(s.state_dir), "state dir left: %s" % s.state_dir)


def t_bad_pool_option(_s, _ctx):
    for bad, want in [("base", b"is not TEMPLATE=N"), ("base=9", b"N 0..8"), ("base=1,base=2", b"named twice")]:
        p = subprocess.run([tp.BIN, "serve", "--port", "0", "--pool", bad], capture_output=True, timeout=20)
        check(p.returncode == 4 and want in p.stderr, "--pool %s: exit %d %r" % (bad, p.returncode, p.stderr[-300:]))


def t_default_waits_for_first_use(_s, _ctx):
    s = tp.Server()
    try:
        log = Log(s)
        log.wait(rb"filled after its first create", timeout=10)
        check(b"warm pool: 1 sandbox(es) of code-interpreter-v1, filled after its first create" in log.buf,
              "the default pool is not announced: %r" % log.buf[-500:])
        st, _, j = s.create()
        check(st == 201, "create base: %d %r" % (st, j))
        time.sleep(1)
        log.wait(rb"started: warm pool", timeout=2)
        check(b"started: warm pool" not in log.buf, "the default pool booted before its template's first create")
    finally:
        s.stop()


def t_stop_during_a_boot(_s, _ctx):
    """serve stops at once while the pool boots code-interpreter-v1 (Jupyter: seconds): the boot
    is cancelled and its processes killed, serve exits 0 and leaves nothing."""
    s = tp.Server(args=("--pool", "code-interpreter-v1=1"))
    log = Log(s)
    log.wait(rb"started: warm pool|warm pool: 1 sandbox", timeout=10)
    time.sleep(0.5)  # inside the boot: its root, envd, or the start command
    pids = tp.sandbox_pids(s.state_dir)
    rc, _, err = s.stop()
    check(rc == 0, "serve exit %r during a pool boot: %r" % (rc, err[-400:]))
    left = [p for p in pids if tp.alive(p)]
    check(not left, "processes left after a stop during a pool boot: %r" % left)
    check(not os.path.exists(s.state_dir), "state dir left: %s" % s.state_dir)


def t_delete_pooled_template(_s, _ctx):
    """A template with a pool is deleted while serve runs: its ready sandbox is let go (its
    processes end), the delete answers 204, the template is gone and the pool does not boot it
    again; a second one is deleted right after its build, while its pool may be booting it."""
    s = tp.Server(args=("--pool", "pool-a=1,pool-b=1"))
    try:
        log = Log(s)
        spec = {"fromTemplate": "base", "steps": [{"type": "RUN", "args": ["echo built > ~/built"]}]}
        status = tb.build(s, "pool-a", spec)[1][0]
        check(status == "ready", "build pool-a: %s" % status)
        ready = log.wait(rb"warm pool: a sandbox of pool-a is ready")
        check(ready, "pool-a was not filled: %r" % log.buf[-600:])
        pooled = [p for p in tp.sandbox_pids(s.state_dir) if tp.alive(p)]
        check(pooled, "no process of pool-a's pooled sandbox")
        st, _, body = s.request("DELETE", "/templates/pool-a")
        check(st == 204, "DELETE /templates/pool-a with a pooled sandbox: %d %r" % (st, body))
        check(log.wait(rb"warm pool: 1 sandbox\(es\) of pool-a let go", timeout=5),
              "no 'let go' line: %r" % log.buf[-600:])
        deadline = time.time() + 10
        while time.time() < deadline and any(tp.alive(p) for p in pooled):
            time.sleep(0.1)
        check(not any(tp.alive(p) for p in pooled), "pool-a's pooled sandbox outlived the delete")
        st, _, j = s.create(templateID="pool-a")
        check(st == 404, "create of the deleted pool-a: %d %r" % (st, j))
        n_started = len(re.findall(rb"started: warm pool", log.buf))
        status = tb.build(s, "pool-b", spec)[1][0]
        check(status == "ready", "build pool-b: %s" % status)
        st, _, body = s.request("DELETE", "/templates/pool-b")
        check(st == 204, "DELETE /templates/pool-b right after its build: %d %r" % (st, body))
        time.sleep(2)
        log.wait(rb"\Z\A", timeout=0.5)  # read what serve logged meanwhile
        later = re.findall(rb"started: warm pool", log.buf)[n_started:]
        check(len(later) <= 1, "the pool booted a deleted template again: %r" % log.buf[-800:])
    finally:
        s.stop()


CHECKS = [t_pooled_not_listed, t_claim_applies_the_create, t_refills, t_miss_boots_its_own,
          t_stop_kills_the_pool, t_bad_pool_option, t_default_waits_for_first_use,
          t_stop_during_a_boot, t_delete_pooled_template]


def main():
    if os.geteuid() != 0:
        print("SKIP: abxlua serve needs root (bubblewrap, overlayfs, cgroups)")
        return 77
    s = tp.Server(args=("--pool", "base=1"))
    ctx = {"log": Log(s)}
    try:
        failed = tp.run_checks(s, ctx, CHECKS)
    finally:
        if not ctx.get("stopped"):
            s.stop()
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
