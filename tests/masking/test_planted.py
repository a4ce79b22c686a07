#!/usr/bin/env python3
"""Planted secrets are masked from the first byte, whatever the provider or the selection (issue 22
item 2).

Values are planted under every variable the run must register: the credential variables of every
provider (E2B_API_KEY, ABX_SANDBOX_API_KEY, E2B_ACCESS_TOKEN, ABX_SANDBOX_ACCESS_TOKEN, the Alibaba
AK/SK, a `credential_env` name of an entry the run does not use), names holding KEY, TOKEN,
PASSWORD, PRIVATE (GITHUB_TOKEN, OPENAI_API_KEY, MY_SERVICE_PASSWORD, ...) in the environment, .env
and scenarios/.env. planted_case.lua prints them at collection, in a test's output and failure, and
through a sandbox command; nothing calls t.secret first. Each of the providers `local`, `local
--flavor opensandbox` and a remote one (a serve this test starts) is run with `-k NAME -s -j 4`,
with one node id, whole with -vv, and with --lf; no value may appear, raw or derived (base64 with and without
padding, URL-encoded, JSON-escaped, the Basic form), in the console, JUnit, JSON, TAP, evidence or
the run's serve log. A project with a `secrets:` section adds a name and a pattern and exempts a
name; a value shorter than 8 characters is not registered. Last, the serve log of a run whose
domain holds a secret (serve names its domain in its log) is masked. Needs root and bubblewrap (exit 77 otherwise). Usage: test_planted.py ABXLUA"""
import base64, glob, json, os, subprocess, sys, tempfile, urllib.parse
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import secret_forms as forms, check, finish, needs_platform, project, start_serve

abx = os.path.abspath(sys.argv[1])
here = os.path.dirname(os.path.abspath(__file__))
needs_platform()
rnd = os.urandom(5).hex()


def value(tag):
    """A planted value: '/' and '+' make its URL and JSON forms differ from the raw one."""
    return "pl4nt/%s+%s%s" % (tag, rnd, os.urandom(3).hex())


env_secrets = {n: value(n[:6].lower()) for n in (
    "E2B_API_KEY", "E2B_ACCESS_TOKEN", "ABX_SANDBOX_ACCESS_TOKEN", "ALIBABA_CLOUD_ACCESS_KEY_ID",
    "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "GITHUB_TOKEN", "OPENAI_API_KEY", "MY_SERVICE_PASSWORD",
    "DEPLOY_PRIVATE_PEM", "OTHER_CLOUD_APIPASS")}
# the remote provider's key: the test's serve takes it as its own (ABX_LOCAL_API_KEY's format)
env_secrets["ABX_SANDBOX_API_KEY"] = "e2b_" + os.urandom(16).hex()
dotenv_secrets = {"DOTENV_DB_PASSWD": value("dotenv")}
scen_dotenv_secrets = {"SCEN_CREDENTIAL_BLOB": value("scenenv")}
planted = dict(env_secrets, **dotenv_secrets, **scen_dotenv_secrets)




def leaks(sinks, secrets):
    """['NAME (form) in sink, ...'] for every form of every secret found in a sink."""
    found = []
    for name, v in secrets.items():
        for form, text in forms(v).items():
            where = [s for s, content in sinks.items() if text in content]
            if where:
                found.append("%s (%s) in %s" % (name, form, ", ".join(where)))
    return found


serve_env = dict(os.environ, ABX_LOCAL_API_KEY=env_secrets["ABX_SANDBOX_API_KEY"])
serve_proc, ready = start_serve(abx, env=serve_env)
url = ready["url"]

OPENSANDBOX = ("  opensandbox:\n    kind: remote\n    flavor: opensandbox\n    protocol: opensandbox\n"
               "    api_url: http://localhost:8080/v1\n    domain: localhost\n"
               "    envd_routing: headers\n    auth_header: OPEN-SANDBOX-API-KEY\n"
               "    create: {mode: poll, deadline: 120, interval: 1}\n"
               "    ttl: {mode: expires_at, min: 60}\n    pagination: page\n"
               "    capabilities: [pause, api_key_check, env_vars]\n")
