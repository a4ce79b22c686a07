#!/usr/bin/env python3
"""fromImage builds of `abxlua serve` (template_build.h abx_tbuild_image_root, rootfs.h "Images",
image_debian.h), through the E2B build API as the 2.51 SDK drives it.

Usage: test_from_image.py refuse|build path/to/abxlua

refuse (fast, in `make test`): fromImage of a non-Debian image ("ubuntu:22.04", "ghcr.io/x/y")
       fails at step "base" with image_debian.h's exact refusal; a non-Debian build never touches
       the cache's images dir.
build  (slow: a real mmdebstrap build of debian:bookworm-slim from deb.debian.org, about a
       minute cold; label `slow`, `make test-slow`): a RUN step installs `hello` with apt through
       the build proxy; a sandbox of the result is Debian's root alone (its /etc/debian_version,
       `hello`, none of the host's /usr, one overlay), envd serves commands and files, `user`,
       sudo, start_cmd/ready_cmd, a snapshot, a pause and resume, a fork; a rebuild finds the image and every step
       cached; a build fromTemplate of it stays on the image; SIGTERM during a cold image build stops serve at once and leaves nothing. Exit 77 (skipped) when not root, no cgroup v1, no mmdebstrap, or deb.debian.org
       is unreachable.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_platform as tp  # noqa: E402
import test_template_build as tb  # noqa: E402

MODE = sys.argv[1] if len(sys.argv) > 1 else ""
tp.BIN = sys.argv[2] if len(sys.argv) > 2 else tp.BIN
check = tp.check

REG = ("image '%s': image registry %s is unreachable from this machine: only Debian images "
       "(debian:<suite>) are built locally, from Debian packages")


def build(s, name, spec, timeout=120):
    """test_template_build.build with a bound fit for a cold image build."""
    r = tb.request(s, name)
    st, _, j = s.json("POST", "/v2/templates/%s/builds/%s" % (r["templateID"], r["buildID"]), spec)
    check(st == 202, "build start: %d %r" % (st, j))
    return r, tb.wait(s, r["templateID"], r["buildID"], timeout=timeout)


def files(s, sid, method, path, body=None, user="user"):
    return s.request(method, "/files?path=%s&username=%s" % (path, user), body, key=False,
                     headers={"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": str(tp.ENVD_PORT),
                              "Content-Type": "application/octet-stream"})


# ---- refuse ------------------------------------------------------------------------------------

def t_refused(s, ctx):
    for image, reg in (("ubuntu:22.04", "docker.io"), ("ghcr.io/x/y", "ghcr.io")):
        _, (status, logs, last) = build(s, "not-debian", {"fromImage": image,
                                                             "steps": [{"type": "RUN", "args": ["true"]}]})
        reason = last.get("reason") or {}
        check(status == "error" and reason.get("step") == "base" and
              reason.get("message") == REG % (image, reg), "%s: %s %r" % (image, status, reason))
        check(any(e["message"] == "Build failed: " + REG % (image, reg) for e in logs),
              "the refusal is a log entry: %r" % [e["message"] for e in logs])
        st, _, _ = s.create(templateID="not-debian")
        check(st == 404, "no template from a refused image: %d" % st)
        s.json("DELETE", "/templates/not-debian")
    check(not os.path.exists(os.path.join(ctx["cache"], "images")),
          "a refused image builds nothing: %r" % os.listdir(ctx["cache"]))


# ---- build -------------------------------------------------------------------------------------

SPEC = {"fromImage": "debian:bookworm-slim",
        "startCmd": "echo started-as-$(whoami) > /tmp/started; hello > /tmp/hello.out; sleep infinity",
        "readyCmd": "test -s /tmp/hello.out",
        "steps": [{"type": "RUN", "args": ["apt-get update && DEBIAN_FRONTEND=noninteractive apt-get "
                                           "install -y --no-install-recommends hello", "root"]},
                  {"type": "RUN", "args": ["echo via-$http_proxy > /tmp/proxy; cat /etc/debian_version"
                                           " > ~/built-on"]},
                  {"type": "ENV", "args": ["GREETING", "from-image"]},
                  {"type": "WORKDIR", "args": ["/home/user"]}]}


def t_build(s, ctx):
    t0 = time.time()
    r, (status, logs, last) = build(s, "img-hello", SPEC, timeout=1200)
    ctx["build_s"] = time.time() - t0
    msgs = [(e.get("step"), e["message"]) for e in logs]
    check(status == "ready", "status %s %r: %r" % (status, last.get("reason"), msgs[-10:]))
    base = [m for st, m in msgs if st == "base"]
    check(any(m.startswith("image debian:bookworm-slim: building debian-bookworm-slim-") for m in base)
          and any(m.startswith("I: success in") for m in base),
          "mmdebstrap's lines are entries of step base: %r" % base[:3])
    check(any(m.startswith("[base] FROM image debian:bookworm-slim [") for m in base), "FROM line: %r" % base)
    one = [m for st, m in msgs if st == "1"]
    check(any("http://deb.debian.org/debian bookworm" in m for m in one) and
          any("Setting up hello" in m for m in one), "apt in step 1: %r" % one[-5:])
    check(not any("no egress proxy" in m for _, m in msgs), "the proxy was there: %r" % msgs)
    for st_, m in msgs:
        if m.startswith("I: success in"):
            ctx["mmdebstrap"] = m
    ctx["r"] = r


def t_sandbox(s, ctx):
    st, _, sb = s.create(templateID="img-hello")
    check(st == 201, "create: %d %r" % (st, sb))
    sid = ctx["sid"] = sb["sandboxID"]
    check(os.path.exists("/usr/bin/cmake"), "the host has /usr/bin/cmake (what this test looks for)")
    code, out, err = tp.run_in(s, sid, "cat /etc/debian_version; hello; whoami; id -u; pwd; echo $GREETING;"
                               " cat /tmp/started; cat ~/built-on; test -e /usr/bin/cmake && echo HOST-USR;"
                               " test -e /usr/bin/python3 && echo PYTHON; dpkg-query -W -f='${Status}\\n' hello;"
                               " dpkg-query -W cmake 2>/dev/null || echo no-cmake-in-dpkg;"
                               " grep -c ' overlay ' /proc/mounts; awk '$2==\"/usr\"' /proc/mounts;"
                               " cat /tmp/proxy")
    lines = out.split("\n")
    check(code == 0, "run: %r %r" % (out, err))
    check(lines[0].startswith("12.") and lines[1] == "Hello, world!" and lines[2:7] ==
          ["user", "1000", "/home/user", "from-image", "started-as-user"] and lines[7] == lines[0],
          "debian, hello, user, workdir, env, start_cmd: %r" % lines)
    check("HOST-USR" not in lines and "PYTHON" not in lines, "none of the host's /usr: %r" % lines)
    check("install ok installed" in lines and "no-cmake-in-dpkg" in lines, "the image's dpkg database: %r" % lines)
    check(lines[lines.index("no-cmake-in-dpkg") + 1] == "1" and
          lines[lines.index("no-cmake-in-dpkg") + 2].startswith("via-http://"),
          "one overlay, nothing on /usr; the RUN step had the proxy: %r" % lines)
    code, out, err = tp.run_in(s, sid, "ls -l /opt/abx/abxlua | cut -c1-10; /opt/abx/abxlua help envd >/dev/null"
                               " && echo envd-bin; sudo -n whoami; sudo -n -u user id -un; stat -c %a /etc/sudoers.d/user")
    check(code == 0 and out.strip().split("\n") == ["-rwxr-xr-x", "envd-bin", "root", "user", "440"],
          "the binary, sudo through envd's broker: %r %r" % (out, err))
    st, _, data = files(s, sid, "POST", "/home/user/note.txt", b"written through envd\n")
    check(st == 200, "files upload: %d %r" % (st, data))
    st, _, data = files(s, sid, "GET", "/home/user/note.txt")
    check(st == 200 and data == b"written through envd\n", "files download: %d %r" % (st, data))
    code, out, _ = tp.run_in(s, sid, "stat -c %U /home/user/note.txt; cat /etc/hosts | head -n1", user="root")
    check(code == 0 and out.strip().split("\n") == ["user", "127.0.0.1\tlocalhost"], "owner, /etc/hosts: %r" % out)


def t_snapshot(s, ctx):
    st, _, j = s.json("POST", "/sandboxes/%s/snapshots" % ctx["sid"], {"name": "img-snap"})
    check(st in (200, 201), "snapshot: %d %r" % (st, j))
    st, _, b = s.create(templateID="img-snap")
    check(st == 201, "create from the snapshot: %d %r" % (st, b))
    code, out, err = tp.run_in(s, b["sandboxID"], "cat ~/note.txt; hello; test -e /usr/bin/cmake && echo HOST-USR;"
                               " cat /tmp/started")
    check(code == 0 and out == "written through envd\nHello, world!\nstarted-as-user\n",
          "the snapshot's sandbox: %r %r" % (out, err))
    s.request("DELETE", "/sandboxes/" + b["sandboxID"])


def t_pause_fork(s, ctx):
    sid = ctx["sid"]
    st, _, _ = s.request("POST", "/sandboxes/%s/pause" % sid)
    check(st == 204, "pause: %d" % st)
    st, _, j = s.json("POST", "/sandboxes/%s/connect" % sid, {"timeout": 120})
    check(st == 201, "connect (resume): %d %r" % (st, j))
    code, out, _ = tp.run_in(s, sid, "cat ~/note.txt; hello")
    check(code == 0 and out == "written through envd\nHello, world!\n", "after resume: %r" % out)
    st, _, res = s.json("POST", "/sandboxes/%s/fork" % sid, {"count": 1, "timeout": 60})
    check(st == 201 and len(res) == 1 and "sandbox" in res[0], "fork: %d %r" % (st, res))
    f = res[0]["sandbox"]["sandboxID"]
    code, out, _ = tp.run_in(s, f, "cat ~/note.txt; test -e /usr/bin/cmake && echo HOST-USR; grep -c ' overlay ' /proc/mounts")
    check(code == 0 and out == "written through envd\n1\n", "the fork: %r" % out)
    s.request("DELETE", "/sandboxes/" + f)
    s.request("DELETE", "/sandboxes/" + sid)
    st, _, _ = s.json("DELETE", "/templates/img-snap")
    check(st == 204, "delete the snapshot: %d" % st)


def t_rebuild_cached(s, ctx):
    t0 = time.time()
    _, (status, logs, _) = build(s, "img-hello-2", SPEC)
    took = time.time() - t0
    msgs = [e["message"] for e in logs]
    steps = [m for m in msgs if "[builder" in m and " ENV " not in m]
    check(status == "ready" and any(m.endswith(", built before") for m in msgs) and
          len(steps) == 3 and all(m.startswith("CACHED ") for m in steps),
          "rebuild: %s %r" % (status, msgs))
    ctx["rebuild_s"] = took


def t_stop_during_image_build(cache):
    """SIGTERM while mmdebstrap runs: serve kills it (image_debian.h abx_image_stop) and exits 0
    at once; no temporary root, no mount and no mmdebstrap process is left."""
    s = tp.Server(args=("--build-cache", cache))
    r = tb.request(s, "stop-image")
    s.json("POST", "/v2/templates/%s/builds/%s" % (r["templateID"], r["buildID"]),
           {"fromImage": "debian:bookworm-slim"})
    deadline = time.time() + 120
    while time.time() < deadline:
        j = s.json("GET", "/templates/%s/builds/%s/status" % (r["templateID"], r["buildID"]))[2]
        if any(e["message"].startswith("I: installing essential packages") for e in j["logEntries"]):
            break
        time.sleep(0.2)
    check(time.time() < deadline, "mmdebstrap reached its install phase")
    t0 = time.time()
    code, _, err = s.stop()
    took = time.time() - t0
    check(code == 0 and took < 10, "serve exit %r after %.1f s: %s" % (code, took, err.decode(errors="replace")[-300:]))
    images = os.path.join(cache, "images")
    left = [x for x in os.listdir(images) if not x.endswith(".lock")]
    check(not left, "nothing left in %s: %r" % (images, left))
    with open("/proc/mounts") as f:
        mounts = [ln for ln in f if cache in ln]
    check(not mounts, "no mount left under the cache: %r" % mounts)
    ps = subprocess.run(["pgrep", "-f", cache], capture_output=True, text=True).stdout.split()
    check(not ps, "no process left: %r" % ps)


def t_from_built_image(s, ctx):
    """A build fromTemplate of an image-built template stays on the image's root: no dpkg/apt
    layer of the host's is added, its sandboxes still see no host /usr."""
    spec = {"fromTemplate": "img-hello", "steps": [{"type": "RUN", "args": ["hello -g child > ~/child"]}]}
    _, (status, logs, last) = build(s, "img-child", spec)
    msgs = [e["message"] for e in logs]
    check(status == "ready", "status %s %r: %r" % (status, last.get("reason"), msgs[-5:]))
    st, _, sb = s.create(templateID="img-child")
    check(st == 201, "create: %d %r" % (st, sb))
    code, out, _ = tp.run_in(s, sb["sandboxID"], "cat ~/child; test -e /usr/bin/cmake && echo HOST-USR;"
                             " dpkg-query -W cmake 2>/dev/null || echo no-cmake-in-dpkg; echo $GREETING")
    check(code == 0 and out == "child\nno-cmake-in-dpkg\nfrom-image\n", "the child: %r" % out)
    s.request("DELETE", "/sandboxes/" + sb["sandboxID"])


