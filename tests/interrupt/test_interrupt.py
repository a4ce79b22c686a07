#!/usr/bin/env python3
"""Interrupts (issue 5, item 1): SIGINT mid-run with live sandboxes cleans up and exits 2; a second
SIGINT exits at once printing the tag; SIGKILL of the engine leaves no process behind on the local
provider, and against a separately running platform `abxlua cleanup --yes --run-id` then removes
what the killed run left. Usage: test_interrupt.py ABXLUA"""
import os, re, signal, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import abxtest
from abxtest import check, finish, procs_with

abx = os.path.abspath(sys.argv[1])
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
case = os.path.join(root, "tests", "interrupt", "slow_case.lua")

def wait_gone(text, seconds=10):
    return abxtest.wait_until(lambda: not procs_with(text), seconds)

def wait_for_sandboxes(tmp, n, seconds=30):
    """bwrap processes of this run (their command lines name the run's TMPDIR)"""
    return abxtest.wait_until(lambda: len(abxtest.bwraps(tmp)) >= n, seconds)

def start_run(tmp, extra_env=None, cwd=root, args=(), scenario=case):
    env = dict(os.environ, TMPDIR=tmp, NO_COLOR="1", **(extra_env or {}))
    return subprocess.Popen([abx, "run", scenario, "-j", "4", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

# 1. one SIGINT: teardown, cleanup, exit 2, nothing left
tmp = tempfile.mkdtemp()
p = start_run(tmp)
check(wait_for_sandboxes(tmp, 4), "four sandboxes are live before the interrupt")
t0 = time.time()
p.send_signal(signal.SIGINT)
out, _ = p.communicate(timeout=60)
print(out)
check(p.returncode == 2, "SIGINT exits 2 (got %s)" % p.returncode)
check(time.time() - t0 < 30, "the interrupted run ended in %.1fs" % (time.time() - t0))
check("interrupted: stopping the running tests" in out, "the interrupt is announced")
# result lines only ("FAILED   file::name (0.35s) - Interrupted"), not the short test summary
check(len(re.findall(r"^FAILED +\S.* \([0-9.]+s\) - Interrupted$", out, re.M)) == 4
      and " - Timeout" not in out,
      "the four running tests end with kind Interrupted (not Timeout)")
check("cleanup:" in out, "the cleanup line is printed")
check(wait_gone(tmp), "no process of the run remains")

# 1b. one SIGINT while the tests loop in Lua inside pcall (issue 9, item 1): exit 2 with cleanup
tmp = tempfile.mkdtemp()
p = start_run(tmp, scenario=os.path.join(root, "tests", "interrupt", "busy_case.lua"))
check(wait_for_sandboxes(tmp, 2), "two sandboxes are live before the interrupt of busy tests")
time.sleep(1.0)  # both tests are in their pcall loops by now
t0 = time.time()
p.send_signal(signal.SIGINT)
try:
    out, _ = p.communicate(timeout=30)
except subprocess.TimeoutExpired:
    p.kill()
    out, _ = p.communicate()
print(out)
check(p.returncode == 2, "SIGINT stops tests busy in pcall loops: exit 2 (got %s)" % p.returncode)
check(time.time() - t0 < 15, "the interrupted busy run ended in %.1fs" % (time.time() - t0))
check(len(re.findall(r"^FAILED +\S.* \([0-9.]+s\) - Interrupted$", out, re.M)) == 2,
      "both busy tests end with kind Interrupted")
check(re.search(r"^cleanup: .*2 killed", out, re.M) is not None
      or re.search(r"^cleanup: ", out, re.M) is not None, "the cleanup line is printed")
check(wait_gone(tmp), "no process of the busy run remains")

# 2. two SIGINTs: exit at once with the tag
tmp = tempfile.mkdtemp()
p = start_run(tmp, {"E2E_RUN_ID": "twice%d" % os.getpid()})
check(wait_for_sandboxes(tmp, 4), "sandboxes are live before the double interrupt")
p.send_signal(signal.SIGINT)
time.sleep(0.05)
p.send_signal(signal.SIGINT)
out, _ = p.communicate(timeout=30)
check(p.returncode == 2, "a second SIGINT exits 2 (got %s)" % p.returncode)
check("e2e=twice%d" % os.getpid() in out, "the second interrupt prints the run's tag")
check(wait_gone(tmp, 15), "the platform child and its sandboxes still go away (parent death)")

# 3. SIGKILL of the engine on the local provider: the platform child follows, nothing remains
tmp = tempfile.mkdtemp()
p = start_run(tmp)
check(wait_for_sandboxes(tmp, 4), "sandboxes are live before SIGKILL")
p.kill()
p.wait()
check(wait_gone(tmp, 15), "after SIGKILL of the engine no sandbox process remains")

# 4. SIGKILL against a separately running platform, then the janitor
serve, ready = abxtest.start_serve(abx)
proj = abxtest.project(abxtest.remote_config("here"))
run_id = "killed%d" % os.getpid()
renv = {"ABX_SANDBOX_API_KEY": ready["api_key"], "ABX_SANDBOX_BASE_URL": ready["url"],
        "E2B_SANDBOX_URL": ready["url"], "E2E_RUN_ID": run_id}

def tagged():
    st, listed = abxtest.api(ready, "GET", "/v2/sandboxes")
    if st != 200:
        raise RuntimeError("GET /v2/sandboxes answered %d" % st)
    return [s for s in listed if (s.get("metadata") or {}).get("e2e") == run_id]

try:
    p = start_run(tempfile.mkdtemp(), renv, cwd=proj)
    end = time.time() + 30
    while time.time() < end and len(tagged()) < 4:
        time.sleep(0.2)
    check(len(tagged()) == 4, "the run holds 4 tagged sandboxes on the platform")
    p.kill()
    p.wait()
    time.sleep(0.5)
    check(len(tagged()) == 4, "after SIGKILL they are still there (nobody cleaned up)")
    env = dict(os.environ, **renv)
    c = subprocess.run([abx, "cleanup", "--run-id", run_id, "--yes"], cwd=proj, env=env,
                       capture_output=True, text=True, timeout=120)
    print(c.stdout + c.stderr)
    check(c.returncode == 0, "abxlua cleanup --yes --run-id exits 0 (got %d)" % c.returncode)
    check(len(tagged()) == 0, "abxlua cleanup --yes --run-id leaves nothing")
finally:
    serve.terminate()
    serve.wait(timeout=30)

finish()