CONFIG = ("provider: local\nproviders:\n  local:\n    kind: local\n    domain: localhost\n"
          "    envd_routing: headers\n" + OPENSANDBOX +
          "  planted-remote:\n    kind: remote\n    api_url: %s\n    domain: localhost\n"
          "    envd_routing: headers\n"
          # an entry the run does not use: its credential_env is registered all the same
          "  other-cloud:\n    kind: remote\n    api_url: https://other.invalid\n"
          "    domain: other.invalid\n    credential_env: [OTHER_CLOUD_APIPASS]\n" % url)


def make_project(config, extra_env=None):
    proj = project(config)
    with open(os.path.join(proj, ".env"), "w") as f:
        f.write("".join("%s=%s\n" % kv for kv in dotenv_secrets.items()))
    os.makedirs(os.path.join(proj, "scenarios"))
    with open(os.path.join(proj, "scenarios", ".env"), "w") as f:
        f.write("".join("export %s='%s'\n" % kv for kv in scen_dotenv_secrets.items()))
    return proj


proj = make_project(CONFIG)
state = os.path.join(proj, "state")
base_env = dict(os.environ, NO_COLOR="1", XDG_STATE_HOME=state, E2B_SANDBOX_URL=url,
                PLANTED_NAMES=",".join(planted), **env_secrets)
for k in ("ABX_PROVIDER", "ABX_FLAVOR", "ABX_CONFIG", "E2B_API_URL", "ABX_SANDBOX_BASE_URL"):
    base_env.pop(k, None)
case = os.path.join(here, "planted_case.lua")


def run(label, args, proj=proj, env=None):
    """Runs the case with every report; returns (exit code, {sink: text})."""
    out = tempfile.mkdtemp(dir=proj)
    run_id = "planted" + os.urandom(4).hex()
    cmd = [abx, "run", *args, "-r", "a", "--junit", os.path.join(out, "junit.xml"),
           "--json", os.path.join(out, "run.json"), "--tap", os.path.join(out, "run.tap"),
           "--evidence", os.path.join(out, "evidence")]
    env = dict(env or base_env, E2E_RUN_ID=run_id)
    p = subprocess.run(cmd, cwd=proj, env=env, capture_output=True, text=True, timeout=240)
    sinks = {"console": p.stdout, "stderr": p.stderr}
    for path in glob.glob(os.path.join(out, "**", "*"), recursive=True):
        if os.path.isfile(path):
            sinks[os.path.relpath(path, out)] = open(path, encoding="utf-8",
                                                     errors="replace").read()
    for log in glob.glob(os.path.join(env["XDG_STATE_HOME"], "abxlua", "serve-%s.log" % run_id)):
        sinks["serve log"] = open(log, encoding="utf-8", errors="replace").read()
    print("== %s: exit %d, sinks %s" % (label, p.returncode, ", ".join(sorted(sinks))))
    return p.returncode, sinks


PROVIDERS = [("local", ["--provider", "local"]),
             ("local --flavor opensandbox", ["--provider", "local", "--flavor", "opensandbox"]),
             ("remote", ["--provider", "planted-remote"])]
SELECTIONS = [("-k -s -j 4", [case, "-k", "prints the planted", "-s", "-j", "4"], 1),
              ("one node id", [case + "::a sandbox command prints them"], 1),
              ("whole file -j 4 -vv", [case, "-j", "4", "-vv"], 3),
              ("--lf", [case, "--lf"], 2)]
for pname, pargs in PROVIDERS:
    for sname, sargs, ntests in SELECTIONS:
        label = "%s, %s" % (pname, sname)
        code, sinks = run(label, sargs + pargs)
        found = leaks(sinks, planted)
        for f in found[:6]:
            print("   leaked: " + f)
        check(code == 1 and "***" in sinks["console"],
              "%s: the run failed as planned, with *** in the console (exit %d)" % (label, code))
        check(", %d tests, " % ntests in sinks["console"], "%s: %d test(s) selected" % (label, ntests))
        check(all(k in sinks for k in ("junit.xml", "run.json", "run.tap")),
              "%s: every report was written" % label)
        if pname.startswith("local"):
            check("serve log" in sinks, "%s: the run's serve log was kept" % label)
        check(not found, "%s: no planted value in any sink (%d found)" % (label, len(found)))

