#!/usr/bin/env python3
"""Load test for `abxlua serve` (issue 5, item 9): the local platform holds 200 live sandboxes and
2,000 concurrent commands with no error and no lost output.

Usage: platform_load.py [path/to/abxlua] [--sandboxes N] [--per-sandbox K] [--create-parallel P]
                        [--timeout SECONDS] [--keep-nofile]

1. Starts `abxlua serve --port 0 --ready-fd N` (RLIMIT_NOFILE raised to the hard limit, capped at
   65536, in this process and in serve, unless --keep-nofile).
2. Creates N sandboxes, P at a time; prints create latency p50/p95/max and the total.
3. Lists them through GET /v2/sandboxes paging: exactly those N, all "running".
4. Starts N*K commands at once (process.Process/Start through the ingress, E2b-Sandbox-* headers),
   each on its own connection. Every command first waits at a gate (a file in its sandbox that does
   not exist yet), so all N*K are running at the same time by construction: the gate opens only once
   every command's start event has arrived. Then each prints 64 KiB of random data as one base64
   line, "done-<n>", and the sha256 of that line computed inside the sandbox. Every stream is read to
   its end-stream envelope; each command must exit 0 with empty stderr and exactly that output
   (length, marker, checksum recomputed here).
5. Kills every sandbox (DELETE), checks the list is empty, stops serve with SIGTERM (exit 0) and
   checks nothing is left: no process under the sandboxes' bwrap, no mount below the state dir, no
   state dir, no cgroup of this serve.

Prints create latency, wall times, commands/s, peak serve RSS (VmHWM) and threads, peak serve fds,
peak host memory in use and peak host process count (sampled from /proc). Every wait is bounded
(--timeout, default 900 s, for the whole run). Exit 0 = pass, 1 = fail, 77 = skipped (not root).
"""
import asyncio
import base64
import hashlib
import json
import os
import resource
import signal
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../platform"))
import test_platform as tp  # noqa: E402  (sandbox_pids, alive, mounts_under)

ENVD_PORT = 49983
DATA_BYTES = 65536
B64_LEN = (DATA_BYTES + 2) // 3 * 4


def parse_args(argv):
    opts = {"bin": os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../build/abxlua"),
            "sandboxes": 200, "per_sandbox": 10, "create_parallel": 16, "timeout": 900.0,
            "keep_nofile": False}
    it = iter(argv)
    for a in it:
        if a == "--sandboxes":
            opts["sandboxes"] = int(next(it))
        elif a == "--per-sandbox":
            opts["per_sandbox"] = int(next(it))
        elif a == "--create-parallel":
            opts["create_parallel"] = int(next(it))
        elif a == "--timeout":
            opts["timeout"] = float(next(it))
        elif a == "--keep-nofile":
            opts["keep_nofile"] = True
        elif a.startswith("-"):
            raise SystemExit("unknown option " + a)
        else:
            opts["bin"] = a
    return opts


class Fail(Exception):
    pass


# ---- minimal asyncio HTTP/1.1 client (one connection per request, Connection: close) ------------

