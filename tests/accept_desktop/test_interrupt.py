#!/usr/bin/env python3
"""Interrupting `abxlua accept desktop` mid-way (issue 15 acceptance): SIGINT while the desktop
starts in the sandbox (the run polls for it), and SIGTERM once the window is mapped (the VNC
session through the ingress is next), end the run with exit 2 after its cleanup; the report says
interrupted with the sandbox killed and none left by tag; no process (serve, bwrap, envd, Xvfb,
x11vnc, websockify), mount or cgroup of the run is left. Usage: test_interrupt.py ABXLUA"""
import json, os, signal, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import abxtest
from abxtest import check, finish

abxtest.needs_platform()
abx = os.path.abspath(sys.argv[1])
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def wait_line(p, text, seconds=60):
    return abxtest.wait_line(p, text, seconds)


DESKTOP = (b"Xvfb", b"x11vnc", b"websockify", b"jwm")


def desktop_procs():
    """pids of the desktop's programs (start.sh's) on the machine, by their command line"""
    return {int(d) for d in os.listdir("/proc") if d.isdigit()
            and any(n in abxtest.cmdline(int(d)).split(b"\0")[0] for n in DESKTOP)}


# (signal, the progress line after which it is sent)
for sig, after in ((signal.SIGINT, "ok   sandbox created"), (signal.SIGTERM, "ok   window mapped")):
    name = signal.Signals(sig).name
    tmp = tempfile.mkdtemp()
    out_dir = os.path.join(tmp, "out")
    env = dict(os.environ, TMPDIR=tmp, NO_COLOR="1")
    for k in ("ABX_PROVIDER", "ABX_CONFIG", "E2E_RUN_ID"):
        env.pop(k, None)
    before = desktop_procs()
    p = subprocess.Popen([abx, "accept", "desktop", "--template", "base", "--upload-script",
                          "--output-dir", out_dir], cwd=root, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    head, ok = wait_line(p, after)
    check(ok, "%s: the run got to %r" % (name, after))
    check(bool(abxtest.bwraps(tmp)), "%s: the run's sandbox is live at the signal" % name)
    ours = desktop_procs() - before  # the run's desktop, once start.sh ran (SIGTERM's case)
    if sig == signal.SIGTERM:
        check(len(ours) >= 3, "%s: the run's desktop programs run at the signal: %s" % (name, ours))
    out, took = abxtest.interrupt(p, sig, head)
    check(p.returncode == 2, "%s: exit 2 (got %s)" % (name, p.returncode))
    check(took < 20, "%s: the run ended %.1fs after the signal" % (name, took))
    check("interrupted: stopping" in out, "%s: the interrupt is announced" % name)
    report = os.path.join(out_dir, "report.json")
    rep = json.load(open(report)) if os.path.exists(report) else {}
    check(rep.get("interrupted") is True and rep.get("passed") is False,
          "%s: the report says interrupted, not passed" % name)
    cl = rep.get("cleanup", {})
    check(cl.get("sandboxes_killed") == 1 and cl.get("sandboxes_left") == 0,
          "%s: the sandbox was killed and none is left by tag: %s" % (name, cl))
    abxtest.nothing_left(tmp, name)
    check(abxtest.wait_until(lambda: not (ours & desktop_procs()), 10),
          "%s: none of the run's desktop programs is left: %s" % (name, ours & desktop_procs()))
    left = [d for d in os.listdir(tmp) if d != "out"]
    check(not left, "%s: no work or state dir remains: %s" % (name, left))
finish()
