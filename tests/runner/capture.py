#!/usr/bin/env python3
"""Per-test captured output (issue 13): runs tests/runner/capture_case.lua -j 4 with --junit, then
with -s. Captured (the default): each test's print / io.write / io.stdout / io.stderr writes, and
the command output it echoes from on_stdout / on_stderr callbacks (foreground, and a background
command's reader task), are attributed to that test although the tests interleave: shown under
its failure ("----- captured stdout -----", "----- captured stderr -----"), not on the console for
a passing test, and in the testcase's JUnit <system-out> / <system-err>; a registered secret is
masked everywhere, also when printed in two pieces. With -s the output goes straight to the
console and JUnit has none of it. Usage: capture.py ABXLUA (from the source root)."""
import os, re, subprocess, sys, tempfile
import xml.etree.ElementTree as ET
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import check, finish

abx = os.path.abspath(sys.argv[1])
root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
case = "tests/runner/capture_case.lua"
env = dict(os.environ, NO_COLOR="1")
SECRET = "capture-secret-123"


def run(*args):
    tmp = tempfile.mkdtemp()
    junit = os.path.join(tmp, "junit.xml")
    p = subprocess.run([abx, "run", case, "-j", "4", "--junit", junit, *args], cwd=root, env=env,
                       capture_output=True, text=True, timeout=120)
    cases = {}
    if os.path.exists(junit):
        for tc in ET.parse(junit).getroot().iter("testcase"):
            so, se = tc.find("system-out"), tc.find("system-err")
            cases[tc.get("name")] = ((so.text or "") if so is not None else "",
                                     (se.text or "") if se is not None else "")
    return p, cases


def sections(out):
    """{test name: text of its entry in the failures section}"""
    part = out.split("=== failures ===", 1)[1].split("=== short test summary info ===", 1)[0]
    found = {}
    for block in re.split(r"(?m)^--- ", part)[1:]:
        name = block.split("::", 1)[1].split(" (line", 1)[0]
        found[name] = block
    return found


def captured(block, which):
    """The lines under '----- captured WHICH -----' of one failure entry (indent removed)."""
    m = re.search(r"(?ms)^    ----- captured %s -----\n(.*?)(?=^    ----- captured |\Z)" % which, block)
    if not m:
        return None
    lines = [l[4:] for l in m.group(1).splitlines()]
    while lines and lines[-1] == "":
        lines.pop()
    return lines


print("== captured (the default)")
p, cases = run()
print(p.stdout[-4000:])
check(p.returncode == 1, "the run fails as planned (exit %d)" % p.returncode)
sec = sections(p.stdout)
a_out = ["A out %d" % i for i in range(1, 6)]
a_err = ["A err %d" % i for i in range(1, 6)]
b_out = ["B out %d" % i for i in range(1, 6)]
check(captured(sec.get("A prints and fails", ""), "stdout") == a_out,
      "A's failure shows exactly A's stdout lines, in order")
check(captured(sec.get("A prints and fails", ""), "stderr") == a_err,
      "A's failure shows exactly A's stderr lines")
check(captured(sec.get("B prints and fails", ""), "stdout") == b_out,
      "B's failure shows exactly B's stdout lines (no line of A, which ran at the same time)")
d = sec.get("D echoes a command and fails", "")
d_out = captured(d, "stdout") or []
check(d_out == ["from-command", "background-line", "", "token ***"],
      "D's failure shows the command's output it echoed (foreground and background) and its "
      "print, masked: %r" % d_out)
check(captured(d, "stderr") == ["to-stderr"], "D's stderr holds the command's stderr it echoed")
outside = p.stdout.split("=== failures ===", 1)[0]
check(not re.search(r"(?m)^[ABCDE] (out|err|print|io)|^from-command|^piece", outside + p.stderr),
      "no captured line reaches the console outside the failures section")
check("C io.write" not in p.stdout + p.stderr and "C stdout:write" not in p.stdout + p.stderr,
      "a passing test's output is not on the console")
check(SECRET not in p.stdout + p.stderr and "capture-sec" not in p.stdout,
      "the secret is masked on the console")
check(cases.get("A prints and fails", ("", ""))[0] == "".join(l + "\n" for l in a_out),
      "JUnit: A's <system-out> is A's stdout")
check(cases.get("A prints and fails", ("", ""))[1] == "".join(l + "\n" for l in a_err),
      "JUnit: A's <system-err> is A's stderr")
check(cases.get("C prints and passes", ("", ""))[0] == "C print\nC io.write\nC stdout:write\n",
      "JUnit: a passing test's print, io.write and io.stdout:write are in its <system-out>")
dj = cases.get("D echoes a command and fails", ("", ""))
check(dj[0].startswith("from-command\nbackground-line\n\ntoken ***\nsandboxes: "),
      "JUnit: D's <system-out> has the echoed output, masked, then its sandboxes: %r" % dj[0])
check(cases.get("E prints a secret in two pieces and passes", ("", ""))[0] == "piece *** end\n",
      "JUnit: a secret written in two pieces is masked")
check(all(SECRET not in so + se and "capture-sec" not in so for so, se in cases.values()),
      "JUnit: the secret appears in no system-out / system-err")

print("== -s: no capture")
p, cases = run("-s")
print(p.stdout[-2500:])
check(p.returncode == 1, "the run fails as planned (exit %d)" % p.returncode)
outside = p.stdout.split("=== failures ===", 1)[0]
# (a line may be joined to another test's: with -s nothing separates the tests' output)
check(all(l in outside for l in a_out + b_out + ["C print", "C io.write", "from-command"]),
      "with -s the tests' output is on stdout as it comes")
check(all(l in p.stderr for l in a_err + ["to-stderr"]),
      "with -s stderr writes go to stderr")
check("----- captured" not in p.stdout, "with -s no failure shows captured output")
check(SECRET not in p.stdout + p.stderr, "with -s the secret is masked on the console")
check(cases.get("A prints and fails", ("x", "x")) == ("", ""),
      "with -s JUnit holds no captured output")
finish()
