#!/usr/bin/env python3
"""check_reports.py: the reports of `abxlua run` (--junit, --json, --tap, --evidence), the short
test summary (-r), -x, the live status line, secret masking in every sink, sharding, and the
issue-23 fields of the JSON (output, started, worker, trace, reproducer, sandboxes).

    check_reports.py ABXLUA MODE        (run from the source root; MODE below)

Modes: outputs, known_issues, secret, hostile, console, shard, schema_tools.
Each mode runs abxlua on scenario files with known outcomes (tests/runner/, tests/reports/) and
checks what it wrote. Every failed check is listed; exit 0 when all held, 1 otherwise, 77 (skip)
when schema_tools finds xmllint or python3-jsonschema missing.
JUnit is checked against tests/reports/junit.xsd (xmllint) and JSON against
tests/reports/report.schema.json (jsonschema) whenever those tools exist; schema_tools fails the
ctest run (as a skip) when they do not, so a missing tool is visible.
"""
import base64
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
XSD = os.path.join(HERE, "junit.xsd")
SCHEMA = os.path.join(HERE, "report.schema.json")
SUMMARY_RE = re.compile(r"^(\d+) passed, (\d+) failed, (\d+) skipped, (\d+) xfailed(?:, (\d+) errors)? in \d+\.\d{2}s$")

failures = []


def check(cond, what, detail=""):
    if not cond:
        failures.append(what + (": " + detail if detail else ""))
    return cond


class Run:
    def __init__(self, code, out, err):
        self.code, self.out, self.err = code, out, err
        self.lines = out.splitlines()

    def summary(self):
        m = SUMMARY_RE.match(self.lines[-1]) if self.lines else None
        if not m:
            return None
        return {"passed": int(m[1]), "failed": int(m[2]), "skipped": int(m[3]),
                "xfailed": int(m[4]), "errors": int(m[5] or 0)}


def base_env(extra=None):
    env = dict(os.environ)
    env["NO_COLOR"] = "1"
    for k in ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "JENKINS_URL", "E2E_RUN_ID"):
        env.pop(k, None)
    env.update(extra or {})
    return env


