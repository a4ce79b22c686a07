#!/usr/bin/env python3
"""The code-interpreter server (platform/code_interpreter/server.py) run directly on the host, no
sandbox: fast checks of what does not need one (issue 25).

Usage: test_code_interpreter_server.py [LANGUAGE]
  no argument: the server always answers: a kernel whose program is missing and one that exits at
               start (kernelspecs of its own, first on JUPYTER_PATH) answer a plain-text 500
               naming the kernel for POST /contexts and for /execute's default context, a cwd
               that is not a directory 400, a Content-Length that is not a number 400, and the
               server keeps serving after each (the server used to drop the connection on the
               first two, which E2B's SDK reports as a 502 "sandbox timeout"); a context's cwd is
               honoured and its code runs as the server's user (root on the template).
  r | javascript | typescript: that language's kernel (Debian's IRkernel; tslab's jslab, tslab
               from scripts/ci_kernels.sh): its default context in the server's default cwd,
               state across executions, a context with its own cwd, env_vars set for one execution
               and removed after it, an error line for a failing execution. Exit 77 naming the
               missing kernel when it is not installed.

Runs server.py with /usr/bin/python3 (Debian's jupyter_client, as the template does) on a free
port; the default contexts' cwd is a temporary directory (ABX_CODE_INTERPRETER_CWD). The server
runs in a PID namespace of its own (`unshare --pid --fork --kill-child`, with a parent-death
signal on unshare): jupyter_client starts each kernel in a session of its own, so nothing but
the namespace ends a kernel the server leaves behind (tslab keeps running, and spinning, after
its parent is gone); stop() checks that no process of the server's tree survives it.
Each check prints ok/FAIL; exit 1 when any failed, 77 when skipped.
"""
import ctypes
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import check, finish  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "..", "..", "platform", "code_interpreter", "server.py")
PY = "/usr/bin/python3"
KERNELS = {"r": ("r", "ir"), "javascript": ("javascript", "jslab"),
           "typescript": ("tslab", "javascript")}  # as server.py's KERNELS


def die_with_parent():
    """preexec_fn: SIGKILL when the test dies (prctl PR_SET_PDEATHSIG), so unshare's --kill-child
    ends the server's PID namespace even then."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


def tree(pid):
    """pid and every process below it (host PIDs, from /proc)."""
    parent = {}
    for d in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % d) as f:
                parent[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            pass
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        out.add(p)
        todo.extend(c for c, pp in parent.items() if pp == p and c not in out)
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def installed_kernels():
    out = subprocess.run([PY, "-c", "from jupyter_client.kernelspec import KernelSpecManager as K;"
                          "print('\\n'.join(K().find_kernel_specs()))"],
                         capture_output=True, text=True)
    return set(out.stdout.split()) if out.returncode == 0 else None


class Server:
    def __init__(self, env_extra=None):
        self.dir = tempfile.mkdtemp(prefix="abx-ci-server.")
        self.cwd = os.path.join(self.dir, "home")
        os.mkdir(self.cwd)
        self.port = free_port()
        env = dict(os.environ, ABX_CODE_INTERPRETER_PORT=str(self.port),
                   ABX_CODE_INTERPRETER_CWD=self.cwd, **(env_extra or {}))
        self.log = open(os.path.join(self.dir, "server.log"), "w+")
        self.proc = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", PY, SERVER],
                                     env=env, stdout=self.log, stderr=self.log, cwd=self.dir,
                                     preexec_fn=die_with_parent)
        deadline = time.time() + 180  # the default kernels start first; a busy machine is slow
        while time.time() < deadline and self.proc.poll() is None:
            try:
                if self.request("GET", "/health", timeout=5)[0] == 200:
                    return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError("server.py did not answer /health: %s" % self.tail())

    def tail(self):
        self.log.seek(0)
        return self.log.read()[-1500:]

    def request(self, method, path, body=None, headers=None, timeout=120):
        """(status, body text); OSError/http.client errors when the connection drops."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        data = json.dumps(body) if isinstance(body, (dict, list)) else body
        c.request(method, path, data, headers or {})
        r = c.getresponse()
        text = r.read().decode(errors="replace")
        c.close()
        return r.status, text

    def answer(self, method, path, body=None, headers=None):
        """Like request, but a dropped connection is (None, its error)."""
        try:
            return self.request(method, path, body, headers)
        except (OSError, http.client.HTTPException) as e:
            return None, "%s: %s" % (type(e).__name__, e)

    def execute(self, code, **fields):
        st, text = self.answer("POST", "/execute", dict(code=code, **fields))
        if st != 200:
            return st, text
        return st, [json.loads(line) for line in text.splitlines() if line.strip()]

    def stop(self):
        procs = tree(self.proc.pid)
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        deadline = time.time() + 30
        while time.time() < deadline and any(os.path.exists("/proc/%d" % p) for p in procs):
            time.sleep(0.2)
        left = [p for p in procs if os.path.exists("/proc/%d" % p)]
        check(not left, "no process of the server (%d, kernels included) outlives it: %s"
              % (len(procs), left))
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def of(lines, kind):
    return [x for x in lines if isinstance(x, dict) and x.get("type") == kind]


