"""Processes of tests/bench/bench.py: the serve it starts, each way's child (waited with os.wait4 for
its ru_maxrss), serve's threads, RSS and fds sampled from /proc, and the platform-at-scale watch
(idle envd RSS and idle CPU per stream between the scenario's phase marks)."""
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../load"))
import platform_load  # noqa: E402  (cgroup_dirs, cpu_seconds, proc_status, fd_count: /proc of serve)
from platform_load import fd_count, proc_status  # noqa: E402
import test_platform as tp  # noqa: E402  (mounts_under), on the path through platform_load


def which(tool):
    return shutil.which(tool)


def raise_nofile():
    """RLIMIT_NOFILE to the hard limit (at most 65536) for this process and its children: 2,000
    streams need more than the usual 1,024 on both sides."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def remove_tree(d):
    """Removes the work dir unless something is still mounted below it (a sandbox root serve did
    not unmount: removing through it could reach the host's files)."""
    if tp.mounts_under(d):
        print("# left %s: mounts below it remain" % d, file=sys.stderr)
        return
    shutil.rmtree(d, ignore_errors=True)


def meta(opts, jobs):
    def out(argv, cwd=None):
        try:
            return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    return {"abxlua": opts["abxlua"], "abxlua_version": out([opts["abxlua"], "--version"]),
            "checkout": out(["git", "rev-parse", "--short", "HEAD"], HERE), "rounds": opts["rounds"],
            "quick": opts["quick"], "jobs": jobs, "cores": os.cpu_count(),
            "loadavg_start": os.getloadavg()[0], "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}


def run_child(argv, cwd, env, log, timeout, poll=None):
    """Runs argv with stdout+stderr to `log`, waits with os.wait4, kills its process group after
    `timeout` s; poll() is called every 0.1 s while it runs. Returns {status (0 ok), how, wall_s,
    maxrss_kb, log, tail}.
    maxrss_kb is the child's ru_maxrss as GNU time (Debian's `time`, from scripts/deps.sh) reports
    it from its own wait4: a child forked straight from this Python process would count this
    process's resident pages (copied at fork, before its exec) in its peak, about 28 MiB, more than
    the floor client uses. Without /usr/bin/time, this process's own wait4 figure is used."""
    rss_file = log + ".maxrss"
    if os.access("/usr/bin/time", os.X_OK):
        argv = ["/usr/bin/time", "-o", rss_file, "-f", "%M"] + list(argv)
    with open(log, "ab") as lf:
        lf.write(("$ (cd %s && %s)\n" % (cwd, " ".join(argv))).encode())
        lf.flush()
        t0 = time.monotonic()
        p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=lf, stderr=subprocess.STDOUT, start_new_session=True)
        killed = False
        while True:
            pid, st, ru = os.wait4(p.pid, os.WNOHANG)
            if pid == p.pid:
                break
            if poll:
                poll()
            if time.monotonic() - t0 > timeout and not killed:
                os.killpg(p.pid, signal.SIGKILL)
                killed = True
            time.sleep(0.02 if time.monotonic() - t0 < 2 else 0.1)
        wall = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(st)
    maxrss = ru.ru_maxrss
    if argv[0] == "/usr/bin/time":
        try:
            with open(rss_file) as f:
                maxrss = int(f.read().split()[-1])
        except (OSError, ValueError, IndexError):
            maxrss = 0
    how = ("killed after the %ds timeout" % timeout if killed else
           "exit %d" % p.returncode if p.returncode >= 0 else "signal %d" % -p.returncode)
    with open(log, "rb") as f:
        f.seek(max(0, os.path.getsize(log) - 1500))
        tail = f.read().decode(errors="replace").strip().replace("\n", " | ")
    return {"status": 0 if (p.returncode == 0 and not killed) else 1, "how": how, "wall_s": wall,
            "maxrss_kb": maxrss, "log": log, "tail": tail}


class Serve:
    """`abxlua serve --port 0 --ready-fd N --state-dir DIR` and a sampler of its /proc entries."""

    def __init__(self, binary, state_dir, log):
        self.binary, self.state_dir = binary, state_dir
        r, w = os.pipe()
        env = {k: v for k, v in os.environ.items() if k != "ABX_LOCAL_API_KEY"}
        self.logf = open(log, "wb")
        self.proc = subprocess.Popen([binary, "serve", "--port", "0", "--ready-fd", str(w), "--state-dir", state_dir],
                                     pass_fds=(w,), env=env, stdout=self.logf, stderr=subprocess.STDOUT)
        os.close(w)
        data, deadline = b"", time.time() + 30
        while not data.endswith(b"\n") and time.time() < deadline:
            chunk = os.read(r, 4096)
            if not chunk:
                break
            data += chunk
        os.close(r)
        if not data:
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("abxlua serve wrote no ready line; see %s" % log)
        ready = json.loads(data)
        self.url, self.key, self.domain = ready["url"], ready["api_key"], ready.get("domain", "localhost")
        self.pid = self.proc.pid
        self.peak = {"rss_kb": 0, "threads": 0, "fds": 0}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._sample_loop, daemon=True)
        self._thread.start()

    def _sample_loop(self):
        while not self._stop.wait(0.2):
            self.sample()

    def sample(self):
        st, fds = proc_status(self.pid), fd_count(self.pid)
        with self._lock:
            self.peak["rss_kb"] = max(self.peak["rss_kb"], st.get("VmRSS", 0))
            self.peak["threads"] = max(self.peak["threads"], st.get("Threads", 0))
            self.peak["fds"] = max(self.peak["fds"], fds)

    def reset_peak(self):
        """Peaks from now on: the sampled ones, and VmHWM through /proc/PID/clear_refs ("5")."""
        try:
            with open("/proc/%d/clear_refs" % self.pid, "w") as f:
                f.write("5")
        except OSError:
            pass
        with self._lock:
            self.peak = {"rss_kb": 0, "threads": 0, "fds": 0}
        self.sample()

    def peak_rss_mib(self):
        self.sample()
        with self._lock:
            return max(self.peak["rss_kb"], proc_status(self.pid).get("VmHWM", 0)) / 1024.0

    def api(self, method, path):
        req = urllib.request.Request(self.url + path, method=method, headers={"X-API-Key": self.key})
        with urllib.request.urlopen(req, timeout=60) as resp:
            data = resp.read()
            return json.loads(data) if data else None

    def kill_leftovers(self):
        """Kills every sandbox still listed (a failed way must not load the next one); returns how many."""
        try:
            n = 0
            for _ in range(100):
                left = self.api("GET", "/v2/sandboxes?limit=100") or []
                if not left:
                    break
                for s in left:
                    self.api("DELETE", "/sandboxes/" + s["sandboxID"])
                n += len(left)
            return n
        except (OSError, ValueError) as e:
            print("# listing serve's sandboxes failed: %s" % e, file=sys.stderr)
            return 0

    def stop(self, timeout=60):
        self._stop.set()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return "killed after %ds" % timeout
        self.logf.close()
        return self.proc.returncode


