#!/usr/bin/env python3
"""The ingress's concurrency model (issue 14): `abxlua serve` proxies many streams on a bounded
number of threads, and a slow reader slows the sandbox instead of filling serve's memory.

Usage: test_ingress_concurrency.py [path/to/abxlua] [--streams N]

Checks (docs/PLATFORM.md "Threads"):
- many_streams: N (default 300) process.Process/Start streams through the ingress, each on its own
  connection, all open at once (every command waits at a gate file until all heads arrived); serve's
  thread count (/proc/PID/status Threads) stays at most THREAD_BOUND the whole time (the
  thread-per-connection front held two threads per stream); then every command's output is intact.
- slow_reader: a command writes 48 MiB to stdout; the client reads 64 KiB every 0.2 s for 3 s:
  serve's VmRSS grows by less than 16 MiB meanwhile (the stream's buffer is bounded and libcurl
  is paused), and the rest then arrives complete.
- client_gone: a client that hangs up on a waiting stream is noticed: serve's open fds return to
  what they were within 6 s (the suspended connection is checked every 2 s).
"""
import base64
import json
import os
import select
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_platform as tp  # noqa: E402
from test_platform import check  # noqa: E402

THREAD_BOUND = 64
STREAMS = 300


def status_field(pid, name):
    with open("/proc/%d/status" % pid) as f:
        for ln in f:
            if ln.startswith(name + ":"):
                return int(ln.split()[1])
    return 0


