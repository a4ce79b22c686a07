#!/usr/bin/env python3
"""A template's readiness on the local platform (issue 22): `abxlua run` of the fixture folders
tests/templates/ready/{slow-ready,never-ready} with tests/templates/ready/ready.yaml
(request_timeout 5 s):
  - slow-ready (ready 12 s after start, ready_timeout 120): the create waits for readiness and
    succeeds; its deadline is max(request_timeout, create_timeout), not request_timeout;
  - never-ready (ready_cmd never succeeds in a sandbox made with NEVER_READY, ready_timeout 3):
    the create fails after ~3 s naming the template, the command, the seconds waited, the probes,
    the last probe's exit and output and the start log tail (asserted by its scenario).
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
        for name in ("slow-ready", "never-ready"):
            check(re.search(r"^%s +(cached \()?\d+\.\ds\)? +\d+\.\d\ds +1 passed, 0 failed, 0 skipped$"
                            % name, out, re.M) is not None, "the table line of %s: 1 passed" % name)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    abxtest.finish()


if __name__ == "__main__":
    main()
