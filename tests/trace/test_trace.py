#!/usr/bin/env python3
"""Per-test traces and reproducers (issue 23 items 1 and 2; docs/reports/traces.md).

Runs tests/trace/trace_case.lua against the local platform: a test that fails on a 404 after a
few calls (a write whose body holds a planted secret, a port request whose header holds it, a
read of a missing file whose path goes in the query string), a passing one and one making many
requests. Checks, in the JSON report: the failed test's trace (full URL with query, request and
response bodies bounded, status, sandbox id, error kind), its curl reproducer (shell-valid,
credentials as $VARIABLES), output / started / worker and the top-level sandboxes; the passing
test has no trace under the default (retain-on-failure) and one with --trace on; the many-requests
test keeps the first 50 and the last 150 exchanges and counts the others; --trace off keeps
nothing; a bad mode (flag or config) is a usage error naming the valid ones; -vv lines name the
test and carry the query. The planted secret appears, in no form, in no report nor the console.
Needs root and bubblewrap (exit 77 otherwise). Usage: test_trace.py ABXLUA"""
import glob, json, os, shlex, subprocess, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import secret_forms, check, finish, needs_platform

abx = os.path.abspath(sys.argv[1])
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASE = "tests/trace/trace_case.lua"
FAILED, PASSED, MANY = CASE + "::fails on a missing file", CASE + "::passes after one call", \
    CASE + "::makes many requests"
needs_platform()
SECRET = "tr4ce/" + os.urandom(6).hex() + "+x"
MANY_N = 260
tmp = tempfile.mkdtemp()


def run(name, *args, extra_env=None):
    """Runs the case with every report into tmp/name.*; returns (proc, {sink: text}, json doc)."""
    env = dict(os.environ, NO_COLOR="1", TRACE_PLANTED_TOKEN=SECRET, TRACE_MANY=str(MANY_N))
    for k in ("CI", "GITHUB_ACTIONS", "E2E_RUN_ID"):
        env.pop(k, None)
    env.update(extra_env or {})
    base = os.path.join(tmp, name)
    p = subprocess.run([abx, "run", "-j", "3", "--json", base + ".json", "--junit", base + ".xml",
                        "--tap", base + ".tap", "--html", base + ".html", "--evidence", base + "-ev"]
                       + list(args) + [CASE],
                       cwd=ROOT, env=env, capture_output=True, timeout=240)
    sinks = {"stdout": p.stdout.decode("utf-8", "replace"), "stderr": p.stderr.decode("utf-8", "replace")}
    for path in [base + ".json", base + ".xml", base + ".tap", base + ".html"] + glob.glob(base + "-ev/*"):
        if os.path.exists(path):
            sinks[os.path.basename(path)] = open(path, encoding="utf-8", errors="replace").read()
    doc = json.loads(sinks[name + ".json"]) if name + ".json" in sinks else {"tests": []}
    return p, sinks, doc


def by_id(doc):
    return {t["id"]: t for t in doc["tests"]}


def no_leak(sinks, label):
    found = ["%s (%s) in %s" % (form, text, s) for form, text in secret_forms(SECRET).items()
             for s, content in sinks.items() if text in content]
    check(not found, "%s: the planted secret appears nowhere %s" % (label, found[:3]))


def validate(doc, label):
    try:
        import jsonschema
    except ImportError:
        print("note: python3-jsonschema missing, schema not checked")
        return
    schema = json.load(open(os.path.join(ROOT, "tests", "reports", "report.schema.json")))
    try:
        jsonschema.validate(doc, schema)
        check(True, label + ": JSON validates against the schema")
    except jsonschema.ValidationError as e:
        check(False, label + ": JSON validates against the schema: " + e.message[:300])


def body_ok(b):
    return b is None or (b["length"] >= 0 and (b["text"] is None or len(b["text"].encode()) <= 4096))


# --- the default: retain-on-failure ---------------------------------------------------------------
p, sinks, doc = run("default", "-vv")
check(p.returncode == 1, "default run exits 1 (one failure), got %d: %s" % (p.returncode, sinks["stderr"][-400:]))
tests = by_id(doc)
f = tests.get(FAILED, {})
tr = f.get("trace") or []
check(len(tr) >= 4, "the failed test has a trace of its exchanges (%d)" % len(tr))
miss = [e for e in tr if "missing%20dir" in e["url"]]
check(len(miss) == 1 and "?path=%2Fhome%2Fuser%2Fmissing%20dir%2Fnope.txt" in miss[0]["url"]
      and "username=user" in miss[0]["url"], "the failing read is traced with its full URL and query")
if miss:
    m = miss[0]
    check(m["status"] == 404 and m["error"] == "NotFound" and m["method"] == "GET",
          "its status 404 and error kind NotFound (%s %s)" % (m["status"], m["error"]))
    check(m["sandbox"] is not None and m["sandbox"] in f.get("sandboxes", []),
          "its sandbox id is the test's sandbox (%s)" % m["sandbox"])
    rb = (m["response"] or {}).get("body") or {}
    check("does not exist" in (rb.get("text") or ""), "its response body excerpt is kept")
    check(m["attempt"] == 1 and m["duration"] >= 0 and m["start"] >= 0, "attempt, duration, start")
writes = [e for e in tr if e["method"] == "POST" and "trace-note.txt" in e["url"]]
check(len(writes) == 1 and "note body with" in ((writes[0]["request"]["body"] or {}).get("text") or ""),
      "the write's request body excerpt is kept")
check(all(body_ok(e["request"]["body"]) and body_ok((e["response"] or {}).get("body")) for e in tr),
      "every body excerpt is bounded to 4096 bytes")