def nfds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def start_request(sid, cmd):
    msg = json.dumps({"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}}).encode()
    body = b"\x00" + struct.pack(">I", len(msg)) + msg
    head = ("POST /process.Process/Start HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
            "Content-Type: application/connect+json\r\nConnect-Protocol-Version: 1\r\n"
            "E2b-Sandbox-Id: %s\r\nE2b-Sandbox-Port: %d\r\nAuthorization: Basic %s\r\n"
            "Content-Length: %d\r\n\r\n" % (sid, tp.ENVD_PORT, base64.b64encode(b"user:").decode(),
                                            len(body)))
    return head.encode() + body


def dechunk(raw):
    """The body of a whole HTTP/1.1 response with chunked transfer coding (or a plain one)."""
    head, _, rest = raw.partition(b"\r\n\r\n")
    if b"chunked" not in head.lower():
        return head, rest
    out, pos = [], 0
    while pos < len(rest):
        eol = rest.index(b"\r\n", pos)
        n = int(rest[pos:eol].split(b";")[0] or b"0", 16)
        if n == 0:
            break
        out.append(rest[eol + 2:eol + 2 + n])
        pos = eol + 2 + n + 2
    return head, b"".join(out)


def stdout_of(body):
    """(stdout bytes, ended) from a Connect server stream of process events."""
    out, ended, pos = [], False, 0
    while len(body) - pos >= 5:
        flags, n = struct.unpack(">BI", body[pos:pos + 5])
        payload = json.loads(body[pos + 5:pos + 5 + n] or b"{}")
        pos += 5 + n
        if flags & 2:
            check("error" not in payload, "stream error: %r" % payload)
            ended = True
            break
        ev = payload.get("event", {})
        if "data" in ev:
            out.append(base64.b64decode(ev["data"].get("stdout", "")))
    return b"".join(out), ended


def t_many_streams(s, ctx):
    sids = ctx["sids"]
    pid = s.proc.pid
    n = ctx["streams"]
    peak = status_field(pid, "Threads")
    socks = []
    for i in range(n):
        sid = sids[i % len(sids)]
        c = socket.create_connection(("127.0.0.1", s.port), timeout=60)
        c.sendall(start_request(sid, "while [ ! -e /tmp/gate ]; do sleep 0.2; done; echo done-%d" % i))
        socks.append(c)
        if i % 25 == 0:
            peak = max(peak, status_field(pid, "Threads"))
    bufs = [b""] * n
    pending = set(range(n))
    deadline = time.time() + 120
    while pending and time.time() < deadline:  # every head: all n streams are open upstream
        ready, _, _ = select.select([socks[i] for i in pending], [], [], 0.5)
        for c in ready:
            i = socks.index(c)
            chunk = c.recv(65536)
            check(chunk, "stream %d closed before its head" % i)
            bufs[i] += chunk
            if b"\r\n\r\n" in bufs[i]:
                check(bufs[i].startswith(b"HTTP/1.1 200"), "stream %d: %r" % (i, bufs[i][:200]))
                pending.discard(i)
        peak = max(peak, status_field(pid, "Threads"))
    check(not pending, "%d of %d streams got no head in 120 s" % (len(pending), n))
    time.sleep(0.5)
    peak = max(peak, status_field(pid, "Threads"))
    check(peak <= THREAD_BOUND, "serve held %d threads with %d open streams (bound %d)"
          % (peak, n, THREAD_BOUND))
    for sid in sids:
        code, _, err = tp.run_in(s, sid, "touch /tmp/gate")
        check(code == 0, "gate: %r" % err)
    open_ = set(range(n))
    deadline = time.time() + 120
    while open_ and time.time() < deadline:
        ready, _, _ = select.select([socks[i] for i in open_], [], [], 0.5)
        for c in ready:
            i = socks.index(c)
            chunk = c.recv(65536)
            if chunk:
                bufs[i] += chunk
            else:
                open_.discard(i)
                c.close()
    check(not open_, "%d streams did not end in 120 s" % len(open_))
    for i in range(n):
        _, body = dechunk(bufs[i])
        out, ended = stdout_of(body)
        check(ended and out == b"done-%d\n" % i, "stream %d: ended %r, stdout %r" % (i, ended, out[:80]))
    ctx["peak_threads"] = peak
    print("     %d streams open at once: serve peak %d threads" % (n, peak))


def t_slow_reader(s, ctx):
    sid = ctx["sids"][0]
    pid = s.proc.pid
    size = 48 << 20
    c = socket.create_connection(("127.0.0.1", s.port), timeout=60)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    c.sendall(start_request(sid, "head -c %d /dev/zero" % size))
    raw = b""
    while b"\r\n\r\n" not in raw:
        chunk = c.recv(65536)
        check(chunk, "closed before the head")
        raw += chunk
    parts = [raw]
    rss0 = status_field(pid, "VmRSS")
    end = time.time() + 3
    grown = 0
    while time.time() < end:
        parts.append(c.recv(65536))
        time.sleep(0.2)
        grown = max(grown, status_field(pid, "VmRSS") - rss0)
    check(grown < 16 << 10, "serve's RSS grew by %d KiB behind a slow reader" % grown)
    t0 = time.time()
    while True:
        chunk = c.recv(1 << 20)
        if not chunk:
            break
        parts.append(chunk)
    took = time.time() - t0
    c.close()
    _, body = dechunk(b"".join(parts))
    out, ended = stdout_of(body)
    check(ended and len(out) == size and out.count(0) == size,
          "slow reader got %d of %d bytes (ended %r)" % (len(out), size, ended))
    print("     slow reader: serve RSS grew %d KiB; then %.1f MiB of stdout in %.2f s"
          % (grown, size / 1048576.0, took))


def t_client_gone(s, ctx):
    sid = ctx["sids"][0]
    pid = s.proc.pid
    time.sleep(0.3)
    before = nfds(pid)
    socks = []
    for _ in range(20):
        c = socket.create_connection(("127.0.0.1", s.port), timeout=30)
        c.sendall(start_request(sid, "sleep 60"))
        raw = b""
        while b"\r\n\r\n" not in raw:
            chunk = c.recv(65536)
            check(chunk, "closed before the head")
            raw += chunk
        socks.append(c)
    during = nfds(pid)
    check(during >= before + 20, "20 open streams hold no fds? %d then %d" % (before, during))
    for c in socks:
        c.close()
    deadline = time.time() + 6
    while nfds(pid) > before and time.time() < deadline:
        time.sleep(0.2)
    check(nfds(pid) <= before, "fds %d before, %d with 20 streams, %d 6 s after their clients left"
          % (before, during, nfds(pid)))


def main():
    args = sys.argv[1:]
    streams = STREAMS
    if "--streams" in args:
        streams = int(args[args.index("--streams") + 1])
    s = tp.start_for_checks("memory")
    if isinstance(s, int):
        return s
    ctx = {"streams": streams, "sids": []}
    try:
        for _ in range(3):
            st, _, j = s.create(timeout=300)
            check(st == 201, "create: %d %r" % (st, j))
            ctx["sids"].append(j["sandboxID"])
        failed = tp.run_checks(s, ctx, [t_many_streams, t_slow_reader, t_client_gone])
        for sid in ctx["sids"]:
            s.request("DELETE", "/sandboxes/" + sid)
    except Exception:
        s.stop()
        raise
    return tp.stop_and_sum(s, failed)


if __name__ == "__main__":
    sys.exit(main())
