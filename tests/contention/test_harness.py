#!/usr/bin/env python3
"""The contention harness itself (tests/contention/run.sh, report.py), on fixture selections that
need no sandbox (ABX_RUN_ARGS), so that it is quick on a busy machine:
  - a passing selection, 2 runs, with the load: exit 0, a table row per main run and per finished
    second-suite run, and afterwards no CPU loop, second suite or mount of the harness left;
  - a selection with a planted failure, --quiet: exit 1, the failed test named, "load: none";
  - report.py alone on recorded runs: a template failure on the allow-list is printed as allowed
    and exits 0, one outside it (openclaw) exits 1 naming it, a main run without a report exits 1,
    a failure whose error is longer than the list's 300 characters is printed whole below it;
  - an unknown option: exit 2 naming the valid ones.
Usage: test_harness.py ABXLUA"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import check, finish
here = os.path.dirname(os.path.abspath(__file__))
root = os.path.abspath(os.path.join(here, "..", ".."))
abx = os.path.abspath(sys.argv[1])
run_sh = os.path.join(here, "run.sh")
tmp = tempfile.mkdtemp(prefix="abx-contention-test-")


def harness(args, selection, timeout=600):
    env = dict(os.environ, ABX_RUN_ARGS=selection, CONTENTION_LOAD_STATE=os.path.join(tmp, "state"),
               NO_COLOR="1")
    p = subprocess.run(["bash", run_sh] + args + [abx], cwd=root, env=env, capture_output=True,
                       text=True, timeout=timeout)
    out = p.stdout + p.stderr
    print(out)
    return p.returncode, out


def leftovers(out_dir):
    """Processes whose command line names out_dir (the CPU loops' $0, the second suite's
    arguments, its platform's sandboxes below its TMPDIR), and mounts below it."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if out_dir in cmd:
            found.append("%s: %s" % (d, cmd[:120]))
    with open("/proc/self/mountinfo") as f:
        found += [line.strip() for line in f if out_dir in line]
    return found


# 1. passing selection under load
out1 = os.path.join(tmp, "pass")
code, out = harness(["--runs", "2", "--skip-templates", "--out", out1], "-j 2 tests/contention/fixture/ok.lua")
check(code == 0, "a passing selection under load exits 0 (got %d)" % code)
check(re.search(r"^main +1 +1 +0 +0 +[\d.]+ +0$", out, re.M) is not None and
      re.search(r"^main +2 +1 +0 +0 +[\d.]+ +0$", out, re.M) is not None,
      "a table row per main run: passed 1, failed 0, skipped 0, wall seconds, exit 0")
check(("load: %d CPU loops + a second suite" % (2 * len(os.sched_getaffinity(0)))) in out,
      "the load is 2 x nproc CPU loops and a second suite")
check(os.path.exists(os.path.join(out1, "load-1.log")), "the second suite ran beside them")
check("failed tests of the main selection:\n  none" in out, "no failed test listed")
check("template run skipped" in out, "--skip-templates skips the template run")
left = []
for _ in range(20):
    left = leftovers(out1)
    if not left:
        break
    time.sleep(0.5)
check(not left, "no load process or mount is left after the harness: %r" % left)

# 2. a planted failure, no load
code, out = harness(["--runs", "1", "--skip-templates", "--quiet", "--out", os.path.join(tmp, "fail")],
                    "-j 2 tests/contention/fixture/bad.lua")
check(code == 1, "a failed main run exits 1 (got %d)" % code)
check("run 1: tests/contention/fixture/bad.lua::contention fixture fails - Assertion" in out and
      "planted failure" in out, "the failed test is named with its error (CI keeps only this output)")
check("load: none (quiet)" in out, "--quiet runs without load")
check(re.search(r"^main +1 +1 +1 +0 ", out, re.M) is not None, "the row counts 1 passed, 1 failed")

# 3. report.py alone: the template allow-list and a main run without a report
rep_dir = os.path.join(tmp, "report")
os.makedirs(rep_dir)


def test(tid, outcome):
    return {"id": tid, "outcome": outcome, "duration": 1.0, "error": None if outcome == "passed"
            else {"kind": "Assertion", "message": "boom", "status": None, "traceback": None}}


def report(name, tests):
    path = os.path.join(rep_dir, name + ".json")
    counts = {"passed": sum(t["outcome"] == "passed" for t in tests),
              "failed": sum(t["outcome"] == "failed" for t in tests), "skipped": 0, "errors": 0}
    with open(path, "w") as f:
        json.dump({"counts": counts, "tests": tests}, f)
    return path


def tsv(rows):
    path = os.path.join(rep_dir, "runs-%d.tsv" % len(os.listdir(rep_dir)))
    with open(path, "w") as f:
        for r in rows:
            f.write("\t".join(str(x) for x in r) + "\n")
    return path


main_ok = report("main", [test("scenarios/01_platform.lua::a", "passed")])
long_tail = test("scenarios/05_network_and_code.lua::b", "failed")
long_tail["error"]["message"] = "ready timeout " + "x" * 400 + "\nstart log tail: kernel still importing"
main_long = report("main-long", [long_tail])
allowed = report("tmpl-allowed", [test("scenarios/templates/deepseek-harness/deepseek-harness.lua::x", "failed"),
                                  test("scenarios/templates/openclaw/openclaw.lua::y", "passed")])
not_allowed = report("tmpl-bad", [test("scenarios/templates/hermes-agent/hermes-agent.lua::x", "failed"),
                                  test("scenarios/templates/openclaw/openclaw.lua::y", "failed")])
allow = "deepseek-harness,hermes-agent"
for rows, want, what in [
        ([("main", 1, main_ok, "-", 1.0, 0), ("templates", 1, allowed, "-", 2.0, 1)], 0,
         "a template failure on the allow-list exits 0"),
        ([("main", 1, main_ok, "-", 1.0, 0), ("templates", 1, not_allowed, "-", 2.0, 1)], 1,
         "a template failure outside the allow-list exits 1"),
        ([("main", 1, os.path.join(rep_dir, "missing.json"), os.path.join(rep_dir, "missing.log"), 1.0, 137)], 1,
         "a main run without a report exits 1"),
        ([("main", 1, main_long, "-", 1.0, 1)], 1, "a failed main run exits 1")]:
    p = subprocess.run([sys.executable, os.path.join(here, "report.py"), tsv(rows), allow, "5"],
                       capture_output=True, text=True)
    print(p.stdout + p.stderr)
    check(p.returncode == want, "%s (got %d)" % (what, p.returncode))
    if want == 0:
        check("allowed to fail: deepseek-harness, hermes-agent" in p.stdout and
              "allowed: scenarios/templates/deepseek-harness/" in p.stdout, "the allow-list is printed")
    elif rows[-1][0] == "templates":
        check("FAILED:  scenarios/templates/openclaw/openclaw.lua::y" in p.stdout and
              "allowed: scenarios/templates/hermes-agent/" in p.stdout, "openclaw's failure is named")
    elif rows[-1][2] == main_long:
        # the failed list keeps 300 characters; the first failure is printed whole below it
        check("  | start log tail: kernel still importing" in p.stdout and
              "the first failed test's whole error (scenarios/05_network_and_code.lua::b)" in p.stdout,
              "the first failure's whole error, past its first 300 characters, is printed")
    else:
        check("(no report: see" in p.stdout, "the missing report is named")

# 4. an unknown option
p = subprocess.run(["bash", run_sh, "--bogus", abx], cwd=root, capture_output=True, text=True)
check(p.returncode == 2 and "valid: --runs N, --skip-templates, --quiet, --out DIR" in p.stderr,
      "an unknown option exits 2 naming the valid ones: %r" % p.stderr)
subprocess.run(["rm", "-rf", "--one-file-system", tmp])
finish()
