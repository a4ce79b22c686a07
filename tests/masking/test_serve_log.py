#!/usr/bin/env python3
"""The local platform's log and .env masking under `kind: local` (issue 9 items 6 and 7).

A run against the embedded platform, with a known API key (ABX_LOCAL_API_KEY) and a secret in
.env: when the run fails, stdout and stderr hold neither secret, nothing is left in $TMPDIR, and
the log is kept as $XDG_STATE_HOME/abxlua/serve-<run id>.log, mode 0600 in a 0700 directory,
without the API key; when the run passes, no log is left anywhere. Needs root and bubblewrap (exit
77 otherwise). Usage: test_serve_log.py ABXLUA"""
import glob, os, stat, subprocess, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import check, finish, needs_platform, project

abx = os.path.abspath(sys.argv[1])
here = os.path.dirname(os.path.abspath(__file__))
needs_platform()

api_key = "e2b_" + os.urandom(20).hex()
dotenv_secret = "dot/env+local" + os.urandom(6).hex()
proj = project("provider: local\nproviders:\n  local:\n    kind: local\n    domain: localhost\n"
               "    envd_routing: headers\n")
with open(os.path.join(proj, ".env"), "w") as f:
    f.write("MY_SERVICE_TOKEN=%s\n" % dotenv_secret)
tmp, state = os.path.join(proj, "tmp"), os.path.join(proj, "state")
os.makedirs(tmp)

def run(run_id, fail):
    env = dict(os.environ, ABX_LOCAL_API_KEY=api_key, TMPDIR=tmp, XDG_STATE_HOME=state,
               E2E_RUN_ID=run_id, NO_COLOR="1")
    env.pop("E2E_FAIL", None)
    if fail:
        env["E2E_FAIL"] = "1"
    return subprocess.run([abx, "run", os.path.join(here, "serve_log_case.lua"), "-r", "a"],
                          cwd=proj, env=env, capture_output=True, text=True, timeout=120)

print("== a failing run")
run_id = "servelog" + os.urandom(4).hex()
p = run(run_id, True)
print(p.stdout[-1500:])
check(p.returncode == 1, "the run failed as planned (exit %d)" % p.returncode)
out = p.stdout + p.stderr
check(dotenv_secret not in out, "the .env secret is masked under the local provider")
check("planted: MY_SERVICE_TOKEN=***" in p.stdout, "*** stands where it was")
check(api_key not in out, "the API key is not in the output")
left = os.listdir(tmp)
check(not [n for n in left if n.startswith("abxlua-serve-")], "no serve log in $TMPDIR (%s)" % left)
for name in [n for n in left if n.startswith("abxlua-serve-")]:
    check(api_key not in open(os.path.join(tmp, name)).read(), "%s does not hold the API key" % name)
log = os.path.join(state, "abxlua", "serve-%s.log" % run_id)
check(os.path.isfile(log), "the log is kept as %s" % log)
if os.path.isfile(log):
    text = open(log, encoding="utf-8", errors="replace").read()
    check("listening on" in text, "it is serve's log")
    check(api_key not in text, "the log does not hold the API key")
    check(stat.S_IMODE(os.stat(log).st_mode) == 0o600, "the log is mode 0600 (%o)"
          % stat.S_IMODE(os.stat(log).st_mode))
    check(stat.S_IMODE(os.stat(os.path.dirname(log)).st_mode) == 0o700, "its directory is 0700")
    check(log in p.stdout, "the run names the log")

print("== a passing run")
run_id = "servelog" + os.urandom(4).hex()
p = run(run_id, False)
check(p.returncode == 0, "the run passed (exit %d): %s" % (p.returncode, p.stdout[-500:]))
logs = glob.glob(os.path.join(state, "abxlua", "serve-%s.log" % run_id)) + \
    glob.glob(os.path.join(tmp, "abxlua-serve-%s.log" % run_id))
check(not logs, "no log is left (%s)" % logs)
finish()
