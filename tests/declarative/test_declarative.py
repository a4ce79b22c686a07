#!/usr/bin/env python3
"""YAML scenarios (abx.run.declarative), one mode per ctest:

  schema        every file of tests/declarative/bad/ is a collection error of `abxlua list` (exit 1)
                whose message matches the file's `# expect-error: REGEX` header: file:line, the key
                path and the valid keys; never a crash (no Lua traceback, no lib/abx line)
  outcomes      tests/declarative/cases/outcomes.yaml run for real: 1 passed, 8 failed, each
                failure an Assertion (or the client's NotFound) located at its step's YAML line;
                the JSON and JUnit reports carry the YAML tests as they carry Lua ones
  known_issues  tests/declarative/cases/known_issues.yaml with tests/runner/ki/abxlua.yaml: a
                passing known issue is a strict XPASS failure, a platform error xfails, an
                expectation xfails only when raises names Assertion
  interrupt     tests/declarative/cases/slow.yaml interrupted by SIGINT while its 3 tests hold
                sandboxes: exit 2, each test Interrupted, cleanup, no process of the run left
  collect       tests/declarative/walk/: YAML beside Lua in a walk (subdirectories too), _*.yaml
                and lib/ skipped, a malformed file is a collection error while the others run;
                -k, -m and node ids select YAML tests; a named _*.yaml is a usage error

Usage: test_declarative.py ABXLUA MODE (run from the source root)
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import abxtest  # noqa: E402
from abxtest import check  # noqa: E402

HERE = "tests/declarative"


def abx(abxlua, args, env=None):
    e = dict(os.environ, NO_COLOR="1")
    e.update(env or {})
    p = subprocess.run([abxlua] + args, capture_output=True, text=True, env=e, timeout=240)
    return p.returncode, p.stdout, p.stderr


def last_line(out):
    lines = out.strip().splitlines()
    return lines[-1] if lines else ""


def schema(abxlua):
    bad = os.path.join(HERE, "bad")
    files = sorted(f for f in os.listdir(bad) if f.endswith(".yaml"))
    check(len(files) >= 30, "tests/declarative/bad holds the error classes (%d files)" % len(files))
    for f in files:
        path = os.path.join(bad, f)
        with open(path) as fh:
            m = re.match(r"# expect-error: (.*)\n", fh.readline())
        check(m is not None, "%s: has an `# expect-error:` first line" % f)
        if not m:
            continue
        code, out, err = abx(abxlua, ["list", path])
        line = next((l for l in out.splitlines() if l.startswith("ERROR ")), "")
        check(code == 1, "%s: `abxlua list` exits 1 (got %d)" % (f, code))
        check(line.startswith("ERROR %s (collection): %s:" % (path, path)),
              "%s: a collection error naming the file and line: %s" % (f, line))
        check(re.search(m.group(1), line) is not None,
              "%s: the message matches /%s/: %s" % (f, m.group(1), line))
        check("lib/abx" not in out + err and "traceback" not in (out + err).lower(),
              "%s: no crash (no traceback, no engine line)" % f)
        check(last_line(out) == "0 tests collected, 1 errors", "%s: nothing collected" % f)


OUTCOMES = [
    # name, its step's line, what the message says
    ("wrong exit code", 12, r"Assertion: tests\[2\]\.steps\[1\] \(run\): exit code: expected 0, "
     r"got 7 .*stderr \"to-stderr\\n\""),
    ("wrong stdout", 16, r"Assertion: tests\[3\]\.steps\[1\] \(run\): stdout: strings differ"),
    ("missing substring in stderr", 21, r"Assertion: .*\(python\): stderr: expected the text to "
     r"contain \"expected words\" \(a plain substring\)"),
    ("python returns another value", 28, r"Assertion: .*\(python\): returns .*expected "
     r"\{1=1, 2=2, 3=4\}, got \{1=1, 2=2, 3=3\}"),
    ("node stdout does not match the pattern", 35, r"Assertion: .*\(node\): stdout \(Lua "
     r"pattern\): expected the text .* to match"),
    ("wrong http status from a closed port", 41, r"Assertion: tests\[7\]\.steps\[1\]\.eventually"
     r"\[1\] \(http\): status of GET /nothing on port 9: expected 200, got 502"),
    ("the test's deadline passes in its second step", 62, r"Timeout: the test ran 3 s, its limit "
     r"\(timeout: 3 on the test; change it there\): the deadline passed while it was waiting"),
    ("sha256 of a file differs", 50, r"Assertion: .*\(read\): sha256 of /tmp/x\.txt: expected "
     r"0{64}, got ba7816bf"),
    ("reading a missing file is a NotFound error", 55, r"NotFound: GET /files answered 404: tests\[9\]\.steps\[1\] "
     r"\(read\): "),
]


def outcomes(abxlua):
    path = os.path.join(HERE, "cases", "outcomes.yaml")
    tmp = tempfile.mkdtemp()
    jpath, xpath = os.path.join(tmp, "r.json"), os.path.join(tmp, "r.xml")
    code, out, err = abx(abxlua, ["run", path, "-j", "4", "--json", jpath, "--junit", xpath])
    print(out + err)
    check(code == 1, "a run with failing expectations exits 1 (got %d)" % code)
    check(re.match(r"^1 passed, 9 failed, 0 skipped, 0 xfailed in [0-9.]+s$", last_line(out)),
          "1 passed, 9 failed: " + last_line(out))
    for name, line, msg in OUTCOMES:
        block = re.search(r"^--- %s::%s \(line \d+\)\n    (.*)$" % (re.escape(path), re.escape(name)),
                          out, re.M)
        check(block is not None, "%s: has a failure entry" % name)
        if block:
            first = block.group(1)
            check(first.startswith("%s:%d: " % (path, line)),
                  "%s: located at the step's line %d: %s" % (name, line, first))
            check(re.search(msg, first) is not None, "%s: says /%s/: %s" % (name, msg, first))
    check(re.search(r"^PASSED +%s::passes " % re.escape(path), out, re.M) is not None,
          "the test whose expectations hold passed")
    rep = json.load(open(jpath))
    by = {t["name"]: t for t in rep["tests"]}
    check(len(rep["tests"]) == 10 and by.get("passes", {}).get("outcome") == "passed",
          "the JSON report has the 10 YAML tests, `passes` passed")
    check(all(by[n]["outcome"] == "failed" and by[n]["file"] == path for n, _, _ in OUTCOMES),
          "the JSON report has the 9 failures, with the YAML file")
    check(by.get("passes", {}).get("id") == path + "::passes" and by["passes"]["line"] == 5,
          "a YAML test's id is FILE::NAME and its line the line of its entry")
    check(all(len(t["sandboxes"]) == 1 for t in rep["tests"]),
          "each YAML test created exactly one tracked sandbox")
    check(rep["cleanup"] and rep["cleanup"]["created"] == 10, "cleanup counted 10 sandboxes")
    root = ET.parse(xpath).getroot()
    cases = root.findall(".//testcase")
    check(len(cases) == 10 and sum(1 for c in cases if c.find("failure") is not None) == 9,
          "the JUnit report has 10 testcases, 9 with a failure")


def known_issues(abxlua):
    path = os.path.join(HERE, "cases", "known_issues.yaml")
    code, out, err = abx(abxlua, ["run", path, "--config", "tests/runner/ki/abxlua.yaml", "-j", "2",
                                  "-r", "A"])
    print(out + err)
    check(code == 1, "a strict XPASS fails the run: exit 1 (got %d)" % code)
    check(re.match(r"^1 passed, 2 failed, 0 skipped, 2 xfailed in [0-9.]+s$", last_line(out)),
          "1 passed, 2 failed, 2 xfailed: " + last_line(out))
    p = re.escape(path)
    for pat, what in [
        (r"^XPASS %s::a known issue that no longer fails is a strict XPASS - \[XPASS\(strict\)\] "
         r"KI-900" % p, "the passing known issue is XPASS(strict)"),
        (r"^--- %s::a known issue that no longer fails is a strict XPASS \(line 5\)$" % p,
         "the strict XPASS is in the failures section"),
        (r"^XFAIL %s::a platform error under a known issue is the expected failure - KI-900" % p,
         "a platform error (NotFound) under the known issue xfails"),
        (r"^XFAIL %s::a failing expectation named by raises is the expected failure - KI-900" % p,
         "an expectation with raises: Assertion xfails"),
        (r"^FAILED %s::a failing expectation without raises is a real failure - Assertion: .*known "
         r"issue KI-900 does not cover an Assertion" % p, "an expectation without raises fails"),
        (r"^PASSED %s::a known issue of another provider does not apply" % p,
         "a known issue scoped to another provider does not apply"),
    ]:
        check(re.search(pat, out, re.M) is not None, what)


def collect(abxlua):
    walk = os.path.join(HERE, "walk")
    code, out, err = abx(abxlua, ["list", walk])
    print(out + err)
    ids = [l.split(" [")[0] for l in out.splitlines() if "::" in l and not l.startswith("ERROR")]
    check(ids == [walk + "/a_lua.lua::lua sandbox echoes", walk + "/b_yaml.yaml::yaml sandbox echoes",
                  walk + "/b_yaml.yaml::yaml slow test", walk + "/sub/c_nested.yml::nested yaml runs"],
          "a walk collects YAML (.yaml and .yml) beside Lua, subdirectories too, sorted by path: %s" % ids)
    check("_helper" not in out and "lib/data" not in out, "a walk skips _*.yaml and lib/")
    check(re.search(r"^ERROR %s/broken\.yaml \(collection\): %s/broken\.yaml:5:1: .*\(check "
                    r"indentation and quoting\)$" % (walk, walk), out, re.M) is not None,
          "malformed YAML is a collection error naming file:line:column")
    check(code == 1 and last_line(out) == "4 tests collected, 1 errors", "list: 4 tests, 1 error")
    check(re.search(r"b_yaml\.yaml::yaml slow test \[e2e,e2e_slow\]", out) is not None,
          "a YAML test's markers are listed, e2e added")
    # the malformed file does not stop the others; -m deselects the YAML test marked e2e_slow
    code, out, err = abx(abxlua, ["run", walk, "-m", "not e2e_slow", "-j", "3"])
    print(out + err)
    check(code == 1 and re.match(r"^3 passed, 0 failed, 0 skipped, 0 xfailed, 1 errors in",
                                 last_line(out)), "run: 3 passed and the collection error: "
          + last_line(out))
    check("cleanup: 3 sandboxes created" in out, "the 3 tests' sandboxes were tracked and cleaned")
    code, out, _ = abx(abxlua, ["list", walk, "-k", "nested yaml"])
    listed = [l.split(" [")[0] for l in out.splitlines() if "::" in l]
    check(last_line(out) == "1 tests collected, 1 errors"
          and listed == [walk + "/sub/c_nested.yml::nested yaml runs"],
          "-k selects a YAML test by name: %s" % listed)
    code, out, err = abx(abxlua, ["run", walk + "/b_yaml.yaml::yaml sandbox echoes"])
    check(code == 0 and re.match(r"^1 passed, 0 failed", last_line(out)),
          "a node id runs one YAML test: " + last_line(out))
    code, out, err = abx(abxlua, ["run", walk + "/b_yaml.yaml::yaml sandbox echos"])
    check(code == 4 and 'close matches: "yaml sandbox echoes"' in err + out,
          "a node id naming no YAML test is a usage error with close matches")
    code, out, err = abx(abxlua, ["list", "scenarios/templates/base/template.yaml"])
    check(code == 1 and "a YAML file of the template folder scenarios/templates/base is not a "
          "scenario" in out, "a template folder's template.yaml named explicitly is no scenario")
    code, out, err = abx(abxlua, ["list", "scenarios/templates/"])
    check(code == 0 and "ERROR" not in out, "a walk of scenarios/templates/ collects no template.yaml")
    code, out, err = abx(abxlua, ["run", walk + "/_helper.yaml"])
    check(code == 4 and "is a helper module, not a scenario (it is named _*.yaml" in err + out,
          "naming a _*.yaml file is a usage error")


def interrupt(abxlua):
    tmp = tempfile.mkdtemp()
    env = dict(os.environ, TMPDIR=tmp, NO_COLOR="1")
    p = subprocess.Popen([abxlua, "run", os.path.join(HERE, "cases", "slow.yaml"), "-j", "3"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    check(abxtest.wait_until(lambda: len(abxtest.bwraps(tmp)) >= 3, 30),
          "three sandboxes are live before the interrupt")
    time.sleep(1.0)  # every test is in its step by now
    p.send_signal(signal.SIGINT)
    try:
        out, _ = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
    print(out)
    check(p.returncode == 2, "SIGINT exits 2 (got %s)" % p.returncode)
    check(len(re.findall(r"^FAILED +\S.* \([0-9.]+s\) - Interrupted$", out, re.M)) == 3,
          "the three YAML tests end with kind Interrupted")
    check(re.search(r"^cleanup: 3 sandboxes created", out, re.M) is not None,
          "the cleanup line counts the 3 sandboxes")
    abxtest.nothing_left(tmp, "the interrupted YAML run")


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("schema", "outcomes", "known_issues", "collect",
                                                 "interrupt"):
        print(__doc__)
        sys.exit(2)
    abxlua, mode = sys.argv[1], sys.argv[2]
    if mode != "schema":
        abxtest.needs_platform()
    globals()[mode](abxlua)
    abxtest.finish()


if __name__ == "__main__":
    main()
