#!/usr/bin/env python3
"""A template's readiness on the local platform (issue 22): `abxlua run` of the fixture folders
tests/templates/ready/{slow-ready,never-ready} with tests/templates/ready/ready.yaml
(request_timeout 5 s):
  - slow-ready (ready 12 s after start, ready_timeout 120): the create waits for readiness and
    succeeds; its deadline is max(request_timeout, create_timeout), not request_timeout; a
    create that outlives that deadline is a Timeout naming it and its source;
  - never-ready (ready_cmd never succeeds in a sandbox made with NEVER_READY, ready_timeout 6):
    the create fails after ~6 s naming the template, the command, the seconds waited, the probes,
    the last probe's exit and output and the start log tail (asserted by its scenario); a first
    probe that hangs past its envd call's bound (HANG_FIRST) is counted and tried again, not the
    verdict.
A fresh state dir (its own build cache). Skipped (77) without root and bwrap.

    test_ready_timeout.py ABXLUA
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import abxtest  # noqa: E402

check = abxtest.check


def main():
    abx = os.path.abspath(sys.argv[1])
    abxtest.needs_platform()
    state = tempfile.mkdtemp()
    env = dict(os.environ, XDG_STATE_HOME=state, NO_COLOR="1")
    for k in ("ABX_PROVIDER", "ABX_CONFIG"):
        env.pop(k, None)
    try:
        p = subprocess.run([abx, "run", "tests/templates/ready/slow-ready",
                            "tests/templates/ready/never-ready", "--config",
                            "tests/templates/ready/ready.yaml", "-j", "2"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
        out = p.stdout + p.stderr
        print(out)
        check(p.returncode == 0, "the run of both fixture folders exits 0 (got %d)" % p.returncode)
        for name, n in (("slow-ready", 2), ("never-ready", 3)):
            line = r"^%s +(cached \()?\d+\.\ds\)? +\d+\.\d\ds +%d passed, 0 failed, 0 skipped$" % (name, n)
            check(re.search(line, out, re.M) is not None,
                  "the table line of %s: %d passed" % (name, n))
    finally:
        shutil.rmtree(state, ignore_errors=True)
    abxtest.finish()


if __name__ == "__main__":
    main()