class Http:
    def __init__(self, port, key):
        self.port, self.key = port, key

    async def open(self, method, path, body=b"", headers=None, key=True):
        """Send a request; return (status, headers dict lower-cased, reader, writer)."""
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port, limit=1 << 20)
        h = {"Host": "127.0.0.1:%d" % self.port, "Connection": "close",
             "Content-Length": str(len(body))}
        if key:
            h["X-API-Key"] = self.key
        h.update(headers or {})
        head = "%s %s HTTP/1.1\r\n" % (method, path) + "".join("%s: %s\r\n" % kv for kv in h.items())
        writer.write(head.encode() + b"\r\n" + body)
        await writer.drain()
        line = await reader.readline()
        if not line:
            writer.close()
            raise ConnectionError("connection closed before the status line")
        parts = line.decode("latin-1").split(None, 2)
        status = int(parts[1])
        hd = {}
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            k, _, v = line.decode("latin-1").partition(":")
            hd[k.strip().lower()] = v.strip()
        return status, hd, reader, writer

    @staticmethod
    async def body_chunks(hd, reader):
        """Yield the body as it arrives (chunked, Content-Length or until close)."""
        if hd.get("transfer-encoding", "").lower() == "chunked":
            while True:
                line = await reader.readline()
                if not line:
                    raise ConnectionError("chunked body cut before the last chunk")
                n = int(line.split(b";")[0].strip() or b"0", 16)
                if n == 0:
                    while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                        pass
                    return
                data = await reader.readexactly(n)
                await reader.readexactly(2)
                yield data
        elif "content-length" in hd:
            left = int(hd["content-length"])
            while left > 0:
                data = await reader.read(min(left, 1 << 16))
                if not data:
                    raise ConnectionError("body cut: %d bytes missing" % left)
                left -= len(data)
                yield data
        else:
            while True:
                data = await reader.read(1 << 16)
                if not data:
                    return
                yield data

    async def request(self, method, path, body=None, **kw):
        raw = b"" if body is None else json.dumps(body).encode()
        hdrs = {"Content-Type": "application/json"} if body is not None else {}
        status, hd, reader, writer = await self.open(method, path, raw, hdrs, **kw)
        try:
            data = b"".join([c async for c in self.body_chunks(hd, reader)])
        finally:
            writer.close()
        try:
            j = json.loads(data) if data else None
        except ValueError:
            j = data
        return status, hd, j


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


# ---- /proc sampling ------------------------------------------------------------------------------

def meminfo():
    m = {}
    with open("/proc/meminfo") as f:
        for line in f:
            k, v = line.split(":", 1)
            m[k] = int(v.split()[0])
    return m


def proc_status(pid):
    """VmRSS, VmHWM (KiB) and Threads of pid from /proc/PID/status; {} when it is gone."""
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM", "Threads"):
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def fd_count(pid):
    """Open fds of pid (/proc/PID/fd); 0 when it is gone."""
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return 0


class Sampler:
    def __init__(self, pid):
        self.pid = pid
        self.peak = {"VmHWM": 0, "VmRSS": 0, "Threads": 0, "fds": 0, "host_used_kb": 0, "procs": 0}
        self.base_used = self.host_used()
        self.n = 0

    @staticmethod
    def host_used():
        m = meminfo()
        return m["MemTotal"] - m["MemAvailable"]

    def sample(self):
        self.n += 1
        for k, v in proc_status(self.pid).items():
            self.peak[k] = max(self.peak[k], v)
        self.peak["fds"] = max(self.peak["fds"], fd_count(self.pid))
        self.peak["host_used_kb"] = max(self.peak["host_used_kb"], self.host_used())
        if self.n % 4 == 0:
            self.peak["procs"] = max(self.peak["procs"], sum(1 for d in os.listdir("/proc") if d.isdigit()))

    async def run(self):
        while True:
            self.sample()
            await asyncio.sleep(0.25)


# ---- leftovers -----------------------------------------------------------------------------------

def live_sandbox_pids(state_dir):
    return [p for p in tp.sandbox_pids(state_dir) if tp.alive(p)]


def cgroup_dirs(pid):
    """This serve's cgroup directories (…/abxlua/serve.<pid>) in each v1 hierarchy it uses."""
    dirs = []
    try:
        with open("/proc/%d/cgroup" % pid) as f:
            lines = f.read().splitlines()
    except OSError:
        return dirs
    for line in lines:
        _, ctl, path = line.split(":", 2)
        for h in ctl.split(","):
            if h in ("freezer", "memory", "cpuacct", "cpu"):
                base = "/sys/fs/cgroup/%s%s" % (h, "" if path == "/" else path)
                dirs.append(os.path.join(base, "abxlua", "serve.%d" % pid))
    return dirs