def broken_kernelspecs(root):
    """JUPYTER_PATH with a `bash` kernel whose program does not exist and a `java` kernel that
    exits at once (both languages have no kernel on the template, so nothing real is shadowed)."""
    for name, argv in (("bash", ["/nonexistent/abx-kernel", "{connection_file}"]),
                       ("java", ["/bin/false", "{connection_file}"])):
        d = os.path.join(root, "kernels", name)
        os.makedirs(d)
        with open(os.path.join(d, "kernel.json"), "w") as f:
            json.dump({"argv": argv, "display_name": "broken " + name, "language": name}, f)
    return root


def always_answers():
    jp = broken_kernelspecs(tempfile.mkdtemp(prefix="abx-ci-kernels."))
    s = Server({"JUPYTER_PATH": jp})
    try:
        for lang, kernel in (("bash", "bash"), ("java", "java")):
            st, text = s.answer("POST", "/contexts", {"language": lang})
            check(st == 500 and ("%s kernel" % kernel) in text and "Failed to start" in text,
                  "POST /contexts %s: a 500 naming the kernel (%r %r)" % (lang, st, text[:300]))
            st, text = s.execute("echo hi", language=lang)
            check(st == 500 and ("%s kernel" % kernel) in text,
                  "/execute language=%s: a 500 naming the kernel (%r %r)" % (lang, st, text[:300]))
        st, text = s.answer("POST", "/contexts", {"cwd": "/nonexistent/dir"})
        check(st == 400 and "/nonexistent/dir" in text, "bad cwd: 400 naming it (%r %r)" % (st, text))
        st, text = s.answer("POST", "/execute", "{}", {"Content-Length": "abc"})
        check(st == 400 and "Content-Length" in text, "bad Content-Length: 400 (%r %r)" % (st, text))
        st, lines = s.execute("6 * 7")
        check(st == 200 and of(lines, "result") and of(lines, "result")[0]["text"] == "42",
              "still serving after the failures (%r %r)" % (st, lines))
        other = tempfile.mkdtemp(prefix="abx-ci-cwd.")
        st, text = s.answer("POST", "/contexts", {"cwd": other})
        check(st == 200 and json.loads(text)["cwd"] == other, "context in %s (%r %r)" % (other, st, text))
        cid = json.loads(text)["id"] if st == 200 else "none"
        st, lines = s.execute("import os\nos.getcwd(), os.getuid() == %d" % os.getuid(), context_id=cid)
        res = of(lines, "result") if st == 200 else []
        check(res and res[0]["text"] == "(%r, True)" % other,
              "its code runs in its cwd as the server's user (%r)" % (lines,))
        shutil.rmtree(other, ignore_errors=True)
    finally:
        s.stop()
        shutil.rmtree(jp, ignore_errors=True)