def main():
    if MODE not in ("refuse", "build"):
        print(__doc__)
        return 2
    if os.geteuid() != 0 or not os.path.isdir("/sys/fs/cgroup/memory"):
        print("SKIP: abxlua serve needs root and cgroup v1")
        return 77
    if MODE == "build":
        if not shutil.which("mmdebstrap"):
            print("SKIP: mmdebstrap is not installed (scripts/deps.sh installs it)")
            return 77
        try:
            socket.create_connection(("deb.debian.org", 80), timeout=5).close()
        except OSError as e:
            print("SKIP: deb.debian.org is unreachable from this machine: %s" % e)
            return 77
    with tempfile.TemporaryDirectory(prefix="abx-from-image.") as cache:
        ctx = {"cache": cache}
        s = tp.Server(args=("--build-cache", cache))
        checks = [t_refused] if MODE == "refuse" else [t_build, t_sandbox, t_snapshot, t_pause_fork, t_rebuild_cached, t_from_built_image]
        failed = tp.run_checks(s, ctx, checks, only=os.environ.get("ONLY"))
        rc = tp.stop_and_sum(s, failed)
        if MODE == "build" and (not os.environ.get("ONLY") or "stop_during_image_build" in os.environ["ONLY"]):
            with tempfile.TemporaryDirectory(prefix="abx-from-image-stop.") as c2:
                t0 = time.time()
                try:
                    t_stop_during_image_build(c2)
                    print("PASS %-28s %.2fs" % ("stop_during_image_build", time.time() - t0))
                except Exception as e:  # noqa: BLE001
                    print("FAIL %-28s %s: %s" % ("stop_during_image_build", type(e).__name__, e))
                    rc = 1
        if MODE == "build":
            print("INFO cold build (mmdebstrap + apt hello): %.1f s; %s; cached rebuild %.1f s" % (
                ctx.get("build_s", -1), ctx.get("mmdebstrap", "?"), ctx.get("rebuild_s", -1)))
        return rc


if __name__ == "__main__":
    sys.exit(main())