def cpu_seconds(pid):
    """CPU time used so far (user + system, seconds) by serve itself, by every sandbox of this
    serve (the cpuacct group abxlua/serve.<pid> holds each sandbox's envd and commands) and by
    this client; tells which side a slow phase spends its time in."""
    out = {"serve": 0.0, "sandboxes": 0.0, "client": 0.0}
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        out["serve"] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        pass
    for d in cgroup_dirs(pid):
        if "/cpuacct" in d:
            try:
                with open(os.path.join(d, "cpuacct.usage")) as f:
                    out["sandboxes"] = int(f.read()) / 1e9
            except (OSError, ValueError):
                pass
    ru = resource.getrusage(resource.RUSAGE_SELF)
    out["client"] = ru.ru_utime + ru.ru_stime
    return out


def cpu_delta(a, b):
    return "serve %.1fs, sandboxes %.1fs, this client %.1fs" % tuple(
        b[k] - a[k] for k in ("serve", "sandboxes", "client"))


def fd_limit(pid):
    try:
        with open("/proc/%d/limits" % pid) as f:
            for line in f:
                if line.startswith("Max open files"):
                    return line.split()[3]
    except OSError:
        pass
    return "?"


# ---- the run -------------------------------------------------------------------------------------

def command_text(n, gate_max):
    # The gate: wait without forking (read -t on a FIFO opened read-write) until /tmp/abx-load-go
    # exists; the test creates it once every command has started, then writes one line per
    # command into the FIFO, which wakes every waiting read at once (release_text). The read
    # times out every 10 s only as a fallback: at `read -t 1`, 2,000 waiting shells woke 2,000
    # times a second, about 0.45 ms of CPU each on this machine, which alone took half of the
    # 2 cores while the commands were starting. A command whose gate is never opened (the
    # release failed) goes on after gate_max seconds, so a failing run still ends.
    return ("mkfifo /tmp/abx-load-gate 2>/dev/null; "
            "until [ -e /tmp/abx-load-go ] || [ $SECONDS -ge %d ]; do read -t 10 <> /tmp/abx-load-gate; done; "
            "d=$(head -c %d /dev/urandom | base64 -w0); "
            "printf '%%s\\ndone-%d\\n' \"$d\"; printf %%s \"$d\" | sha256sum" % (gate_max, DATA_BYTES, n))


def release_text(per_sandbox):
    # Open the gate (see command_text): the marker file first, so a shell between two reads sees
    # it, then a line per waiting command; opening the FIFO read-write never blocks.
    return (": > /tmp/abx-load-go; exec 3<> /tmp/abx-load-gate; "
            "for ((i = 0; i < %d; i++)); do echo >&3; done; exec 3>&-" % per_sandbox)


