"""Helpers the Python tests share (tests/*/test_*.py): checks that print and count, the skip for
tests that need the local platform, a project directory with its config, `abxlua serve` started
with --ready-fd, the control-plane API called with the serve's key, and a run timed for its peak
RSS. A test finds this module the same way everywhere:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    import abxtest
"""
import base64
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

failures = []


def secret_forms(s):
    """{form: text}: the forms of secret s that masking must catch (engine/secrets.c derives the
    same): raw, base64 (padded and not), URL-encoded, JSON-escaped, HTTP Basic (s + ":")."""
    b = base64.b64encode(s.encode()).decode()
    basic = base64.b64encode((s + ":").encode()).decode()
    return {"raw": s, "base64": b, "base64-unpadded": b.rstrip("="),
            "url": urllib.parse.quote(s, safe=""), "json": json.dumps(s)[1:-1].replace("/", "\\/"),
            "basic": basic, "basic-unpadded": basic.rstrip("=")}


def check(cond, what):
    """Prints `ok   what` or `FAIL what`; a failed check is counted in `failures` (see finish)."""
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def finish():
    """Prints the number of failed checks and exits 1 when there is any, else 0."""
    print("%d failure(s)" % len(failures))
    sys.exit(1 if failures else 0)


def needs_platform():
    """Exits 77 (ctest's skip) unless this is root and /usr/bin/bwrap is there, as `abxlua serve`
    needs."""
    if os.geteuid() != 0 or not os.access("/usr/bin/bwrap", os.X_OK):
        print("skipped: needs root and /usr/bin/bwrap")
        sys.exit(77)


def project(config, root=None):
    """A new project directory (below root, or in the temporary directory) whose
    config/abxlua.yaml holds `config`; returns its path."""
    proj = tempfile.mkdtemp(dir=root)
    os.makedirs(os.path.join(proj, "config"))
    with open(os.path.join(proj, "config", "abxlua.yaml"), "w") as f:
        f.write(config)
    return proj


def remote_config(name, extra=""):
    """The config of a project whose provider `name` is a remote E2B platform with envd routed by
    headers, domain localhost; `extra` is appended to the provider's entry (indented lines)."""
    return ("provider: %s\nproviders:\n  %s:\n    kind: remote\n    envd_routing: headers\n"
            "    domain: localhost\n%s" % (name, name, extra))


def start_serve(abx, *args, env=None, log=None):
    """Starts `abx serve --port 0 --ready-fd N args...` and returns (process, ready): ready is the
    JSON line serve writes on that fd (url, port, api_key, domain). stdout is dropped; stderr goes
    to the file `log` when named (its text is in the error when serve does not start), else it is
    dropped too."""
    r, w = os.pipe()
    err = open(log, "w") if log else subprocess.DEVNULL
    proc = subprocess.Popen([abx, "serve", "--port", "0", "--ready-fd", str(w), *args],
                            pass_fds=[w], env=env, stdout=subprocess.DEVNULL, stderr=err)
    os.close(w)
    line = os.fdopen(r).readline()
    if log:
        err.close()
    if not line:
        proc.wait(timeout=30)
        raise RuntimeError("serve did not start (exit %s)%s"
                           % (proc.returncode, ": " + open(log).read() if log else ""))
    return proc, json.loads(line)


def api(ready, method, path, body=None, timeout=30):
    """Calls the control plane of the serve whose ready line is `ready` with its API key; `body`,
    when given, is sent as JSON. Returns (status, decoded JSON answer or None); an HTTP error
    status is returned with None."""
    req = urllib.request.Request(ready["url"] + path, method=method,
                                 headers={"X-API-Key": ready["api_key"]},
                                 data=json.dumps(body).encode() if body is not None else None)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            data = resp.read()
            return resp.status, json.loads(data) if data else None
    except urllib.error.HTTPError as e:
        return e.code, None


def run_timed(cmd, **kw):
    """Runs cmd under /usr/bin/time (subprocess.run keywords in kw, output captured as text),
    prints its output and returns (exit code, stdout + stderr, peak RSS in MiB or None)."""
    p = subprocess.run(["/usr/bin/time", "-f", "maxrss_kb=%M", *cmd], capture_output=True,
                       text=True, **kw)
    out = p.stdout + p.stderr
    print(out)
    m = re.search(r"maxrss_kb=(\d+)", out)
    return p.returncode, out, int(m.group(1)) / 1024 if m else None


