#!/usr/bin/env python3
"""`abxlua sandbox` against a local platform kept up by `abxlua sandbox serve` (issue 15 part 5):
create (tagged e2e=<run id>, metadata, envs), list, info, exec (exit code propagated, output
streamed, words quoted), cp both ways (sha256), logs (v2 route, filters), pause, resume, kill,
--json documents, usage errors (exit 4), ABX_LOCAL_URL instead of the state file, `abxlua cleanup`
finding the CLI's sandboxes on the running platform; then interrupts: SIGINT to `sandbox exec`
exits 2 at once, SIGINT to `sandbox serve` stops the platform and leaves no sandbox, process,
mount or state file. Usage: test_sandbox_cli.py ABXLUA"""
import hashlib, json, os, signal, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import abxtest
from abxtest import check, finish

abx = os.path.abspath(sys.argv[1])
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
abxtest.needs_platform()
tmp = tempfile.mkdtemp(prefix="abx-sbxcli-")
state_home = os.path.join(tmp, "state")
os.makedirs(state_home)
ENV = dict(os.environ, TMPDIR=tmp, XDG_STATE_HOME=state_home, NO_COLOR="1")
for k in ("ABX_LOCAL_URL", "ABX_LOCAL_API_KEY", "ABX_PROVIDER", "ABX_FLAVOR", "E2E_RUN_ID"):
    ENV.pop(k, None)


