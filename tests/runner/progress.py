#!/usr/bin/env python3
"""progress.py: a test in flight is visible while it runs (issue 22, item 3).

    progress.py ABXLUA MODE        (run from the source root)

Modes:
  ci   off a terminal, with ABX_PROGRESS_EVERY=1 (the period of the "still running" lines; 60 s
       unless set, the variable is meant for tests): a line "abxlua: still running: FILE::NAME
       (N s; limit L s)" names the test in flight; no status line is drawn; a period that is not
       a number > 0 is a usage error (exit 4) naming the variable.
  tty  under a pseudo-terminal: the status line names the test in flight and its elapsed seconds
       ("running: slow.lua::sleeps 3 s 2s").
Fixture: tests/runner/hang/slow.lua (one test that sleeps 3 s). Nothing here bounds the wall time.
Every failed check is listed; exit 0 when all held, else 1.
"""
import os
import pty
import re
import select
import subprocess
import sys

CASE = "tests/runner/hang/slow.lua"
CI_VARS = ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "JENKINS_URL", "BUILDKITE", "TF_BUILD",
           "TEAMCITY_VERSION", "CIRCLECI", "TRAVIS", "DRONE")
failures = []


def check(cond, what, detail=""):
    if not cond:
        failures.append(what + (": " + detail if detail else ""))
    return cond


def env_for(extra):
    env = dict(os.environ)
    for k in CI_VARS + ("E2E_RUN_ID", "ABX_PROVIDER", "ABX_FLAVOR", "ABX_CONFIG",
                        "ABX_PROGRESS_EVERY"):
        env.pop(k, None)
    env.update(extra)
    return env


def mode_ci(abxlua):
    env = env_for({"NO_COLOR": "1", "ABX_PROGRESS_EVERY": "1"})
    r = subprocess.run([abxlua, "run", CASE, "-j", "1"], env=env, capture_output=True, text=True)
    show = "exit %d\n--- stdout\n%s--- stderr\n%s" % (r.returncode, r.stdout, r.stderr)
    check(r.returncode == 0, "the run passes", show)
    line = re.compile(r"^abxlua: still running: tests/runner/hang/slow\.lua::sleeps 3 s "
                      r"\(\d+ s; limit 30 s\)$")
    check(any(line.match(l) for l in r.stdout.splitlines()),
          "a line names the test still running, its seconds and its limit", show)
    check("\x1b[K" not in r.stdout, "no status line off a terminal", show)
    for bad in ("0", "soon"):
        b = subprocess.run([abxlua, "run", CASE], env=env_for({"ABX_PROGRESS_EVERY": bad}),
                           capture_output=True, text=True)
        check(b.returncode == 4 and "ABX_PROGRESS_EVERY must be a number of seconds > 0, got "
              + bad in b.stderr, "ABX_PROGRESS_EVERY=%s is a usage error" % bad,
              "exit %d, stderr %r" % (b.returncode, b.stderr))


def mode_tty(abxlua):
    env = env_for({"TERM": "xterm", "COLUMNS": "300", "NO_COLOR": "1"})
    master, slave = pty.openpty()
    p = subprocess.Popen([abxlua, "run", CASE, "-j", "1"], env=env, stdin=slave, stdout=slave,
                         stderr=slave, close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer of the terminal has closed it
                break
            if not data:
                break
            chunks.append(data)
        elif p.poll() is not None:
            break
    code = p.wait()
    os.close(master)
    out = b"".join(chunks).decode("utf-8", "replace")
    show = "exit %d\n--- terminal\n%r" % (code, out)
    check(code == 0, "the run passes", show)
    draws = [d for d in re.split(r"\r\x1b\[K", out) if d.startswith("[")]
    check(len(draws) > 0, "a status line is drawn on a terminal", show)
    seconds = [int(m[1]) for d in draws
               for m in [re.search(r" \| running: slow\.lua::sleeps 3 s (\d+)s", d)] if m]
    check(len(seconds) > 0, "the status line names the test in flight and its elapsed seconds",
          show)
    check(any(s >= 1 for s in seconds), "the elapsed seconds count up (a draw shows 1s or more)",
          show)


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("ci", "tty"):
        print("usage: progress.py ABXLUA ci|tty", file=sys.stderr)
        return 2
    {"ci": mode_ci, "tty": mode_tty}[sys.argv[2]](sys.argv[1])
    for f in failures:
        print("FAILED CHECK: " + f)
    print("progress.py %s: %s" % (sys.argv[2], "ok" if not failures else
                                  "%d failed checks" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