print("== the `secrets:` section: an added name and pattern, an exemption, the 8-byte floor")
extra = {"CORP_VAULT_BLOB": value("corp"), "ACME_CERTBLOB": value("acme")}
exempt = {"BUILD_KEY_ID": value("keyid")}
short = {"MY_SHORT_TOKEN": "ab+1234", "MY_EIGHT_TOKEN": "ab+12345"}
sec_proj = make_project("provider: local\nsecrets:\n  names: [CORP_VAULT_BLOB]\n"
                        "  patterns: [certblob]\n  exempt: [BUILD_KEY_ID]\n")
sec_env = dict(base_env, **extra, **exempt, **short,
               PLANTED_NAMES=",".join(list(extra) + list(exempt) + list(short)))
code, sinks = run("secrets section", [case, "-k", "prints the planted"], sec_proj, sec_env)
console = sinks["console"]
found = leaks(sinks, dict(extra, MY_EIGHT_TOKEN=short["MY_EIGHT_TOKEN"]))
check(code == 1, "the run failed as planned (exit %d): %s" % (code, console[-400:]))
check(not found, "the added name and pattern and an 8-character value are masked (%s)" % found)
check("BUILD_KEY_ID=" + exempt["BUILD_KEY_ID"] in console, "the exempted name is printed as is")
check("MY_SHORT_TOKEN=ab+1234\n" in console, "a 7-character value is not registered")

print("== a bad `secrets:` section is a usage error naming the valid keys")
bad = make_project("provider: local\nsecrets:\n  name: [X]\n")
p = subprocess.run([abx, "run", case], cwd=bad, env=base_env,
                   capture_output=True, text=True, timeout=60)
check(p.returncode == 4 and "secrets.name" in p.stderr and "names, patterns, exempt" in p.stderr,
      "unknown key secrets.name: exit 4 naming it and the valid keys (%d: %s)"
      % (p.returncode, p.stderr.strip()[-300:]))

bad = make_project("provider: local\nsecrets:\n  exempt: [E2B_API_KEY]\n")
p = subprocess.run([abx, "run", case], cwd=bad, env=base_env, capture_output=True, text=True,
                   timeout=60)
check(p.returncode == 4 and "E2B_API_KEY cannot be exempted" in p.stderr,
      "a credential cannot be exempted: exit 4 naming it (%d: %s)" % (p.returncode,
                                                                     p.stderr.strip()[-300:]))

print("== the run's serve log is masked: serve names its domain, which holds a secret")
label = "srv" + os.urandom(6).hex()  # a host label: letters and digits
dom_proj = make_project("provider: local\nproviders:\n  local:\n    kind: local\n"
                        "    domain: %s.localhost\n    envd_routing: headers\n" % label)
code, sinks = run("serve log", [case, "-k", "prints the planted"], dom_proj,
                  dict(base_env, SERVE_DOMAIN_TOKEN=label))
log = sinks.get("serve log", "")
check("(domain ***.localhost)" in log, "serve's line naming the domain is masked in its log: %r"
      % log[:300])
check("abxlua serve: stopped" in log, "serve's last line reached the log")
check(not leaks(sinks, {"SERVE_DOMAIN_TOKEN": label}), "no sink holds the secret")

print("== `abxlua sandbox exec` registers the same set (it reads the config too)")
sb = ["--provider", "planted-remote"]
p = subprocess.run([abx, "sandbox", "create", "--json", *sb], cwd=proj, env=base_env,
                   capture_output=True, text=True, timeout=120)
sid = json.loads(p.stdout or "{}").get("sandbox_id") or json.loads(p.stdout or "{}").get("id")
check(p.returncode == 0 and sid, "sandbox create (exit %d): %s" % (p.returncode, (p.stdout
                                                                                 + p.stderr)[-300:]))
if sid:
    p = subprocess.run([abx, "sandbox", "exec", sid, *sb, "--", "printf", "%s\\n",
                        *planted.values()], cwd=proj, env=base_env, capture_output=True,
                       text=True, timeout=120)
    found = leaks({"stdout": p.stdout, "stderr": p.stderr}, planted)
    check(p.returncode == 0 and p.stdout.count("***") >= len(planted),
          "sandbox exec printed them masked (exit %d): %s" % (p.returncode, p.stdout[-300:]))
    check(not found, "no planted value in sandbox exec's output (%s)" % found[:3])
    subprocess.run([abx, "sandbox", "kill", sid, *sb], cwd=proj, env=base_env,
                   capture_output=True, timeout=60)

serve_proc.terminate()
serve_proc.wait(timeout=30)
finish()
