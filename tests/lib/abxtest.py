"""Helpers the Python tests share (tests/*/test_*.py): checks that print and count, the skip for
tests that need the local platform, a project directory with its config, `abxlua serve` started
with --ready-fd, the control-plane API called with the serve's key, and a run timed for its peak
RSS. A test finds this module the same way everywhere:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    import abxtest
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

failures = []


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