creds = [v for e in tr for k, v in e["request"]["headers"].items()
         if k.lower() in ("x-api-key", "x-access-token", "x-planted")]
check(creds and all(v == "***" for v in creds), "API key, envd token and planted header masked (%s)" % creds[:4])
rep = f.get("reproducer") or ""
check(rep.startswith("curl ") and "$ENVD_ACCESS_TOKEN" in rep and "missing%20dir" in rep,
      "the reproducer is a curl line with $-variables for credentials: " + rep[:200])
check(subprocess.run(["bash", "-n", "-c", rep]).returncode == 0 and
      any(a.endswith("username=user") for a in shlex.split(rep)), "the reproducer is valid shell")
check("reproduce: curl " in sinks["stdout"], "the console prints the reproducer under the failure")
page = sinks.get("default.html", "")
check("?path=%2Fhome%2Fuser%2Fmissing%20dir%2Fnope.txt&amp;username=user" in page
      and "does not exist" in page and "note body with" in page,
      "the HTML page shows the failed test's exchanges: full URL with query, both bodies")
check("curl " in page and "$ENVD_ACCESS_TOKEN" in page, "the HTML page shows the reproducer")
check("writing the note of" in (f.get("output") or ""), "the failed test's captured output is in the JSON")
AWK = CASE + "::prints a reproducer with awkward quoting"
line = ((tests.get(AWK) or {}).get("output") or "").strip()
args = subprocess.run(["bash", "-c", 'curl() { printf "%s\\n" "$@"; }; E2B_ACCESS_TOKEN=tok; ' + line],
                      capture_output=True, text=True).stdout
want = ["-sS", "-i", "-X", "POST", "-H", "Authorization: Bearer tok", "-H", "X-Note: it's \"q\" $HOME",
        "--data-binary", "body 'with' $HOME `x`\n", "http://127.0.0.1:9/x?a=1&b='q'"]
check(args == "".join(w + "\n" for w in want),
      "a shell given the reproducer passes curl each header, the body and the URL unchanged, the "
      "token from $E2B_ACCESS_TOKEN: %r (line %r)" % (args, line))
ps = tests.get(PASSED, {})
check(PASSED in tests and ps.get("trace") is None and ps.get("reproducer") is None,
      "a passing test has no trace by default")
check(all(isinstance(t["started"], (int, float)) and t["worker"] in (1, 2, 3) for t in doc["tests"]),
      "every test has started and worker 1..3")
sbx = doc.get("sandboxes") or []
check(len(sbx) == 3 and {s["test"] for s in sbx} == {FAILED, PASSED, MANY}
      and all(s["killed"] is not None and s["killed"] >= s["created"] and s["template"] for s in sbx),
      "the top-level sandboxes list each test's sandbox and its life")
err = sinks["stderr"]
check("[%s] GET http" % FAILED in err and "/files?path=%2Fhome%2Fuser%2Fmissing%20dir" in err,
      "-vv lines name the test and carry the query")
check("trace:" in sinks["default.xml"] and "reproduce: curl" in sinks["default.xml"],
      "the JUnit system-out carries the trace and the reproducer")
validate(doc, "default")
no_leak(sinks, "default")

# --- --trace on: every test, bounded ---------------------------------------------------------------
p, sinks, doc = run("on", "--trace", "on")
tests = by_id(doc)
check(tests.get(PASSED, {}).get("trace"), "with --trace on a passing test has a trace")
own = [(t["id"], e["sandbox"]) for t in doc["tests"] for e in (t["trace"] or [])
       if e["sandbox"] not in t["sandboxes"]]
check(not own and len(doc["tests"]) == 4,
      "under -j 3 each test's trace holds only its own sandbox's exchanges (%s)" % own[:3])
many = tests.get(MANY, {})
mt = many.get("trace") or []
total = MANY_N + 2  # the create and the kill
check(len(mt) == 200 and many.get("trace_dropped") == total - 200,
      "a test with %d exchanges keeps 200 and counts %d dropped (kept %d, dropped %s)"
      % (total, total - 200, len(mt), many.get("trace_dropped")))
check(mt and mt[0]["method"] == "POST" and mt[-1]["method"] == "DELETE" and "i=1" not in mt[-2]["url"]
      and mt[-2]["url"].endswith("i=%d" % MANY_N), "the first and the last exchanges are the kept ones")
validate(doc, "on")
no_leak(sinks, "on")

# --- --trace off, bad modes ---------------------------------------------------------------------------
p, sinks, doc = run("off", "--trace", "off")
f = by_id(doc).get(FAILED, {})
check(FAILED in by_id(doc) and f.get("trace") is None and f.get("reproducer") is None,
      "with --trace off nothing is kept")
p, sinks, _ = run("bad", "--trace", "always")
check(p.returncode == 4 and "off, on, retain-on-failure" in sinks["stderr"],
      "--trace always is a usage error naming the valid modes: " + sinks["stderr"][-200:])
proj = tempfile.mkdtemp()
os.makedirs(os.path.join(proj, "config"))
with open(os.path.join(proj, "config", "abxlua.yaml"), "w") as fh:
    fh.write("defaults:\n  trace: sometimes\n")
q = subprocess.run([abx, "run", "--config", os.path.join(proj, "config", "abxlua.yaml"), CASE], cwd=ROOT,
                   capture_output=True, timeout=60)
msg = q.stderr.decode("utf-8", "replace")
check(q.returncode == 4 and "defaults.trace" in msg and "retain-on-failure" in msg,
      "defaults.trace: sometimes is a config error naming the valid modes: " + msg[-200:])
finish()