def descendants(root):
    """{pid: (ppid, cmdline)} of every process below root."""
    procs = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            procs[int(d)] = (int(st[st.rindex(")") + 2:].split()[1]), cmd)
        except (OSError, ValueError):
            pass
    kids = {}
    for pid, (ppid, _) in procs.items():
        kids.setdefault(ppid, []).append(pid)
    out, queue = {}, [root]
    while queue:
        for c in kids.get(queue.pop(), []):
            out[c] = procs[c]
            queue.append(c)
    return out


def pss_kb(pid):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def envd_rss_per_sandbox(serve_pid):
    """(RSS, PSS) in KiB of each sandbox's envd: the sums over the `abxlua envd` processes below
    each of serve's direct bwrap children (envd and its helper; the commands it runs are not
    counted). RSS counts the shared pages (the binary's text) in full; PSS divides them."""
    procs = descendants(serve_pid)
    sums = {}
    for pid, (ppid, cmd) in procs.items():
        if " envd " not in cmd + " ":
            continue
        top = pid
        while procs.get(top, (serve_pid,))[0] != serve_pid:
            top = procs[top][0]
        r, p = sums.get(top, (0, 0))
        sums[top] = (r + proc_status(pid).get("VmRSS", 0), p + pss_kb(pid))
    return list(sums.values())


class ScaleWatch:
    """Follows the scale job's phase file (bench.lua `phase`): between "idle" and "release" every
    stream is open and waiting; measures CPU (serve + its sandboxes' cpuacct group) over that
    window (from SETTLE s after "idle": the commands' shells are still starting before) and each
    sandbox's envd RSS once in it."""

    SETTLE = 2.0

    def __init__(self, serve, phase_file, streams):
        self.serve, self.phase_file, self.streams = serve, phase_file, streams
        self.t_seen = self.t_idle = self.t_release = None
        self.cpu0 = self.cpu1 = None
        self.envd_kb = None

    def _cpu(self):
        c = platform_load.cpu_seconds(self.serve.pid)
        return (c["serve"], c["sandboxes"])

    def poll(self):
        try:
            with open(self.phase_file) as f:
                phases = [line.split()[0] for line in f if line.strip()]
        except OSError:
            return
        now = time.monotonic()
        if "idle" in phases and self.t_seen is None:
            self.t_seen = now
        if self.t_seen is not None and self.t_idle is None and now - self.t_seen >= self.SETTLE and "release" not in phases:
            self.t_idle, self.cpu0 = now, self._cpu()
            self.envd_kb = envd_rss_per_sandbox(self.serve.pid)
        if "release" in phases and self.t_release is None and self.t_idle is not None:
            self.t_release, self.cpu1 = now, self._cpu()

    def finish(self, metrics):
        """Adds the scale metrics; returns an error text when the phases were not seen."""
        if self.t_idle is None or self.t_release is None or not self.envd_kb:
            return "scale: the idle window was not observed (phases in %s; envd samples %r)" % (self.phase_file, self.envd_kb)
        p = self.serve.peak
        window = self.t_release - self.t_idle
        metrics.update({
            "serve_threads": [float(p["threads"])], "serve_fds": [float(p["fds"])],
            "serve_rss_mib": [self.serve.peak_rss_mib()],
            "envd_idle_rss_mib": [statistics.median(r for r, _ in self.envd_kb) / 1024.0],
            "envd_idle_pss_mib": [statistics.median(p for _, p in self.envd_kb) / 1024.0],
            "idle_cpu_us_s": [sum(b - a for a, b in zip(self.cpu0, self.cpu1)) / window / max(1, self.streams) * 1e6],
            "idle_cpu_serve_us_s": [(self.cpu1[0] - self.cpu0[0]) / window / max(1, self.streams) * 1e6],
            "idle_cpu_sandboxes_us_s": [(self.cpu1[1] - self.cpu0[1]) / window / max(1, self.streams) * 1e6],
            "idle_window_s": [window],
        })
        return None