def sbx(*args, env=None, timeout=120):
    p = subprocess.run([abx, "sandbox", *args], cwd=root, env=env or ENV, capture_output=True,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def sbxj(*args, env=None):
    rc, out, err = sbx(args[0], "--json", *args[1:], env=env)
    try:
        doc = json.loads(out)
    except ValueError:
        doc = None
    check(doc is not None and out.count("\n") == 1,
          "sandbox %s --json prints one JSON document (rc %d, stderr %s)" % (args[0], rc, err[-300:]))
    return rc, doc or {}


def bwraps():
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                cmd = open("/proc/%s/cmdline" % d, "rb").read()
            except OSError:
                continue
            if b"bwrap" in cmd and tmp.encode() in cmd:
                found.append(int(d))
    return found


# no platform yet: a usage error saying how to start one
rc, out, err = sbx("list")
check(rc == 4 and "no local platform is running" in err and "abxlua sandbox serve" in err,
      "without a platform: exit 4 naming `abxlua sandbox serve` (rc %d: %s)" % (rc, err.strip()))

serve = subprocess.Popen([abx, "sandbox", "serve", "--json"], cwd=root, env=ENV,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
up = json.loads(serve.stdout.readline())
check(up.get("ok") and up["url"].startswith("http://127.0.0.1:"), "serve reports its URL")
state_file = up["state_file"]
check(os.path.exists(state_file) and state_file.startswith(state_home), "the state file exists")
check(os.stat(state_file).st_mode & 0o777 == 0o600,
      "the state file (it holds the API key) is mode 0600, not the umask's")
check("api_key" not in json.dumps(up), "the serve document holds no key")
rc, _, err = sbx("serve")
check(rc == 4 and "already runs" in err, "a second serve for the provider is refused (rc %d)" % rc)
check("(pid %d," % up["pid"] in err, "the refusal names the running serve's pid as an integer: %s"
      % err.strip()[-200:])

# create: tagged, metadata, envs
rc, doc = sbxj("create", "--metadata", "purpose=cli-test", "--env", "FOO=bar baz",
               "--run-id", "clitest1", "--timeout", "120")
check(rc == 0 and doc["metadata"].get("e2e") == "clitest1" and doc["metadata"].get("purpose") == "cli-test",
      "create tags e2e=<run id> and keeps metadata: %s" % doc.get("metadata"))
sid = doc["sandbox_id"]
rc, _, err = sbx("create", "--metadata", "e2e=x")
check(rc == 4 and "run tag" in err, "--metadata e2e= is a usage error")
rc, _, err = sbx("create", "--timeout", "0")
check(rc == 4 and "--timeout" in err, "--timeout 0 is a usage error")

# list and info
rc, doc = sbxj("list", "--run-id", "clitest1")
check(rc == 0 and [s["sandbox_id"] for s in doc["sandboxes"]] == [sid], "list --run-id finds it")
rc, doc = sbxj("list", "--state", "paused")
check(rc == 0 and doc["sandboxes"] == [], "list --state paused is [] (an empty array)")
rc, _, err = sbx("list", "--state", "bogus")
check(rc == 4, "list --state bogus is a usage error")
rc, doc = sbxj("info", sid)
check(rc == 0 and doc["sandbox"]["state"] == "running", "info: running")

# exec
rc, out, err = sbx("exec", sid, "--", "sh", "-c", "echo out; echo err >&2; exit 7")
check(rc == 7 and out == "out\n" and err.endswith("err\n"),
      "exec propagates the exit code and streams stdout/stderr (rc %d, %r, %r)" % (rc, out, err))
rc, out, _ = sbx("exec", sid, "--", "printf", "%s|", "a b", "it's", "")
check(rc == 0 and out == "a b|it's||", "several words are quoted one by one: %r" % out)
rc, out, _ = sbx("exec", sid, "--", "echo $FOO")
check(rc == 0 and out == "bar baz\n", "one word is a shell line; create's envs reach it: %r" % out)
rc, doc = sbxj("exec", sid, "--", "echo hi; exit 3")
check(rc == 3 and doc["stdout"] == "hi\n" and doc["exit_code"] == 3, "exec --json collects output")

# cp both ways
src = os.path.join(tmp, "up.bin")
data = os.urandom(300000) + "ünï\n".encode()
open(src, "wb").write(data)
want = hashlib.sha256(data).hexdigest()
rc, doc = sbxj("cp", src, sid + ":/home/user/d i r/up.bin")
check(rc == 0 and doc["sha256"] == want and doc["bytes"] == len(data), "cp uploads (sha256)")
rc, out, _ = sbx("exec", sid, "--", "sha256sum", "/home/user/d i r/up.bin")
check(out.split()[0] == want if out else False, "the sandbox has the same bytes")
dst = os.path.join(tmp, "down")
os.makedirs(dst)
rc, doc = sbxj("cp", sid + ":/home/user/d i r/up.bin", dst)
check(rc == 0 and open(os.path.join(dst, "up.bin"), "rb").read() == data, "cp downloads into a dir")
rc, doc = sbxj("cp", sid + ":/nope/missing", os.path.join(tmp, "x"))
check(rc == 1 and doc["ok"] is False and not os.path.exists(os.path.join(tmp, "x")),
      "a failed download fails (exit 1) and leaves no file")
check(not [f for f in os.listdir(tmp) if ".abxlua-cp-" in f], "no partial file is left")
check(sbx("cp", src, dst)[0] == 4, "cp without ID:PATH is a usage error")
check(sbx("cp", sid + ":/a", sid + ":/b")[0] == 4, "cp with two ID:PATH is a usage error")
check(sbx("cp", tmp, sid + ":/tmp/x")[0] == 4, "cp of a directory is a usage error")

# pause, resume, logs
rc, doc = sbxj("pause", sid)
check(rc == 0 and doc["paused"] is True, "pause")
rc, doc = sbxj("pause", sid)
check(rc == 0 and doc["paused"] is False, "a second pause says it was paused")
rc, doc = sbxj("resume", sid)
check(rc == 0 and doc["resumed"] is True, "resume")
rc, doc = sbxj("logs", sid)
msgs = [e["message"] for e in doc.get("logs", [])]
check(rc == 0 and doc["route"].startswith("GET /v2/sandboxes/") and len(msgs) == 3
      and msgs[0].startswith("sandbox started") and "paused" in msgs[1] and msgs[2] == "sandbox resumed",
      "logs: started, paused, resumed, oldest first: %s" % msgs)
rc, doc = sbxj("logs", sid, "--direction", "backward", "--limit", "1")
check(rc == 0 and [e["message"] for e in doc["logs"]] == ["sandbox resumed"], "logs backward, limit 1")
rc, doc = sbxj("logs", sid, "--level", "error")
check(rc == 0 and doc["logs"] == [], "logs --level error: none")
rc, doc = sbxj("logs", sid, "--search", "paused")
check(rc == 0 and len(doc["logs"]) == 1, "logs --search")

# ABX_LOCAL_URL instead of the state file (another state home: no state file there)
st = json.load(open(state_file))
env2 = dict(ENV, XDG_STATE_HOME=os.path.join(tmp, "other"), ABX_LOCAL_URL=st["ready"]["url"],
            ABX_LOCAL_API_KEY=st["ready"]["api_key"])
rc, doc = sbxj("info", sid, env=env2)
check(rc == 0 and doc["sandbox"]["sandbox_id"] == sid, "ABX_LOCAL_URL reaches the same platform")
rc, _, err = sbx("list", env=dict(env2, ABX_LOCAL_API_KEY=""))
check(rc == 4 and "ABX_LOCAL_API_KEY" in err, "ABX_LOCAL_URL without the key is a usage error")
rc, out, err = sbx("list", env=dict(env2, ABX_LOCAL_API_KEY="e2b_" + "0" * 40))
check(rc == 1 and "Authentication" in err, "a wrong key is refused (Authentication)")
check(st["ready"]["api_key"] not in out + err, "the key is never printed")
# an https ABX_LOCAL_URL: only with a TLS provider, and with serve's CA file (ABX_LOCAL_CA_CERT)
https = st["ready"]["url"].replace("http://", "https://")
rc, _, err = sbx("list", env=dict(env2, ABX_LOCAL_URL=https))
check(rc == 4 and "provider local is plain HTTP" in err, "an https URL with a plain provider: "
      "exit 4 naming the mismatch: %s" % err.strip()[-160:])
rc, _, err = sbx("list", "--provider", "local-tls", env=dict(env2, ABX_LOCAL_URL=https))
check(rc == 4 and "set ABX_LOCAL_CA_CERT" in err, "an https URL without ABX_LOCAL_CA_CERT: exit 4 "
      "naming it: %s" % err.strip()[-160:])
rc, _, err = sbx("list", "--provider", "local-tls", env=env2)
check(rc == 4 and "is a TLS one" in err, "an http URL with a TLS provider: exit 4: %s"
      % err.strip()[-160:])

# cleanup finds the CLI's sandboxes on the running platform
p = subprocess.run([abx, "cleanup", "--run-id", "clitest1"], cwd=root, env=ENV,
                   capture_output=True, text=True, timeout=60)
check(p.returncode == 1 and sid in p.stdout, "cleanup (dry run) lists the CLI's sandbox: %s" % p.stdout)

# call on a sandbox without the agent-sandbox-server: a NotFound that says so
rc, out, err = sbx("call", sid, "--list")
check(rc == 1 and "no agent-sandbox-server token at /var/lib/agent-server/token" in err,
      "call where no agent-sandbox-server runs says so: %s" % err.strip()[-200:])

# kill
rc, doc = sbxj("kill", sid)
check(rc == 0 and doc["killed"] is True, "kill")
rc, doc = sbxj("kill", sid)
check(rc == 1 and doc["error"]["kind"] == "SandboxNotFound", "killing it again fails: not found")
rc, doc = sbxj("info", sid)
check(rc == 1 and doc["error"]["status"] == 404, "info of a killed sandbox: 404")

# SIGINT to exec: exit 2 at once
rc, doc = sbxj("create", "--run-id", "clitest2")
s2 = doc["sandbox_id"]
rc, doc = sbxj("create", "--run-id", "clitest2")
e = subprocess.Popen([abx, "sandbox", "exec", s2, "--", "sleep 60"], cwd=root, env=ENV,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
time.sleep(1.5)
t0 = time.time()
e.send_signal(signal.SIGINT)
_, err = e.communicate(timeout=30)
check(e.returncode == 2 and time.time() - t0 < 10, "SIGINT ends exec with exit 2 (rc %s)" % e.returncode)
rc, out, _ = sbx("exec", s2, "--", "ps -eo args")
check(rc == 0 and "sleep 60" not in out, "the interrupted exec's command was killed in the sandbox: %r"
      % [l for l in out.splitlines() if "sleep" in l])
rc, doc = sbxj("list", "--run-id", "clitest2")
check(len(doc["sandboxes"]) == 2 and bwraps(), "two sandboxes live before serve is interrupted")

# SIGINT to serve: the platform stops, nothing is left
serve.send_signal(signal.SIGINT)
try:
    _, err = serve.communicate(timeout=60)
except subprocess.TimeoutExpired:
    serve.kill()
    _, err = serve.communicate()
check(serve.returncode == 0, "SIGINT stops serve with exit 0 (rc %s: %s)" % (serve.returncode, err[-300:]))
check(not os.path.exists(state_file), "the state file is removed")
end = time.time() + 15
while bwraps() and time.time() < end:
    time.sleep(0.2)
check(not bwraps(), "no sandbox process is left")
mounts = [l for l in open("/proc/self/mountinfo") if tmp in l]
check(not mounts, "no mount is left: %s" % mounts[:3])
rc, _, err = sbx("list")
check(rc == 4, "after serve stopped, the CLI says no platform runs")
finish()
