#!/usr/bin/env python3
"""fromImage of a Debian image (platform/template/image_debian.h), through tests/platform/image_debian_harness.c.

Usage: test_image_debian.py refs|build path/to/abxlua path/to/image_debian_harness

refs  (fast, in `make test`): which references are Debian images, with which suite, and the exact
      refusal of every other image (registry named) and of the tags not built here.
build (slow: a real mmdebstrap build from deb.debian.org, a minute or two; label `slow`, not in
      `make test`; `make test-slow`): two concurrent builds of debian:bookworm-slim in a fresh
      cache build it once (the lock), a third call finds it built, and the root holds what the
      header promises (envd's libraries: the binary runs in it; user 1000; the sudo links; slim
      excludes). Exit 77 (skipped) when not root, without mmdebstrap, or deb.debian.org is
      unreachable.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

MODE, ABX, HARNESS = (sys.argv[1:4] + [None, None, None])[:3]
failed = 0


def check(cond, what):
    global failed
    print("%s %s" % ("PASS" if cond else "FAIL", what))
    if not cond:
        failed += 1


REG = ("image '%s': image registry %s is unreachable from this machine: only Debian images "
       "(debian:<suite>) are built locally, from Debian packages")


def refs():
    ok = {"debian": "bookworm 0", "debian:latest": "bookworm 0", "debian:bookworm": "bookworm 0",
          "debian:12": "bookworm 0", "debian:bookworm-slim": "bookworm 1",
          "debian:12-slim": "bookworm 1", "debian:trixie": "trixie 0", "debian:13-slim": "trixie 1",
          "debian:stable": "stable 0", "debian:stable-slim": "stable 1",
          "debian:oldstable": "oldstable 0", "docker.io/library/debian:bookworm": "bookworm 0",
          "docker.io/debian:12": "bookworm 0", "library/debian": "bookworm 0",
          "index.docker.io/library/debian:trixie": "trixie 0"}
    refused = {"ubuntu:22.04": REG % ("ubuntu:22.04", "docker.io"),
               "node:20": REG % ("node:20", "docker.io"),
               "e2bdev/base": REG % ("e2bdev/base", "docker.io"),
               "ghcr.io/x/y": REG % ("ghcr.io/x/y", "ghcr.io"),
               "localhost:5000/debian:12": REG % ("localhost:5000/debian:12", "localhost:5000"),
               "quay.io/debian:12": REG % ("quay.io/debian:12", "quay.io"),
               "debianx:12": REG % ("debianx:12", "docker.io"),
               "debian:12.8": "point-release tags are not built locally",
               "debian:bullseye": "older C library than abxlua envd needs",
               "debian:sid": "moving targets", "debian:testing": "moving targets",
               "debian:bookworm-20240101": "dated and variant tags",
               "debian@sha256:0123": "digests are not built locally",
               "debian:Bookworm": "unknown tag", "debian:": "bad tag"}
    for ref, want in ok.items():
        p = subprocess.run([HARNESS, "parse", ref], capture_output=True, text=True)
        check(p.stdout.strip() == "ok " + want, "%s -> %s (got %r)" % (ref, want, p.stdout.strip()))
    for ref, want in refused.items():
        p = subprocess.run([HARNESS, "parse", ref], capture_output=True, text=True)
        got = p.stdout.strip()
        exact = want.startswith("image '")
        good = p.returncode == 1 and (got == "err " + want if exact else
                                      got.startswith("err image '%s': " % ref) and want in got)
        check(good, "%s refused: %s (got %r)" % (ref, want, got))


def build():
    if os.geteuid() != 0:
        print("SKIP: mmdebstrap's root mode needs root")
        return 77
    if not shutil.which("mmdebstrap"):
        print("SKIP: mmdebstrap is not installed (scripts/deps.sh installs it)")
        return 77
    try:
        socket.create_connection(("deb.debian.org", 80), timeout=5).close()
    except OSError as e:
        print("SKIP: deb.debian.org is unreachable from this machine: %s" % e)
        return 77
    cache = tempfile.mkdtemp(prefix="abx-images-")
    try:
        outs = [None, None]

        def one(i):
            outs[i] = subprocess.run([HARNESS, "build", "debian:bookworm-slim", cache, ABX],
                                     capture_output=True, text=True, timeout=1400)

        t0 = time.time()
        ts = [threading.Thread(target=one, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        secs = time.time() - t0
        for i, o in enumerate(outs):
            last = o.stdout.strip().splitlines()[-1] if o.stdout.strip() else ""
            check(o.returncode == 0 and last.startswith("ok /"),
                  "build %d: %r %s" % (i, last, o.stderr[-300:] + o.stdout[-600:] if o.returncode else ""))
        built = [o for o in outs if "I: success in" in o.stdout]
        before = [o for o in outs if ", built before" in o.stdout]
        check(len(built) == 1 and len(before) == 1,
              "two concurrent calls built it once (the lock): %d built, %d found it" %
              (len(built), len(before)))
        print("INFO cold build of debian:bookworm-slim: %.0f s wall (%s)" % (
            secs, [ln for ln in built[0].stdout.splitlines() if "I: success in" in ln][0][4:]
            if built else "?"))
        root = outs[0].stdout.strip().splitlines()[-1][3:]
        t1 = time.time()
        o = subprocess.run([HARNESS, "build", "debian:bookworm-slim", cache, ABX],
                           capture_output=True, text=True, timeout=120)
        check(o.returncode == 0 and o.stdout.strip().endswith(root) and "built before" in o.stdout,
              "a third call finds it built (%.2f s)" % (time.time() - t1))
        key = os.path.basename(os.path.dirname(root))
        check(key.startswith("debian-bookworm-slim-") and len(key) == len("debian-bookworm-slim-") + 12,
              "key %s" % key)
        check(sorted(x for x in os.listdir(os.path.join(cache, "images")) if not x.endswith(".lock"))
              == [key], "no temporary dirs left: %r" % os.listdir(os.path.join(cache, "images")))
        st = os.stat(os.path.join(root, "opt/abx/abxlua"))
        check(st.st_size == 0 and st.st_mode & 0o777 == 0o755, "/opt/abx/abxlua is an empty mount point")
        check(os.readlink(os.path.join(root, "usr/bin/sudo")) == "/opt/abx/abxlua" and
              os.readlink(os.path.join(root, "usr/local/bin/sudo")) == "/opt/abx/abxlua",
              "sudo links to the platform's sudo")
        with open(os.path.join(root, "etc/sudoers.d/user")) as f:
            check(f.read() == "user ALL=(ALL:ALL) NOPASSWD: ALL\n", "sudoers.d/user")
        with open(os.path.join(root, "etc/passwd")) as f:
            check("user:x:1000:1000::/home/user:/bin/bash\n" in f.read(), "user 1000 in passwd")
        home = os.stat(os.path.join(root, "home/user"))
        check(home.st_uid == 1000 and home.st_mode & 0o777 == 0o755, "/home/user 1000 0755")
        check(os.stat(os.path.join(root, "tmp")).st_mode & 0o7777 == 0o1777, "/tmp 1777")
        check(os.path.isfile(os.path.join(root, "etc/ssl/certs/ca-certificates.crt")), "CA bundle")
        check(not os.path.exists(os.path.join(root, "usr/share/man/man1")) and
              os.path.exists(os.path.join(root, "usr/share/doc/bash/copyright")) and
              not os.path.exists(os.path.join(root, "usr/share/doc/bash/README")),
              "slim: no man pages, docs but copyright")
        # envd's libraries are there: the binary, bound in as a sandbox gets it, runs
        p = subprocess.run(["unshare", "--mount", "sh", "-c",
                            "mount --bind \"$1\" \"$2/opt/abx/abxlua\" && chroot \"$2\" "
                            "/opt/abx/abxlua help envd >/dev/null && chroot \"$2\" /bin/bash -c "
                            "'echo $BASH_VERSION; id user'", "sh", os.path.realpath(ABX), root],
                           capture_output=True, text=True, timeout=60)
        check(p.returncode == 0 and "uid=1000(user)" in p.stdout,
              "abxlua envd and bash run in the root: %r %r" % (p.stdout, p.stderr[-300:]))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print("%d failed" % failed)
    return 1 if failed else 0


def main():
    if MODE not in ("refs", "build") or not HARNESS:
        print(__doc__)
        return 2
    if MODE == "refs":
        refs()
        print("%d failed" % failed)
        return 1 if failed else 0
    return build()


if __name__ == "__main__":
    sys.exit(main())