def abx(abxlua, args, env=None, timeout=180):
    p = subprocess.run([abxlua] + args, cwd=ROOT, env=base_env(env), capture_output=True,
                       timeout=timeout)
    return Run(p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace"))


def run_with_reports(abxlua, tmp, name, args, env=None):
    """Runs with every report into tmp/name.*; returns (run, paths)."""
    paths = {"junit": os.path.join(tmp, name + ".xml"), "json": os.path.join(tmp, name + ".json"),
             "tap": os.path.join(tmp, name + ".tap"), "evidence": os.path.join(tmp, name + "-ev")}
    r = abx(abxlua, ["run", "--junit", paths["junit"], "--json", paths["json"], "--tap", paths["tap"],
                     "--evidence", paths["evidence"], "--evidence-topic", name] + args, env)
    return r, paths


def read(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8")


def evidence_file(paths, name):
    d = paths["evidence"]
    files = sorted(os.listdir(d)) if os.path.isdir(d) else []
    check(len(files) == 1 and re.match(r"^\d{4}-\d{2}-\d{2}-" + re.escape(name) + r"\.md$", files[0] or ""),
          "evidence: one file DIR/<YYYY-MM-DD>-%s.md" % name, repr(files))
    return os.path.join(d, files[0]) if files else None


def validate_schemas(paths, label):
    if shutil.which("xmllint"):
        p = subprocess.run(["xmllint", "--noout", "--schema", XSD, paths["junit"]], capture_output=True)
        check(p.returncode == 0, label + ": JUnit validates against tests/reports/junit.xsd",
              p.stderr.decode(errors="replace"))
    try:
        import jsonschema
    except ImportError:  # e.g. a pyenv python first on PATH: Debian's python3-jsonschema then
        p = subprocess.run(["/usr/bin/python3", "-c",
                            "import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])),"
                            " json.load(open(sys.argv[2])))", paths["json"], SCHEMA],
                           capture_output=True)
        check(p.returncode == 0, label + ": JSON validates against tests/reports/report.schema.json",
              p.stderr.decode(errors="replace")[-500:])
        return
    with open(SCHEMA) as f:
        schema = json.load(f)
    try:
        jsonschema.validate(json.loads(read(paths["json"])), schema)
    except jsonschema.ValidationError as e:
        check(False, label + ": JSON validates against tests/reports/report.schema.json", e.message)


def junit_cases(root):
    """{(classname, name): testcase element}; duplicates are reported."""
    cases = {}
    for tc in root.iter("testcase"):
        key = (tc.get("classname"), tc.get("name"))
        check(key not in cases, "JUnit: testcase identities are unique", repr(key))
        cases[key] = tc
    return cases


def tap_lines(text):
    lines = text.splitlines()
    results = [l for l in lines if re.match(r"^(not )?ok \d+ - ", l)]
    return lines, results


# --- modes ----------------------------------------------------------------------------------

def mode_outputs(abxlua, tmp):
    r, paths = run_with_reports(abxlua, tmp, "basic", ["tests/runner/outcomes_basic.lua", "-j", "1", "-r", "a"])
    check(r.code == 1, "outputs: exit code 1", str(r.code))
    s = r.summary()
    check(s == {"passed": 1, "failed": 2, "skipped": 2, "xfailed": 0, "errors": 0},
          "outputs: console summary", r.lines[-1] if r.lines else "(no output)")
    # -r a: short test summary before the last line, failed with "Kind: message", skips with reason
    check("=== short test summary info ===" in r.lines, "-r a: a short test summary section", r.out)
    if "=== short test summary info ===" in r.lines:
        sec = r.lines[r.lines.index("=== short test summary info ===") + 1:-1]
        want = [
            "SKIPPED tests/runner/outcomes_basic.lua::skipped by t.skip - not on this platform",
            "SKIPPED tests/runner/outcomes_basic.lua::skipped by opts.skip - declared skip",
            "FAILED tests/runner/outcomes_basic.lua::assertion fails - Assertion: expected 2, got 1",
            "FAILED tests/runner/outcomes_basic.lua::plain Lua error fails - LuaError: "
            "tests/runner/outcomes_basic.lua:26: attempt to index a nil value (local 'missing')",
        ]
        check(sec == want, "-r a: the short summary lines (skipped, then failed; no passed)",
              "\n".join(sec))
    # default -r fE: failures only
    d = abx(abxlua, ["run", "tests/runner/outcomes_basic.lua", "-j", "1"])
    sec = d.lines[d.lines.index("=== short test summary info ===") + 1:-1] \
        if "=== short test summary info ===" in d.lines else []
    check(len(sec) == 2 and all(l.startswith("FAILED ") for l in sec),
          "-r fE (default): only the two FAILED lines", "\n".join(sec))
    n = abx(abxlua, ["run", "tests/runner/outcomes_basic.lua", "-j", "1", "-r", "N"])
    check("=== short test summary info ===" not in n.lines, "-r N: no short summary")
    bad = abx(abxlua, ["run", "tests/runner/outcomes_basic.lua", "-r", "fQ"])
    check(bad.code == 4 and "unknown character" in bad.err, "-r fQ: usage error, exit 4",
          "%d %s" % (bad.code, bad.err))

    # JUnit
    try:
        root = ET.parse(paths["junit"]).getroot()
    except (ET.ParseError, OSError) as e:
        check(False, "JUnit: parses", str(e))
        return
    check(root.tag == "testsuites", "JUnit: root <testsuites>", root.tag)
    suites = root.findall("testsuite")
    check(len(suites) == 1 and suites[0].get("name") == "tests/runner/outcomes_basic.lua",
          "JUnit: one testsuite named after the file", repr([x.get("name") for x in suites]))
    su = suites[0]
    for attr, want in (("tests", "5"), ("failures", "2"), ("errors", "0"), ("skipped", "2")):
        check(su.get(attr) == want and root.get(attr) == want, "JUnit: %s=%s" % (attr, want),
              "%s / %s" % (su.get(attr), root.get(attr)))
    check(re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$", su.get("timestamp") or ""),
          "JUnit: ISO-8601 UTC timestamp", str(su.get("timestamp")))
    check(bool(su.get("hostname")) and re.match(r"^\d+\.\d+$", su.get("time") or ""),
          "JUnit: hostname and time", str(su.attrib))
    props = {p.get("name"): p.get("value") for p in su.iter("property")}
    for k in ("provider", "endpoint", "run_id", "selection", "engine_version", "git_commit"):
        check(bool(props.get(k)), "JUnit: property " + k, repr(props))
    check(props.get("provider") == "local", "JUnit: provider local", repr(props.get("provider")))
    cases = junit_cases(root)
    cn = "tests.runner.outcomes_basic"
    tc = cases.get((cn, "assertion fails"))
    check(tc is not None and tc.get("file") == "tests/runner/outcomes_basic.lua" and tc.get("line") == "19",
          "JUnit: testcase classname/name/file/line", repr(tc.attrib if tc is not None else list(cases)))
    f = tc.find("failure") if tc is not None else None
    check(f is not None and f.get("type") == "Assertion" and "expected 2, got 1" in (f.get("message") or ""),
          "JUnit: <failure type=Assertion message=...>")
    f = cases.get((cn, "plain Lua error fails"))
    f = f.find("failure") if f is not None else None
    check(f is not None and f.get("type") == "LuaError" and "stack traceback" in (f.text or ""),
          "JUnit: LuaError failure carries the traceback")
    sk = cases.get((cn, "skipped by t.skip"))
    sk = sk.find("skipped") if sk is not None else None
    check(sk is not None and sk.get("message") == "not on this platform", "JUnit: <skipped message=reason>")
    ok = cases.get((cn, "passes"))
    check(ok is not None and len(list(ok)) == 0, "JUnit: a passed testcase is empty")

    # JSON
    try:
        doc = json.loads(read(paths["json"]))
    except (ValueError, OSError) as e:
        check(False, "JSON: parses", str(e))
        return
    c = doc.get("counts", {})
    check({k: c.get(k) for k in ("passed", "failed", "skipped", "xfailed", "errors")} == s,
          "JSON: counts match the console summary", "%r vs %r" % (c, s))
    check(doc.get("provider") == "local" and doc.get("run_id") == props.get("run_id")
          and doc.get("interrupted") is False and doc.get("endpoint", "").startswith("http"),
          "JSON: provider, run_id, endpoint, interrupted", repr({k: doc.get(k) for k in ("provider", "run_id", "endpoint")}))
    tests = {t["name"]: t for t in doc.get("tests", [])}
    check(len(tests) == 5, "JSON: 5 tests", repr(list(tests)))
    a = tests.get("assertion fails", {})
    check(a.get("outcome") == "failed" and (a.get("error") or {}).get("kind") == "Assertion"
          and "expected 2, got 1" in (a.get("error") or {}).get("message", ""),
          "JSON: failed test with error kind and message", repr(a))
    p = tests.get("passes", {})
    check(p.get("markers") == ["e2e", "e2e_slow"] and p.get("sandboxes") == [] and p.get("error") is None,
          "JSON: markers, empty sandbox list ([] not {}), null error", repr(p))
    check(isinstance(doc.get("cleanup"), dict) and doc["cleanup"].get("errors") == [],
          "JSON: cleanup with an empty error list", repr(doc.get("cleanup")))
    # issue 23: output, started, worker, trace (retain-on-failure: failed tests only), reproducer
    # (none: no error came from an HTTP answer), the top-level sandboxes (none made here)
    check(all(t.get("worker") == 1 and isinstance(t.get("started"), (int, float)) and "output" in t
              and t.get("reproducer") is None for t in tests.values()),
          "JSON: every test has worker 1 (-j 1), started, output and a null reproducer", repr(p))
    check(a.get("trace") == [] and p.get("trace") is None,
          "JSON: a failed test's trace is kept (empty: no HTTP), a passed test's is null",
          repr((a.get("trace"), p.get("trace"))))
    check(doc.get("sandboxes") == [], "JSON: top-level sandboxes, empty", repr(doc.get("sandboxes")))

    # TAP
    lines, res = tap_lines(read(paths["tap"]))
    check(lines[:2] == ["TAP version 13", "1..5"], "TAP: version line and plan 1..5", repr(lines[:2]))
    want = ["ok 1 - tests/runner/outcomes_basic.lua::passes",
            "not ok 2 - tests/runner/outcomes_basic.lua::assertion fails",
            "not ok 3 - tests/runner/outcomes_basic.lua::plain Lua error fails",
            "ok 4 - tests/runner/outcomes_basic.lua::skipped by t.skip # SKIP not on this platform",
            "ok 5 - tests/runner/outcomes_basic.lua::skipped by opts.skip # SKIP declared skip"]
    check(res == want, "TAP: test lines", "\n".join(res))
    check("  ---" in lines and "  kind: 'Assertion'" in lines and "  ..." in lines,
          "TAP: YAML diagnostics for failures")

    # evidence
    ev = evidence_file(paths, "basic")
    if ev:
        text = read(ev)
        for sec in ("## What was verified", "## Command run", "## Results", "## Known issues hit",
                    "## Skipped", "## Failures", "## Cleanup", "## Not verified"):
            check(sec in text, "evidence: section " + sec)
        for needle in ("Result: FAILED (1 passed, 2 failed, 2 skipped, 0 xfailed)",
                       "Provider: local, endpoint http", "Engine: abxlua ", "abxlua run -j 1 -r a --junit ",
                       "skipped by t.skip`: not on this platform", "Assertion: expected 2, got 1",
                       "sandboxes created", "Run id: " + str(props.get("run_id"))):
            check(needle in text, "evidence: mentions " + repr(needle))
    validate_schemas(paths, "outputs")

    # collection and teardown errors reach every report
    r, paths = run_with_reports(abxlua, tmp, "errors", ["tests/runner/syntax_error.lua", "tests/runner/teardown.lua", "-j", "1"])
    s = r.summary() or {}
    check(s.get("errors") == 2, "errors: console counts 2 errors", r.lines[-1] if r.lines else "")
    check(any(l.startswith("ERROR tests/runner/syntax_error.lua (collection) - ") for l in r.lines)
          and any(l.startswith("ERROR tests/runner/teardown.lua::a failing finalizer (teardown) - ") for l in r.lines),
          "-r fE: ERROR lines for the collection and the teardown error", r.out)
    try:
        root = ET.parse(paths["junit"]).getroot()
        errs = [e.get("type") for e in root.iter("error")]
        check(sorted(errs) == ["collection", "teardown"] and root.get("errors") == "2",
              "JUnit: <error type=collection> and <error type=teardown>", repr(errs))
        check(("tests.runner.syntax_error", "tests/runner/syntax_error.lua") in junit_cases(root),
              "JUnit: the collection error is a testcase named after the file")
    except ET.ParseError as e:
        check(False, "JUnit (errors): parses", str(e))
    doc = json.loads(read(paths["json"]))
    check(len(doc["collection_errors"]) == 1 and doc["counts"]["errors"] == 2
          and any(t["teardown_errors"] for t in doc["tests"]),
          "JSON: collection_errors and teardown_errors", repr(doc["collection_errors"]))
    _, res = tap_lines(read(paths["tap"]))
    check(res and res[0] == "not ok 1 - tests/runner/syntax_error.lua (collection error)",
          "TAP: the collection error is a not ok line", repr(res[:1]))
    validate_schemas(paths, "errors")

    # a report that cannot be written: usage error before the run
    r = abx(abxlua, ["run", "tests/runner/outcomes_basic.lua", "--junit", os.path.join(tmp, "no/such/dir/x.xml")])
    check(r.code == 4 and "no such directory" in r.err, "--junit into a missing directory: exit 4",
          "%d %s" % (r.code, r.err))


def mode_known_issues(abxlua, tmp):
    r, paths = run_with_reports(abxlua, tmp, "ki", ["--config", "tests/runner/ki/abxlua.yaml", "-j", "1",
                                                    "-r", "a", "tests/runner/ki_xfail.lua", "tests/runner/ki_xpass.lua"])
    check(r.code == 1, "ki: exit 1 (an XPASS fails the run)", str(r.code))
    check(r.summary() == {"passed": 0, "failed": 2, "skipped": 0, "xfailed": 2, "errors": 0},
          "ki: console summary", r.lines[-1] if r.lines else "")
    check("XFAIL tests/runner/ki_xfail.lua::fails on an assertion - KI-900: Every provider fails this" in r.lines,
          "-r a: XFAIL line with the known issue", r.out)
    check(any(l.startswith("XPASS tests/runner/ki_xpass.lua::now passes - [XPASS(strict)] KI-900: ") for l in r.lines),
          "-r a: XPASS line", r.out)
    root = ET.parse(paths["junit"]).getroot()
    cases = junit_cases(root)
    x = cases.get(("tests.runner.ki_xfail", "fails on an assertion"))
    sk = x.find("skipped") if x is not None else None
    check(sk is not None and sk.get("message") == "xfail: KI-900: Every provider fails this",
          "JUnit: xfailed as <skipped message='xfail: KI-900: title'>", repr(sk.attrib if sk is not None else None))
    xp = cases.get(("tests.runner.ki_xpass", "now passes"))
    f = xp.find("failure") if xp is not None else None
    check(f is not None and f.get("type") == "XPASS" and "[XPASS(strict)] KI-900" in (f.get("message") or ""),
          "JUnit: xpassed as <failure type=XPASS>")
    check(root.get("failures") == "2" and root.get("skipped") == "2", "JUnit: failures=2 skipped=2",
          repr(root.attrib))
    doc = json.loads(read(paths["json"]))
    t = {x["name"]: x for x in doc["tests"]}
    check(t.get("fails on an assertion", {}).get("known_issue") == "KI-900"
          and t["fails on an assertion"]["outcome"] == "xfailed"
          and t.get("fails with the expected kind", {}).get("raises") == "NotFound"
          and t.get("now passes", {}).get("outcome") == "xpassed"
          and doc["counts"]["xpassed"] == 1 and doc["counts"]["xfailed"] == 2,
          "JSON: known_issue, raises, xfailed/xpassed outcomes and counts", json.dumps(doc["counts"]))
    _, res = tap_lines(read(paths["tap"]))
    check("not ok 1 - tests/runner/ki_xfail.lua::fails on an assertion # TODO KI-900: Every provider fails this" in res
          and "not ok 4 - tests/runner/ki_xpass.lua::now passes" in res,
          "TAP: # TODO for xfailed, not ok for XPASS", "\n".join(res))
    ev = evidence_file(paths, "ki")
    if ev:
        text = read(ev)
        sec = text.split("## Known issues hit", 1)[-1].split("##", 1)[0]
        check("KI-900: Every provider fails this" in sec and "XPASS(strict)" in sec and "ki_xfail.lua::fails on an assertion" in sec,
              "evidence: known issues hit lists xfailed and xpassed with id and title", sec)
    validate_schemas(paths, "ki")


def mode_secret(abxlua, tmp):
    key = "e2b_" + secrets.token_hex(20)
    b64 = base64.b64encode(key.encode()).decode()
    r, paths = run_with_reports(abxlua, tmp, "secret", ["tests/reports/secret.lua", "-j", "1", "-r", "A", "-v"],
                                env={"ABX_LOCAL_API_KEY": key})
    check(r.code == 1, "secret: exit 1", "%d\n%s\n%s" % (r.code, r.out, r.err))
    check(r.summary() == {"passed": 1, "failed": 2, "skipped": 1, "xfailed": 0, "errors": 0},
          "secret: console summary", r.lines[-1] if r.lines else "")
    ev = evidence_file(paths, "secret")
    sinks = {"stdout": r.out, "stderr": r.err}
    for k in ("junit", "json", "tap"):
        sinks[k] = read(paths[k]) if os.path.exists(paths[k]) else ""
    if ev:
        sinks["evidence"] = read(ev)
    for name, text in sinks.items():
        check(key not in text, "secret: the key is absent from " + name)
        check(b64 not in text, "secret: the key's base64 form is absent from " + name)
        check(key[4:] not in text, "secret: the key's hex part is absent from " + name)
    for name in ("stdout", "junit", "json", "tap", "evidence"):
        check("***" in sinks.get(name, ""), "secret: *** shows where the key was, in " + name)
    check("the key is ***" in r.out, "secret: the scenario's own output is masked", r.out)
    check("skipped because of ***" in sinks["junit"], "secret: the JUnit skip reason is masked")
    validate_schemas(paths, "secret")


def mode_hostile(abxlua, tmp):
    r, paths = run_with_reports(abxlua, tmp, "hostile", ["tests/reports/hostile.lua", "-j", "1"])
    check(r.summary() == {"passed": 1, "failed": 2, "skipped": 1, "xfailed": 0, "errors": 0},
          "hostile: console summary", r.lines[-1] if r.lines else "")
    try:
        root = ET.parse(paths["junit"]).getroot()
    except (ET.ParseError, OSError) as e:
        check(False, "hostile: JUnit parses", str(e))
        return
    names = sorted(tc.get("name") for tc in root.iter("testcase"))
    check("passes with <xml> & \"quotes\" 'too' # hash" in names, "hostile: markup in a name round-trips", repr(names))
    skip = next(root.iter("skipped"), None)
    msg = skip.get("message") if skip is not None else ""
    check(msg.startswith("<a href=\"x\">&amp; 'q' ]]> ") and "\x01" not in msg and "\x1b" not in msg
          and "tab\there\r\nnew line" in msg and "\ufffd\ufffd ok é 漢" in msg,
          "hostile: attribute keeps markup, tab/CR/LF, drops control characters, replaces bad UTF-8", repr(msg))
    fails = [f.text or "" for f in root.iter("failure")]
    check(len(fails) == 2 and all("]]>" in f for f in fails), "hostile: failure texts keep ]]>", repr(fails))
    try:
        doc = json.loads(read(paths["json"]))
        reasons = [t["reason"] for t in doc["tests"] if t["outcome"] == "skipped"]
        check(len(reasons) == 1 and reasons[0].startswith("<a href=\"x\">") and "\ufffd" in reasons[0],
              "hostile: JSON keeps the reason, bad UTF-8 replaced", repr(reasons))
    except ValueError as e:
        check(False, "hostile: JSON parses", str(e))
    lines, res = tap_lines(read(paths["tap"]))
    check(lines[1] == "1..4" and len(res) == 4, "hostile: TAP plan and 4 test lines", "\n".join(lines))
    check(any(l.startswith("ok 1 - tests/reports/hostile.lua::passes with <xml> & \"quotes\" 'too' \\# hash") for l in res),
          "hostile: TAP escapes # in a description", "\n".join(res))
    skipl = [l for l in res if "# SKIP" in l]
    check(len(skipl) == 1 and "\\# not a directive" in skipl[0], "hostile: TAP skip reason on one line, # escaped",
          repr(skipl))
    for l in lines:
        check(re.match(r"^(TAP version 13|1\.\.\d+|(not )?ok \d+ - .*|  .*|#.*|Bail out!.*)$", l) is not None,
              "hostile: every TAP line is a TAP line", repr(l))
    validate_schemas(paths, "hostile")


def mode_console(abxlua, tmp):
    r = abx(abxlua, ["run", "tests/runner/exitfirst.lua", "-x", "-j", "1"])
    check(r.code == 1, "-x: exit 1", str(r.code))
    check("stopped at the first failure (-x): 1 of 3 tests were not started" in r.lines,
          "-x: says how many tests were not started", r.out)
    check(r.lines and SUMMARY_RE.match(r.lines[-1]), "-x: summary is the last line")
    # live status line on a terminal (script(1) gives the run a pty)
    if not shutil.which("script"):
        check(False, "console: script(1) is needed to test the live status line")
        return
    env = base_env({"COLUMNS": "200", "TERM": "xterm"})
    env.pop("NO_COLOR")
    cmd = "%s run tests/runner/parallel.lua -j 4" % abxlua
    p = subprocess.run(["script", "-qec", cmd, "/dev/null"], cwd=ROOT, env=env, capture_output=True, timeout=180)
    out = p.stdout.decode("utf-8", "replace")
    check(re.search(r"\r\x1b\[K\[\d+/5\] \d+ running \| \d+ passed, 0 failed, 0 skipped, 0 xfailed \| \d+\.\ds", out) is not None,
          "live: a status line redrawn in place (\\r, clear, [done/total], running, counts, elapsed)", repr(out[-600:]))
    plain = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", out).replace("\r\n", "\n")
    last = [l for l in plain.split("\n") if l.strip()][-1].split("\r")[-1]
    check(SUMMARY_RE.match(last) is not None and last.startswith("5 passed"), "live: the summary is still the last line", repr(last))
    check("PASSED " not in plain, "live: passing tests only move the status line", repr(plain[-400:]))
    # failures stay on screen, in colour; NO_COLOR turns colour off
    cmd2 = "%s run tests/runner/outcomes_basic.lua -j 1" % abxlua
    p = subprocess.run(["script", "-qec", cmd2, "/dev/null"], cwd=ROOT, env=env, capture_output=True, timeout=180)
    out = p.stdout.decode("utf-8", "replace")
    check("\x1b[31mFAILED   tests/runner/outcomes_basic.lua::assertion fails" in out,
          "live: failures printed as lines, in colour", repr(out[-600:]))
    env["NO_COLOR"] = "1"
    p = subprocess.run(["script", "-qec", cmd2, "/dev/null"], cwd=ROOT, env=env, capture_output=True, timeout=180)
    out = p.stdout.decode("utf-8", "replace")
    check("\x1b[31m" not in out and "FAILED   tests/runner/outcomes_basic.lua::assertion fails" in out,
          "live: NO_COLOR, no colour", repr(out[-600:]))
    env.pop("NO_COLOR")
    env["CI"] = "true"
    p = subprocess.run(["script", "-qec", cmd, "/dev/null"], cwd=ROOT, env=env, capture_output=True, timeout=180)
    out = p.stdout.decode("utf-8", "replace")
    check("\x1b[K" not in out and out.count("PASSED") == 5, "live: off under CI (one line per test)", repr(out[-400:]))


def list_ids(abxlua, args):
    r = abx(abxlua, ["list"] + args)
    # a file that failed to collect is one shard item too (reported by its own shard only)
    ids = [l.split(" [", 1)[0] for l in r.lines if "::" in l and not l.startswith("ERROR ")]
    ids += ["ERROR " + l.split()[1] for l in r.lines if l.startswith("ERROR ")]
    return r, ids


def mode_shard(abxlua, tmp):
    # tests/runner's files are named one by one (its helpers/ subdirectory is not a case)
    runner_files = sorted(os.path.relpath(os.path.join(ROOT, "tests/runner", f), ROOT)
                          for f in os.listdir(os.path.join(ROOT, "tests/runner")) if f.endswith(".lua"))
    for target in (runner_files + ["tests/reports/shard"], ["tests/reports/shard", "-k", "not gamma"]):
        whole_r, whole = list_ids(abxlua, target)
        check(whole_r.code in (0, 1) and len(whole) > 3, "shard: the unsharded list has tests",
              "exit %d: %s" % (whole_r.code, whole_r.out[-300:]))
        parts = []
        for k in (1, 2, 3):
            r, ids = list_ids(abxlua, target + ["--shard", "%d/3" % k])
            check(r.code in (0, 1) and len(ids) > 0, "shard %d/3 of %s is not empty" % (k, target[-1]),
                  "exit %d" % r.code)
            parts.append(ids)
        union = [i for p in parts for i in p]
        check(len(union) == len(set(union)), "shard: 1/3, 2/3, 3/3 of %s are disjoint" % target[-1])
        check(sorted(union) == sorted(whole), "shard: their union is the unsharded list of %s" % target[-1],
              "%d vs %d" % (len(union), len(whole)))
        check(max(map(len, parts)) - min(map(len, parts)) <= 1, "shard: sizes differ by at most one",
              repr(list(map(len, parts))))
        again = list_ids(abxlua, target + ["--shard", "2/3"])[1]
        check(again == parts[1], "shard: deterministic (2/3 twice gives the same tests)")
    one = list_ids(abxlua, ["tests/reports/shard", "--shard", "1/1"])[1]
    check(sorted(one) == sorted(list_ids(abxlua, ["tests/reports/shard"])[1]), "shard: 1/1 is everything")
    for bad in ("0/3", "4/3", "3", "a/b", "1/0", "-1/3"):
        for cmd in ("list", "run"):
            r = abx(abxlua, [cmd, "tests/reports/shard", "--shard=" + bad])
            check(r.code == 4, "shard: %s --shard %s is a usage error (exit 4)" % (cmd, bad), "%d %s" % (r.code, r.err))
    # JUnit of each shard: a distinct shard property; merged, the testcases are the whole run's
    merged, props = {}, set()
    for k in (1, 2, 3):
        r, paths = run_with_reports(abxlua, tmp, "shard%d" % k, ["tests/reports/shard", "--shard", "%d/3" % k, "-j", "2"])
        check(r.code == 0, "shard %d/3: exit 0" % k, r.out + r.err)
        root = ET.parse(paths["junit"]).getroot()
        for su in root.findall("testsuite"):
            p = {x.get("name"): x.get("value") for x in su.iter("property")}
            check(p.get("shard") == "%d/3" % k, "shard %d/3: suite property shard" % k, repr(p))
            props.add(p.get("shard"))
        for key in junit_cases(root):
            check(key not in merged, "shard: merged JUnit testcases are unique", repr(key))
            merged[key] = k
        doc = json.loads(read(paths["json"]))
        check(doc["selection"]["shard"] == "%d/3" % k, "shard %d/3: JSON selection.shard" % k)
        validate_schemas(paths, "shard%d" % k)
    check(props == {"1/3", "2/3", "3/3"}, "shard: three distinct shard properties", repr(props))
    whole = abx(abxlua, ["run", "tests/reports/shard", "-j", "4", "--junit", os.path.join(tmp, "whole.xml")])
    wroot = ET.parse(os.path.join(tmp, "whole.xml")).getroot()
    check(set(junit_cases(wroot)) == set(merged), "shard: merged shard JUnit == the unsharded run's testcases",
          "%d vs %d" % (len(merged), len(list(wroot.iter("testcase")))))


def mode_schema_tools(abxlua, tmp):
    missing = []
    if not shutil.which("xmllint"):
        missing.append("xmllint (libxml2-utils)")
    try:
        import jsonschema  # noqa: F401
    except ImportError:
        missing.append("python3-jsonschema")
    if missing:
        print("schema validation not possible; missing: " + ", ".join(missing))
        sys.exit(77)
    for f in ("junit.xsd", "report.schema.json"):
        check(os.path.exists(os.path.join(HERE, f)), "schema file tests/reports/" + f)


MODES = {"outputs": mode_outputs, "known_issues": mode_known_issues, "secret": mode_secret,
         "hostile": mode_hostile, "console": mode_console, "shard": mode_shard,
         "schema_tools": mode_schema_tools}


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in MODES:
        print("usage: check_reports.py ABXLUA {%s}" % ",".join(MODES), file=sys.stderr)
        return 2
    abxlua = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="abx-reports-") as tmp:
        MODES[sys.argv[2]](abxlua, tmp)
    if failures:
        for f in failures:
            print("FAILED CHECK: " + f)
        return 1
    print("ok: %s" % sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
