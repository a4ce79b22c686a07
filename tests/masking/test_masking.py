#!/usr/bin/env python3
"""Secret masking in every sink (issue 3 item 6): secrets planted in the environment (the API key),
in .env (another credential), in server responses (tokens, echoed key, a header) and in error
messages must not appear, in any derived form (raw, base64 with and without padding, URL-encoded,
JSON-escaped, Basic header form), in stdout, stderr (-vvv HTTP traces), JUnit, JSON, TAP or the
evidence record; "***" must. Usage: test_masking.py ABXLUA"""
import base64, glob, json, os, subprocess, sys, tempfile, urllib.parse
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import leaky_api

abx = os.path.abspath(sys.argv[1])
here = os.path.dirname(os.path.abspath(__file__))
failures = []

def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)

rnd = os.urandom(6).hex()
secrets = {"key": "e2b_" + rnd + "0123456789abcdef",
           "envd": "envd/tok+" + rnd + "==x",
           "traffic": "traffic" + rnd + "ffffeeee",
           "dotenv": "dot/env+secret" + rnd}
srv = leaky_api.start(secrets)
port = srv.server_address[1]

proj = tempfile.mkdtemp()
os.makedirs(os.path.join(proj, "config"))
with open(os.path.join(proj, "config", "abxlua.yaml"), "w") as f:
    f.write("provider: leaky\nproviders:\n  leaky:\n    kind: remote\n    envd_routing: headers\n"
            "    domain: localhost\n")
with open(os.path.join(proj, ".env"), "w") as f:
    f.write("# planted\nexport MY_SERVICE_TOKEN='%s'\n" % secrets["dotenv"])
out_dir = os.path.join(proj, "out")
os.makedirs(out_dir)
env = dict(os.environ, ABX_SANDBOX_API_KEY=secrets["key"],
           ABX_SANDBOX_BASE_URL="http://127.0.0.1:%d" % port,
           E2B_SANDBOX_URL="http://127.0.0.1:%d" % port, NO_COLOR="1")
cmd = [abx, "run", os.path.join(here, "leaky_case.lua"), "-vvv", "-r", "a",
       "--junit", os.path.join(out_dir, "junit.xml"), "--json", os.path.join(out_dir, "run.json"),
       "--tap", os.path.join(out_dir, "run.tap"), "--evidence", os.path.join(out_dir, "evidence")]
p = subprocess.run(cmd, cwd=proj, env=env, capture_output=True, text=True, timeout=120)
sinks = {"stdout": p.stdout, "stderr": p.stderr}
for path in glob.glob(os.path.join(out_dir, "**", "*"), recursive=True):
    if os.path.isfile(path):
        sinks[os.path.relpath(path, out_dir)] = open(path, encoding="utf-8", errors="replace").read()
print(p.stdout[-2000:])
check(p.returncode == 1, "the run failed as planned (exit %d)" % p.returncode)
check(len(sinks) >= 6, "console, traces and four reports were written (%s)" % ", ".join(sorted(sinks)))
check("abxlua: http" in p.stderr, "-vvv traces were written")

def forms(s):
    b = base64.b64encode(s.encode()).decode()
    basic = base64.b64encode((s + ":").encode()).decode()
    return {"raw": s, "base64": b, "base64-unpadded": b.rstrip("="),
            "url": urllib.parse.quote(s, safe=""), "json": json.dumps(s)[1:-1].replace("/", "\\/"),
            "basic": basic, "basic-unpadded": basic.rstrip("=")}

for name, value in secrets.items():
    for form, text in forms(value).items():
        leaked = [sink for sink, content in sinks.items() if text in content]
        check(not leaked, "%s (%s form) appears in no sink%s" % (name, form,
              (": found in " + ", ".join(leaked)) if leaked else ""))
check(all("***" in sinks[k] for k in ("stdout", "stderr")), "*** stands where the secrets were")
srv.shutdown()
print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
