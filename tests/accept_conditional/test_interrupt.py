#!/usr/bin/env python3
"""Interrupting `abxlua accept conditional` mid-way (issue 15 acceptance): SIGINT while the
source sandbox is paused by the CLI, and SIGTERM while a CLI child of the other direction runs,
end the run with exit 2 after its cleanup; the report says interrupted; no sandbox, process
(serve, bwrap, CLI child) or mount of the run is left. Usage: test_interrupt.py ABXLUA"""
import json, os, signal, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import abxtest
from abxtest import check, finish, procs_with, cmdline

abxtest.needs_platform()
abx = os.path.abspath(sys.argv[1])
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def cli_children(tmp):
    """pids of `abxlua sandbox ...` children of the run: cheap on the command line first, then
    their environment names the run's TMPDIR"""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        c = cmdline(int(d))
        if b"\0sandbox\0" not in c:
            continue
        try:
            if tmp.encode() in open("/proc/%s/environ" % d, "rb").read():
                found.append(int(d))
        except OSError:
            pass
    return found


def wait_line(p, text, seconds=60):
    return abxtest.wait_line(p, text, seconds)


def wait_for(pred, seconds):
    return abxtest.wait_until(pred, seconds, step=0.05)


for sig in (signal.SIGINT, signal.SIGTERM):
    name = signal.Signals(sig).name
    tmp = tempfile.mkdtemp()
    report = os.path.join(tmp, "report.json")
    env = dict(os.environ, TMPDIR=tmp, NO_COLOR="1")
    for k in ("ABX_PROVIDER", "ABX_CONFIG", "E2E_RUN_ID"):
        env.pop(k, None)
    p = subprocess.Popen([abx, "accept", "conditional", "--provider", "local", "--template", "base",
                          "--report", report], cwd=root, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    live = wait_for(lambda: any(b"bwrap" in cmdline(q) for q in procs_with(tmp)), 30)
    check(live, "%s: the run's sandbox is live" % name)
    if sig == signal.SIGINT:
        # in pause_cli_resume_lua: the CLI pauses at once, then the run waits 2 s paused
        head, ok = wait_line(p, "] source: passed")
        check(ok, "%s: the source check passed before the interrupt" % name)
        time.sleep(0.5)
    else:
        # in pause_lua_resume_cli: a CLI child (info, then resume) runs
        head, ok = wait_line(p, "] pause_cli_resume_lua: passed")
        check(ok, "%s: the first direction passed before the interrupt" % name)
        caught = wait_for(lambda: cli_children(tmp), 10)
        print("%s: a CLI child runs at the signal: %s" % (name, bool(caught)))
    out, took = abxtest.interrupt(p, sig, head)
    check(p.returncode == 2, "%s: exit 2 (got %s)" % (name, p.returncode))
    check(took < 30, "%s: the run ended %.1fs after the signal" % (name, took))
    check("interrupted: stopping, then cleaning up" in out, "%s: the interrupt is announced" % name)
    rep = json.load(open(report)) if os.path.exists(report) else {}
    check(rep.get("status") == "interrupted", "%s: the report says interrupted" % name)
    cl = next((c for c in rep.get("checks", []) if c["name"] == "owned_cleanup"), {})
    check(cl.get("status") == "passed", "%s: owned_cleanup ran and passed: %s" % (name, cl.get("reason")))
    abxtest.nothing_left(tmp, name, seconds=10)
    check(os.listdir(tmp) == ["report.json"], "%s: no work or state dir remains: %s"
          % (name, os.listdir(tmp)))
finish()
