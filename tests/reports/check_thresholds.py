#!/usr/bin/env python3
"""Every report of a run carries its tests' thresholds and t.measure statistics (issue 26 part 2):
`abxlua run tests/runner/thresholds.lua` (2 tests whose thresholds hold, 2 that cross) with
--json, --junit, --tap, --html and --ctrf; each report names a threshold that held and one that
was crossed with its value; the JUnit file still validates against tests/reports/junit.xsd.
Usage: check_thresholds.py ABXLUA (from the source root). Exit 0, or 1 naming each failed check."""
import json
import os
import subprocess
import sys
import tempfile

abx = sys.argv[1]
tmp = tempfile.mkdtemp(prefix="abx-thresholds-")
fails = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        fails.append(what)


out = {k: os.path.join(tmp, "r." + k) for k in ("json", "junit", "tap", "html", "ctrf")}
argv = [abx, "run", "tests/runner/thresholds.lua", "-j", "1"]
for k, path in out.items():
    argv += ["--" + k, path]
p = subprocess.run(argv, capture_output=True, text=True, timeout=300)
check(p.returncode == 99, "the run exits 99, thresholds alone failed (got %d)" % p.returncode)
HELD = "ok count==4 (work: 4; from tests/runner/thresholds.lua:11)"
CROSSED = "CROSSED count<3 (work: 5; from tests/runner/thresholds.lua:20)"
MEASURED = "work: 4 iterations, 1 failed"
for k in ("junit", "tap", "html", "ctrf"):
    text = open(out[k]).read()
    if k == "html":
        text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&#39;", "'")
    if k == "junit":
        text = text.replace("&lt;", "<").replace("&gt;", ">")
    check(HELD in text, "%s names a threshold that held: %s" % (k, HELD))
    check(CROSSED in text, "%s names the crossed threshold with its value: %s" % (k, CROSSED))
    check(MEASURED in text, "%s gives the measurement: %s" % (k, MEASURED))
doc = json.load(open(out["json"]))
by = {t["name"]: t for t in doc["tests"]}
t = by["a crossed threshold fails the test"]
check(t["thresholds"] == [{"measurement": "work", "expr": "count<3", "value": 5, "ok": False,
                           "source": "tests/runner/thresholds.lua:20"}], "the JSON's thresholds: %r" % t["thresholds"])
check(t["measurements"][0]["count"] == 5, "the JSON's measurements")
xsd = os.path.join(os.path.dirname(os.path.abspath(__file__)), "junit.xsd")
v = subprocess.run(["xmllint", "--noout", "--schema", xsd, out["junit"]], capture_output=True, text=True)
check(v.returncode == 0, "the JUnit file validates against junit.xsd: %s" % v.stderr.strip()[-300:])
print("%d check(s) failed" % len(fails) if fails else "every check passed")
sys.exit(1 if fails else 0)