def start_body(cmd):
    msg = json.dumps({"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}}).encode()
    return b"\x00" + struct.pack(">I", len(msg)) + msg


async def run_stream(http, sid, cmd, on_start=None, user="user"):
    """process.Process/Start through the ingress; returns (exit_code, stdout, stderr, events)."""
    body = start_body(cmd)
    status, hd, reader, writer = await http.open(
        "POST", "/process.Process/Start", body,
        {"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1",
         "E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": str(ENVD_PORT),
         "Authorization": "Basic " + base64.b64encode((user + ":").encode()).decode()}, key=False)
    out, err, code, ended, buf = [], [], None, False, b""
    t_start = t_end = None
    try:
        if status != 200:
            data = b"".join([c async for c in http.body_chunks(hd, reader)])
            raise Fail("Start answered %d: %r" % (status, data[:300]))
        async for chunk in http.body_chunks(hd, reader):
            buf += chunk
            while len(buf) >= 5:
                flags, n = struct.unpack(">BI", buf[:5])
                if len(buf) < 5 + n:
                    break
                payload = json.loads(buf[5:5 + n] or b"{}")
                buf = buf[5 + n:]
                if flags & 2:
                    if "error" in payload:
                        raise Fail("stream error: %r" % payload)
                    ended = True
                    continue
                ev = payload.get("event", {})
                if "start" in ev:
                    t_start = time.monotonic()
                    if on_start:
                        on_start()
                if "data" in ev:
                    out.append(base64.b64decode(ev["data"].get("stdout", "")))
                    err.append(base64.b64decode(ev["data"].get("stderr", "")))
                if "end" in ev:
                    t_end = time.monotonic()
                    code = ev["end"].get("exitCode", 0)
        if buf:
            raise Fail("%d trailing bytes after the last envelope" % len(buf))
        if not ended:
            raise Fail("stream ended without an end-stream envelope")
    finally:
        writer.close()
    return code, b"".join(out), b"".join(err), (t_start, t_end)


def verify_output(n, code, out, err):
    if code != 0:
        return "exit code %r, stderr %r" % (code, err[:200])
    if err:
        return "stderr %r" % err[:200]
    lines = out.split(b"\n")
    if len(lines) != 4 or lines[3] != b"":
        return "%d bytes of stdout in %d lines (want 3 lines)" % (len(out), len(lines) - 1)
    data, marker, sha = lines[0], lines[1], lines[2]
    if len(data) != B64_LEN:
        return "data line has %d bytes, want %d" % (len(data), B64_LEN)
    if marker != b"done-%d" % n:
        return "marker %r" % marker[:40]
    want = hashlib.sha256(data).hexdigest().encode() + b"  -"
    if sha != want:
        return "checksum mismatch: sandbox %r, here %r" % (sha[:70], want[:70])
    try:
        if len(base64.b64decode(data, validate=True)) != DATA_BYTES:
            return "data does not decode to %d bytes" % DATA_BYTES
    except ValueError as e:
        return "data is not base64: %s" % e
    return None


async def scenario(opts, http, serve, sampler, report, errors):
    nsb, per = opts["sandboxes"], opts["per_sandbox"]
    ncmd = nsb * per

    # 1. create
    sem = asyncio.Semaphore(opts["create_parallel"])
    lat, sids = [], []

    async def create(i):
        async with sem:
            t0 = time.monotonic()
            try:
                st, _, j = await http.request("POST", "/sandboxes", {
                    "templateID": "base", "timeout": int(opts["timeout"]) + 600,
                    "metadata": {"load": str(i)}})
            except (OSError, ConnectionError, asyncio.IncompleteReadError) as e:
                errors.append("create %d: %s: %s" % (i, type(e).__name__, e))
                return
            dt = time.monotonic() - t0
            if st != 201 or not isinstance(j, dict) or "sandboxID" not in j:
                errors.append("create %d: %d %r" % (i, st, j if not isinstance(j, bytes) else j[:200]))
                return
            lat.append(dt)
            sids.append(j["sandboxID"])

    t0 = time.monotonic()
    await asyncio.gather(*(create(i) for i in range(nsb)))
    report["create_total_s"] = time.monotonic() - t0
    report["created"] = len(sids)
    report["create_p50_s"], report["create_p95_s"] = pct(lat, 50), pct(lat, 95)
    report["create_max_s"] = max(lat) if lat else float("nan")
    print("create: %d/%d sandboxes in %.1fs (%d at a time); latency p50 %.2fs p95 %.2fs max %.2fs"
          % (len(sids), nsb, report["create_total_s"], opts["create_parallel"], report["create_p50_s"],
             report["create_p95_s"], report["create_max_s"]), flush=True)
    if len(sids) != nsb:
        raise Fail("%d of %d creates failed (first: %s)" % (nsb - len(sids), nsb, errors[:3]))

    # 2. list, paging
    listed, states, token, pages = [], set(), None, 0
    while True:
        path = "/v2/sandboxes?limit=100" + ("&nextToken=" + urllib.parse.quote(token) if token else "")
        st, hd, j = await http.request("GET", path)
        if st != 200 or not isinstance(j, list):
            raise Fail("list page %d: %d %r" % (pages, st, j))
        listed += [x["sandboxID"] for x in j]
        states |= {x.get("state") for x in j}
        pages += 1
        token = hd.get("x-next-token")
        if not token or pages > nsb:
            break
    if sorted(listed) != sorted(sids) or states != {"running"}:
        raise Fail("list: %d ids in %d pages (%d expected, %d distinct, %d missing), states %r"
                   % (len(listed), pages, nsb, len(set(listed)), len(set(sids) - set(listed)), states))
    print("list: %d running sandboxes in %d pages" % (len(listed), pages), flush=True)

    # 3. commands: all started before any finishes (gate), every output checked
    started = [0]
    all_started = asyncio.Event()
    gate_open = [None]

    def on_start():
        started[0] += 1
        if started[0] == ncmd:
            all_started.set()

    results = [None] * ncmd
    times = [None] * ncmd

    async def command(i):
        sid = sids[i % nsb]
        try:
            code, out, err, tt = await run_stream(http, sid, command_text(i, gate_max), on_start)
            times[i] = tt
            results[i] = verify_output(i, code, out, err)
        except (Fail, OSError, ConnectionError, asyncio.IncompleteReadError, ValueError) as e:
            results[i] = "%s: %s" % (type(e).__name__, e)

    # the gate opens when every command has started, or when the ones that did not start have
    # failed, or at start_deadline; commands open their own gate a minute later at the latest
    start_window = max(120.0, opts["timeout"] / 5)
    gate_max = int(start_window) + 30
    t_cmd0 = time.monotonic()
    cpu0 = cpu_seconds(serve.proc.pid)
    tasks = [asyncio.ensure_future(command(i)) for i in range(ncmd)]

    async def progress():
        while True:
            await asyncio.sleep(15)
            done = [i for i, t in enumerate(tasks) if t.done()]
            print("  %.0fs: %d started, %d finished (%d failed); serve %d threads, %d fds"
                  % (time.monotonic() - t_cmd0, started[0], len(done), sum(1 for i in done if results[i]),
                     sampler.peak["Threads"], sampler.peak["fds"]), flush=True)

    prog = asyncio.ensure_future(progress())
    start_deadline = t_cmd0 + start_window
    while not all_started.is_set() and time.monotonic() < start_deadline:
        failed_early = sum(1 for t in tasks if t.done())
        if started[0] + failed_early >= ncmd:
            break
        try:
            await asyncio.wait_for(all_started.wait(), 1.0)
        except asyncio.TimeoutError:
            pass
    t_all_started = time.monotonic()
    report["commands_started"] = started[0]
    report["start_all_s"] = t_all_started - t_cmd0
    print("commands: %d/%d started (all running at once) %.1fs after the first request"
          % (started[0], ncmd, report["start_all_s"]), flush=True)
    cpu1 = cpu_seconds(serve.proc.pid)
    print("cpu while starting: %s" % cpu_delta(cpu0, cpu1), flush=True)
    if started[0] != ncmd:
        done_err = [results[i] for i, t in enumerate(tasks) if t.done() and results[i]]
        errors.append("only %d of %d commands started (waited up to %.0fs); %d failed before starting, e.g. %s"
                      % (started[0], ncmd, start_window, len(done_err), done_err[:2]))

    gate_open[0] = time.monotonic()
    rsem = asyncio.Semaphore(50)
    gate_errors = []

    async def release(sid):
        async with rsem:
            try:
                code, _, err, _ = await run_stream(http, sid, release_text(per))
                if code != 0:
                    gate_errors.append("%s: exit %r %r" % (sid, code, err[:200]))
            except (Fail, OSError, ConnectionError, asyncio.IncompleteReadError, ValueError) as e:
                gate_errors.append("%s: %s: %s" % (sid, type(e).__name__, e))

    await asyncio.gather(*(release(s) for s in sids))
    if gate_errors:
        errors.append("opening the gate failed in %d of %d sandboxes (their commands opened it "
                      "themselves after %ds), e.g. %s" % (len(gate_errors), nsb, gate_max, gate_errors[0]))
    await asyncio.gather(*tasks)
    prog.cancel()
    t_cmd1 = time.monotonic()
    report["commands_wall_s"] = t_cmd1 - t_cmd0
    report["after_gate_s"] = t_cmd1 - gate_open[0]
    bad = [(i, r) for i, r in enumerate(results) if r]
    ok = ncmd - len(bad)
    ends_before_gate = sum(1 for t in times if t and t[1] is not None and t[1] < gate_open[0])
    report["commands_ok"] = ok
    report["commands_per_s"] = ok / report["after_gate_s"] if report["after_gate_s"] > 0 else 0
    print("commands: %d/%d exit 0 with complete, intact output (%d KiB each); %.1fs in all, %.1fs "
          "from gate to last end, %.0f commands/s after the gate"
          % (ok, ncmd, B64_LEN // 1024, report["commands_wall_s"], report["after_gate_s"],
             report["commands_per_s"]), flush=True)
    print("cpu after the gate: %s" % cpu_delta(cpu1, cpu_seconds(serve.proc.pid)), flush=True)
    if ends_before_gate:
        errors.append("%d commands ended before the gate opened" % ends_before_gate)
    if bad:
        kinds = {}
        for i, r in bad:
            k = r.split(":")[0][:60]
            kinds.setdefault(k, []).append(i)
        for k, idx in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
            errors.append("%d commands failed with %s (e.g. #%d: %s)" % (len(idx), k, idx[0], results[idx[0]][:300]))

    # 4. kill everything
    ksem = asyncio.Semaphore(opts["create_parallel"])
    kill_fail = []

    async def kill(sid):
        async with ksem:
            try:
                st, _, j = await http.request("DELETE", "/sandboxes/" + sid)
                if st != 204:
                    kill_fail.append("%s: %d %r" % (sid, st, j))
            except (OSError, ConnectionError, asyncio.IncompleteReadError) as e:
                kill_fail.append("%s: %s" % (sid, e))

    t0 = time.monotonic()
    await asyncio.gather(*(kill(s) for s in sids))
    report["kill_total_s"] = time.monotonic() - t0
    print("kill: %d sandboxes in %.1fs" % (len(sids) - len(kill_fail), report["kill_total_s"]), flush=True)
    if kill_fail:
        errors.append("%d kills failed, e.g. %s" % (len(kill_fail), kill_fail[:3]))
    st, _, j = await http.request("GET", "/v2/sandboxes")
    if st != 200 or j != []:
        errors.append("list after kill: %d %r" % (st, j if not isinstance(j, list) else len(j)))


class Serve:
    def __init__(self, binary, nofile):
        r, w = os.pipe()
        self.log = tempfile.TemporaryFile()
        env = dict(os.environ)
        env.pop("ABX_LOCAL_API_KEY", None)

        def pre():
            if nofile:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self.proc = subprocess.Popen([binary, "serve", "--port", "0", "--ready-fd", str(w)],
                                     pass_fds=(w,), env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     preexec_fn=pre)
        os.close(w)
        data, deadline = b"", time.time() + 20
        while not data.endswith(b"\n") and time.time() < deadline:
            chunk = os.read(r, 4096)
            if not chunk:
                break
            data += chunk
        os.close(r)
        if not data:
            self.proc.kill()
            self.proc.wait()
            raise Fail("serve did not write its ready line: %r" % self.log_tail())
        ready = json.loads(data)
        self.port, self.key = ready["port"], ready["api_key"]
        self.state_dir = os.path.join(os.environ.get("TMPDIR") or "/tmp", "abxlua-serve.%d" % self.proc.pid)
        self.cgroups = cgroup_dirs(self.proc.pid)

    def log_tail(self, n=3000):
        self.log.seek(0)
        return self.log.read()[-n:].decode(errors="replace")

    def log_summary(self, top=15):
        import re
        self.log.seek(0)
        counts = {}
        for line in self.log.read().decode(errors="replace").splitlines():
            key = re.sub(r"\d+", "N", re.sub(r"\bi[a-z0-9]{20}\b", "<id>", line))[:200]
            counts[key] = counts.get(key, 0) + 1
        return sorted(counts.items(), key=lambda kv: -kv[1])[:top]

    def stop(self, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return "killed after %ds" % timeout
        return self.proc.returncode


def main():
    opts = parse_args(sys.argv[1:])
    if os.geteuid() != 0:
        print("SKIP: abxlua serve needs root (bubblewrap namespaces, cgroups)")
        return 77
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    nofile = None
    if not opts["keep_nofile"]:
        nofile = min(hard, 65536) if hard != resource.RLIM_INFINITY else 65536
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, nofile), hard))
    ncmd = opts["sandboxes"] * opts["per_sandbox"]
    print("platform load: %d sandboxes, %d concurrent commands, %d cores, RLIMIT_NOFILE %s"
          % (opts["sandboxes"], ncmd, os.cpu_count(), nofile or "%d (unchanged)" % soft), flush=True)

    t_begin = time.monotonic()
    serve = Serve(opts["bin"], nofile)
    print("serve: pid %d, port %d, open files limit %s" % (serve.proc.pid, serve.port, fd_limit(serve.proc.pid)),
          flush=True)
    sampler = Sampler(serve.proc.pid)
    report, errors = {}, []
    http = Http(serve.port, serve.key)

    async def go():
        st = asyncio.ensure_future(sampler.run())
        try:
            await asyncio.wait_for(scenario(opts, http, serve, sampler, report, errors),
                                   opts["timeout"] - 90)
        finally:
            st.cancel()

    # a last resort in case the event loop itself is stuck
    def on_alarm(*_):
        print("FAIL: global timeout of %.0fs reached; serve log tail:\n%s" % (opts["timeout"], serve.log_tail()))
        serve.proc.kill()
        os._exit(1)

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(int(opts["timeout"]))
    try:
        asyncio.run(go())
    except asyncio.TimeoutError:
        errors.append("scenario did not finish within %.0fs" % (opts["timeout"] - 90))
    except Fail as e:
        errors.append(str(e))
    sampler.sample()

    alive_before = live_sandbox_pids(serve.state_dir)
    rc = serve.stop()
    report["total_s"] = time.monotonic() - t_begin
    if rc != 0:
        errors.append("serve exit %r" % (rc,))
    # leftovers (processes may take a moment to be reaped by init)
    deadline = time.time() + 10
    while True:
        procs = live_sandbox_pids(serve.state_dir)
        mnts = tp.mounts_under(serve.state_dir)
        cgs = [d for d in serve.cgroups if os.path.exists(d)]
        state = os.path.exists(serve.state_dir)
        if not (procs or mnts or cgs or state) or time.time() > deadline:
            break
        time.sleep(0.5)
    if procs:
        errors.append("%d sandbox processes left after serve stopped (e.g. %s)" % (len(procs), sorted(procs)[:5]))
    if mnts:
        errors.append("%d mounts left under %s (e.g. %s)" % (len(mnts), serve.state_dir, mnts[:3]))
    if cgs:
        errors.append("cgroups left: %s" % cgs[:3])
    if state:
        errors.append("state dir left: %s" % serve.state_dir)
    p = sampler.peak
    print("serve: peak RSS (VmHWM) %.1f MiB, peak threads %d, peak open fds %d; sandbox processes "
          "alive at the end before SIGTERM: %d"
          % (p["VmHWM"] / 1024.0, p["Threads"], p["fds"], len(alive_before)))
    print("host: peak memory in use %.0f MiB (%.0f MiB above the %.0f MiB before serve started), "
          "peak processes %d" % (p["host_used_kb"] / 1024.0, (p["host_used_kb"] - sampler.base_used) / 1024.0,
                                 sampler.base_used / 1024.0, p["procs"]))
    print("total wall time %.1fs" % report["total_s"])
    if errors:
        for e in errors:
            print("FAIL: " + e)
        print("serve log, distinct lines (ids masked) with counts:")
        for line, n in serve.log_summary():
            print("  %6d  %s" % (n, line))
        return 1
    print("platform_load: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
