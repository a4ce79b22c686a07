#!/usr/bin/env python3
"""Interrupting `abxlua accept skill-tools` mid-way (issue 15 acceptance), before its npm step, so
no registry is needed: SIGINT while the preview link is waiting to expire (the sandbox, its app
and the platform with its git server live), SIGTERM as the repository fetch starts (the clone
through the platform's git server). Each run ends with exit 2 after its cleanup; the report says
interrupted, its cleanup clean; the npm step never started; no sandbox, process (serve, bwrap,
envd, git daemon) or mount of the run is left (abxtest.nothing_left), no work dir.
Usage: test_skill_interrupt.py ABXLUA"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import abxtest  # noqa: E402
from abxtest import check, finish  # noqa: E402

abxtest.needs_platform()
abx = os.path.abspath(sys.argv[1])
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def wait_line(p, text, seconds=90):
    return abxtest.wait_line(p, text, seconds)


# (signal, the progress line after which it is sent, seconds to wait after that line)
for sig, line, delay in ((signal.SIGINT, "skill-tools: waiting ", 1.0),
                         (signal.SIGTERM, "skill-tools: repository.fetch", 0.0)):
    name = signal.Signals(sig).name
    tmp = tempfile.mkdtemp(prefix="abx-skill-int-")
    report = os.path.join(tmp, "report.json")
    env = dict(os.environ, TMPDIR=tmp, NO_COLOR="1")
    for k in ("ABX_PROVIDER", "ABX_CONFIG", "E2E_RUN_ID", "ABX_SKILL_RUN_PREFIX"):
        env.pop(k, None)
    p = subprocess.Popen([abx, "accept", "skill-tools", "--provider", "local", "--output", report],
                         cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    head, ok = wait_line(p, line)
    check(ok, "%s: the run reached %r" % (name, line.strip()))
    check(abxtest.bwraps(tmp), "%s: the run's sandbox is live at the signal" % name)
    time.sleep(delay)
    out, took = abxtest.interrupt(p, sig, head, seconds=120)
    check(p.returncode == 2, "%s: exit 2 (got %s)" % (name, p.returncode))
    check(took < 60, "%s: the run ended %.1f s after the signal" % (name, took))
    check("interrupted: stopping, then cleaning up" in out, "%s: the interrupt is announced" % name)
    check("mcp.host_install" not in out, "%s: stopped before the npm step" % name)
    rep = json.load(open(report)) if os.path.exists(report) else {}
    check(rep.get("interrupted") is True and rep.get("ok") is False,
          "%s: the report says interrupted (interrupted=%r ok=%r)"
          % (name, rep.get("interrupted"), rep.get("ok")))
    cl = rep.get("cleanup", {})
    check(cl.get("errors") == [] and cl.get("sandboxes_remaining") == 0
          and cl.get("sandboxes_killed", 0) + cl.get("sandboxes_swept", 0) >= 1
          and cl.get("git_server_processes_remaining") == 0 and cl.get("platform_stopped") is True
          and cl.get("host_files_removed") is True,
          "%s: the report's cleanup is clean and killed the sandbox: %r" % (name, cl))
    abxtest.nothing_left(tmp, name)
    check(os.listdir(tmp) == ["report.json"], "%s: no work or state dir remains: %s"
          % (name, os.listdir(tmp)))
finish()