# per language: (cwd code, its text for `d`, assign, read back, env read with default, error code)
LANG_CODE = {
    "r": ("getwd()", '[1] "%s"', "x <- 41", "x + 1", "[1] 42",
          'Sys.getenv("ABX_CI_VAR", unset = "default")', '[1] "%s"', 'stop("boom")'),
    "javascript": ("process.cwd()", "%s", "var x = 41", "x + 1", "42",
                   "console.log(process.env.ABX_CI_VAR || 'default')", "%s",
                   "throw new TypeError('boom')"),
    "typescript": ("process.cwd()", "%s", "let x: number = 41", "x + 1", "42",
                   "console.log(process.env.ABX_CI_VAR || 'default')", "%s",
                   "const y: number = 'not a number'"),
}


def text_of(lines):
    """A result's text or the stdout (IRkernel answers display_data, tslab_e2b.js execute_result;
    console.log and R's cat print)."""
    res = of(lines, "result")
    if res:
        return res[-1].get("text", "").strip()
    return "".join(x["text"] for x in of(lines, "stdout")).strip()


def language(lang):
    cwd_code, cwd_fmt, assign, read, want, env_code, env_fmt, err_code = LANG_CODE[lang]
    s = Server()
    try:
        st, lines = s.execute(cwd_code, language=lang)
        check(st == 200 and text_of(lines) == cwd_fmt % s.cwd,
              "%s: default context in the default cwd (%r %r)" % (lang, st, lines))
        st, text = s.answer("GET", "/contexts")
        langs = [c["language"] for c in json.loads(text)] if st == 200 else []
        check(lang in langs and "python" in langs, "%s: listed with python (%r)" % (lang, text))
        s.execute(assign, language=lang)
        st, lines = s.execute(read, language=lang)
        check(st == 200 and text_of(lines) == want, "%s: state kept (%r)" % (lang, lines))
        st, text = s.answer("POST", "/contexts", {"language": lang, "cwd": "/"})
        cid = json.loads(text)["id"] if st == 200 else "none"
        st, lines = s.execute(cwd_code, context_id=cid)
        check(st == 200 and text_of(lines) == cwd_fmt % "/", "%s: a context in / (%r)" % (lang, lines))
        st, lines = s.execute(env_code, language=lang, env_vars={"ABX_CI_VAR": "it's \"set\""})
        check(st == 200 and text_of(lines) == env_fmt % ("it's \\\"set\\\"" if lang == "r" else
                                                          "it's \"set\""),
              "%s: env_vars for one execution (%r)" % (lang, lines))
        st, lines = s.execute(env_code, language=lang)
        check(st == 200 and text_of(lines) == env_fmt % "default",
              "%s: env_vars removed after it (%r)" % (lang, lines))
        st, lines = s.execute(err_code, language=lang)
        check(st == 200 and len(of(lines, "error")) == 1 and lines[-1] == {"type": "end_of_execution"},
              "%s: one error line (%r)" % (lang, lines))
        if lang == "javascript":  # named as E2B's kernel names it (scripts/ci_kernels/tslab_e2b.js)
            errs = of(lines, "error") if st == 200 else []
            check(errs and errs[0]["name"] == "TypeError" and errs[0]["value"] == "boom",
                  "javascript: the exception's name and message (%r)" % errs)
        if lang in ("javascript", "typescript"):
            st, lines = s.execute("await Promise.resolve('awaited')", language=lang)
            res = of(lines, "result") if st == 200 else []
            check(len(res) == 1 and res[0]["is_main_result"] and res[0]["text"] == "awaited",
                  "%s: a top-level await's value is the main result (%r)" % (lang, lines))
    finally:
        s.stop()


def main():
    lang = sys.argv[1] if len(sys.argv) > 1 else None
    if lang not in (None,) + tuple(LANG_CODE):
        print("usage: test_code_interpreter_server.py [%s]" % "|".join(LANG_CODE))
        return 2
    kernels = installed_kernels() if os.path.exists(PY) else None
    if kernels is None:
        print("SKIP: %s has no jupyter_client (scripts/deps.sh installs python3-jupyter-client)" % PY)
        return 77
    if lang is None:
        always_answers()
    elif not kernels & set(KERNELS[lang]):
        how = ("make ci-kernels (scripts/ci_kernels.sh)" if lang != "r" else
               "scripts/deps.sh (r-cran-irkernel)")
        print("SKIP: no %s kernel installed (%s); install it with %s"
              % (lang, " or ".join(KERNELS[lang]), how))
        return 77
    else:
        language(lang)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
