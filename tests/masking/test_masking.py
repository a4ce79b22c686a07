#!/usr/bin/env python3
"""Secret masking in every sink (issue 3 item 6, issue 9 item 7): secrets planted in the environment
(the API key), in .env (another credential), in server responses (tokens, echoed key, a header) and
in error messages must not appear, in any derived form (raw, base64 with and without padding,
URL-encoded, JSON-escaped, Basic header form), in stdout, stderr (-vvv HTTP traces), JUnit, JSON,
TAP or the evidence record; "***" must.

Three parts: the full case (leaky_case.lua, every report written); the split case (split_case.lua:
each secret cut across two reads, two output chunks a scenario writes, and the ends of traced
excerpts; not even a half of a secret may show); and RUNS runs of the leaky case, four at a time,
none of which may leak (masking must not depend on timing). Usage: test_masking.py ABXLUA [RUNS]"""
import base64, concurrent.futures, glob, json, os, subprocess, sys, tempfile, urllib.parse
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import leaky_api
from abxtest import secret_forms as forms, check, finish, project, remote_config

abx = os.path.abspath(sys.argv[1])
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 50
here = os.path.dirname(os.path.abspath(__file__))

rnd = os.urandom(6).hex()
secrets = {"key": "e2b_" + rnd + "0123456789abcdef",
           "envd": "envd/tok+" + rnd + "==x",
           "traffic": "traffic" + rnd + "ffffeeee",
           "dotenv": "dot/env+secret" + rnd}
srv = leaky_api.start(secrets)
port = srv.server_address[1]

proj = project(remote_config("leaky"))
with open(os.path.join(proj, ".env"), "w") as f:
    f.write("# planted\nexport MY_SERVICE_TOKEN='%s'\n" % secrets["dotenv"])
env = dict(os.environ, ABX_SANDBOX_API_KEY=secrets["key"],
           ABX_SANDBOX_BASE_URL="http://127.0.0.1:%d" % port,
           E2B_SANDBOX_URL="http://127.0.0.1:%d" % port, NO_COLOR="1")

def run(case, reports):
    """Runs one case with -vvv; returns (exit code, {sink name: text})."""
    out_dir = tempfile.mkdtemp(dir=proj)
    cmd = [abx, "run", os.path.join(here, case), "-vvv", "-r", "a"]
    if reports:
        cmd += ["--junit", os.path.join(out_dir, "junit.xml"), "--json",
                os.path.join(out_dir, "run.json"), "--tap", os.path.join(out_dir, "run.tap"),
                "--evidence", os.path.join(out_dir, "evidence")]
    p = subprocess.run(cmd, cwd=proj, env=env, capture_output=True, text=True, timeout=120)
    sinks = {"stdout": p.stdout, "stderr": p.stderr}
    for path in glob.glob(os.path.join(out_dir, "**", "*"), recursive=True):
        if os.path.isfile(path):
            sinks[os.path.relpath(path, out_dir)] = open(path, encoding="utf-8",
                                                         errors="replace").read()
    return p.returncode, sinks


def leaks(sinks, halves=False):
    """[(secret, form, [sinks])] for every form found; with halves, each raw half counts too."""
    found = []
    for name, value in secrets.items():
        fs = forms(value)
        if halves:
            fs["first half"], fs["second half"] = value[:len(value) // 2], value[len(value) // 2:]
        for form, text in fs.items():
            where = [sink for sink, content in sinks.items() if text in content]
            if where:
                found.append((name, form, where))
    return found

def check_no_leak(sinks, halves=False):
    found = {(n, f): w for n, f, w in leaks(sinks, halves)}
    for name in secrets:
        for form in list(forms("x")) + (["first half", "second half"] if halves else []):
            where = found.get((name, form))
            check(not where, "%s (%s form) appears in no sink%s" % (name, form,
                  (": found in " + ", ".join(where)) if where else ""))

print("== full case: every sink")
code, sinks = run("leaky_case.lua", True)
print(sinks["stdout"][-2000:])
check(code == 1, "the run failed as planned (exit %d)" % code)
check(len(sinks) >= 6, "console, traces and four reports were written (%s)" % ", ".join(sorted(sinks)))
check("abxlua: http" in sinks["stderr"], "-vvv traces were written")
check_no_leak(sinks)
check(all("***" in sinks[k] for k in ("stdout", "stderr")), "*** stands where the secrets were")

print("== split case: each secret cut in two")
code, sinks = run("split_case.lua", True)
print(sinks["stdout"][-1500:])
check(code == 1, "the run failed as planned (exit %d)" % code)
check("body: " in sinks["stderr"] and "x-long: " in sinks["stderr"],
      "the excerpt and the long header were traced")
check(sinks["stdout"].count("***") >= 2 * len(secrets), "the chunks the scenario wrote were masked")
check_no_leak(sinks, halves=True)

print("== %d runs of the leaky case, four at a time" % runs)
with concurrent.futures.ThreadPoolExecutor(4) as pool:
    results = list(pool.map(lambda i: run("leaky_case.lua", False), range(runs)))
bad = [(i, leaks(s)) for i, (c, s) in enumerate(results) if c != 1 or leaks(s)]
for i, found in bad[:5]:
    print("  run %d: exit %d, leaked %s" % (i, results[i][0], found))
check(not bad, "%d of %d runs leaked nothing" % (runs - len(bad), runs))
srv.shutdown()
finish()
