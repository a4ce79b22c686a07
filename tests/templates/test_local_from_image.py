#!/usr/bin/env python3
"""A recipe with `from_image: debian:bookworm-slim` (tests/templates/local/debian-hello) built by
`abxlua template build` on the local platform (serve's fromImage: a cold mmdebstrap root, about a
minute, then an apt step through the build proxy), then `abxlua run` of the folder: a rebuild by a new serve (image found, steps CACHED),
deploy, and its script against a sandbox of it. Slow (label `slow`, `make test-slow`).

Skipped (77) without root and bwrap, without mmdebstrap, or when deb.debian.org is unreachable.

    test_local_from_image.py ABXLUA
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import abxtest  # noqa: E402

check = abxtest.check
FIXTURE = "tests/templates/local/debian-hello"


def main():
    abx = os.path.abspath(sys.argv[1])
    abxtest.needs_platform()
    if not shutil.which("mmdebstrap"):
        print("skipped: mmdebstrap is not installed (scripts/deps.sh installs it)")
        sys.exit(77)
    try:
        socket.create_connection(("deb.debian.org", 80), timeout=5).close()
    except OSError as e:
        print("skipped: deb.debian.org is unreachable from this machine: %s" % e)
        sys.exit(77)
    state = tempfile.mkdtemp()
    env = dict(os.environ, XDG_STATE_HOME=state, NO_COLOR="1")
    for k in ("ABX_PROVIDER", "ABX_CONFIG"):
        env.pop(k, None)

    def cli(*args):
        t0 = time.time()
        p = subprocess.run([abx, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=1200)
        print(p.stdout + p.stderr)
        print("INFO abxlua %s: %.1f s" % (" ".join(args), time.time() - t0))
        return p.returncode, p.stdout + p.stderr

    try:
        code, out = cli("template", "build", FIXTURE)
        check(code == 0, "template build of a from_image recipe exits 0 (got %d)" % code)
        check(re.search(r"^debian-hello \| image debian:bookworm-slim: building debian-bookworm-slim-", out, re.M)
              is not None, "the image build's lines are streamed")
        check(re.search(r"^debian-hello \| I: success in ", out, re.M) is not None, "mmdebstrap's own lines too")
        for k, kind in enumerate(["apt", "run", "env"], 1):
            check(re.search(r"^debian-hello: step %d/3 %s (CACHED|\d+\.\ds)$" % (k, kind), out, re.M)
                  is not None, "a progress line for step %d/3 (%s)" % (k, kind))
        check(os.path.isdir(os.path.join(state, "abxlua", "build-cache", "images")),
              "the image root is cached in <state dir>/build-cache/images")

        code, out = cli("run", FIXTURE)
        check(code == 0, "abxlua run of the from_image folder passes (got %d)" % code)
        check(re.search(r"^debian-hello +cached +\d+\.\d\ds +2 passed, 0 failed, 0 skipped$", out, re.M)
              is not None, "the table line of debian-hello: a new serve restored the template from "
              "its store, replaying the image and the steps from the kept build cache; 2 passed")
    finally:
        shutil.rmtree(state, ignore_errors=True)
    abxtest.finish()


if __name__ == "__main__":
    main()