# Leftover checks of the interrupt tests (one copy here, as tests/scenarios/run_scenarios.sh does
# in shell): a run is found by the TMPDIR the test gave it, which its platform child, every bwrap
# and every envd carry in their command line or environment.

def procs_with(text):
    """pids (not this one) whose command line or environment holds text; processes that end or
    are not readable while we look are skipped."""
    found = []
    needle = text.encode()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        for f in ("cmdline", "environ"):
            try:
                with open("/proc/%s/%s" % (d, f), "rb") as fh:
                    if needle in fh.read():
                        found.append(int(d))
                        break
            except OSError:
                pass
    return found


def cmdline(pid):
    """The NUL-separated command line of pid as bytes, b"" when it is gone."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def bwraps(text):
    """pids of the bwrap processes (one per live local sandbox) among procs_with(text)."""
    return [p for p in procs_with(text) if cmdline(p).startswith(b"bwrap")]


def wait_until(pred, seconds, step=0.2):
    """Calls pred every `step` seconds until it is true or `seconds` have passed; returns its
    last value."""
    end = time.time() + seconds
    while time.time() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


def mounts_below(path):
    """Lines of /proc/self/mountinfo that name path (a run's TMPDIR: its overlay roots and
    volume binds live below it)."""
    with open("/proc/self/mountinfo") as f:
        return [line for line in f if path in line]


def stale_cgroups():
    """abxlua/serve.PID cgroups below this process's own cgroups whose PID is gone
    (platform/sandbox/cgroup.c makes them there; other serves of the host are not ours to judge)."""
    stale = []
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctl, path = line.rstrip("\n").split(":", 2)
            ctl = ctl.split(",")[0]
            if ctl.startswith("name="):
                ctl = ctl[5:]
            if not ctl:
                continue
            base = "/sys/fs/cgroup/%s%s/abxlua" % (ctl, "" if path == "/" else path)
            if not os.path.isdir(base):
                continue
            for d in os.listdir(base):
                if d.startswith("serve.") and not os.path.isdir("/proc/" + d[6:]):
                    stale.append(os.path.join(base, d))
    return stale


def nothing_left(tmp, what, seconds=15):
    """Checks that no process, mount or stale cgroup of the run whose TMPDIR is tmp remains
    (waiting up to `seconds` for processes to go); `what` names the run in the messages."""
    check(wait_until(lambda: not procs_with(tmp), seconds),
          "%s: no process (platform, bwrap, envd) left (%s)" % (what, procs_with(tmp)))
    check(not mounts_below(tmp), "%s: no mount below its TMPDIR left" % what)
    check(not stale_cgroups(), "%s: no cgroup of a stopped platform left" % what)


def wait_line(p, text, seconds=60):
    """Reads lines of the text-mode stdout of process p until one holds text, for at most about
    `seconds` (a line that never ends blocks the read). Returns (the lines read, whether it was
    found)."""
    lines = []
    end = time.time() + seconds
    while time.time() < end:
        line = p.stdout.readline()
        if not line:
            break
        lines.append(line)
        if text in line:
            return lines, True
    return lines, False


def interrupt(p, sig, head=(), seconds=60):
    """Sends sig to process p (text-mode stdout, stderr merged) and waits for it to end, killing
    it after `seconds`; prints and returns (head, the lines read before, joined with the rest of
    its output; the seconds from the signal to its end)."""
    t0 = time.time()
    p.send_signal(sig)
    try:
        out, _ = p.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
    took = time.time() - t0
    out = "".join(head) + out
    print(out)
    return out, took


def tail_verdict(gap):
    """The command-tail-1s mutant (OpenSandbox#1661: a process's end arrives 1 s after it ended),
    from gap() (seconds from a process's end to its end event, None when it could not be read):
    "clean" as soon as one of up to 5 gaps is under 1 s (5 ms of slack for the wall clock; no
    upper bound, so a busy machine cannot fail it), "mutated" when two in a row are not,
    "other: [gaps]" otherwise."""
    gaps = []
    for _ in range(5):
        gaps.append(gap())
        if None in gaps:
            return f"other: {gaps}"
        if gaps[-1] < 0.995:
            return "clean"
        if len(gaps) == 2:
            return "mutated"
    return f"other: {gaps}"
