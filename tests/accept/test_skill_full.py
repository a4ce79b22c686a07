#!/usr/bin/env python3
"""A whole `abxlua accept skill-tools` run on the local platform (issue 15 part 7): exit 0, every
check of the seed's list passed in order, the cleanup clean, no credential or resource id in the
report, nothing of the run left; then a run stopped by SIGTERM during its npm install (npm
killed with it, nothing written after the cleanup). Needs the npm registry (the two pinned releases of
@modelcontextprotocol/server-filesystem are installed on the host): labelled slow, so it runs in
`make test-slow`, not `make test` (~40-60 s, most of it npm and the 20 s link expiry); skipped
(77) when the registry cannot be reached. Usage: test_skill_full.py ABXLUA"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import abxtest  # noqa: E402
from abxtest import check, finish  # noqa: E402

abxtest.needs_platform()
abx = os.path.abspath(sys.argv[1])
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MCP = ["install", "initialize", "tools_list", "read_file", "read_outside_root_refused", "logs",
       "removed"]
CHECKS = (["repository.pinned_commit", "sandbox.create", "repository.fetch",
           "repository.commit_verified", "repository.read_only", "app.start",
           "app.document_from_commit", "preview.link_signed", "preview.valid_link",
           "preview.unsigned_rejected", "preview.tampered_signature_rejected",
           "preview.tampered_expiry_rejected", "preview.expired_rejected", "mcp.host_install"]
          + ["mcp %s.%s" % (v, c) for v in ("2026.7.10", "2026.8.31") for c in MCP])

if subprocess.run(["npm", "view", "@modelcontextprotocol/server-filesystem@2026.8.31", "version"],
                  capture_output=True, timeout=60).returncode != 0:
    print("skipped: the npm registry does not answer for @modelcontextprotocol/server-filesystem")
    sys.exit(77)

tmp = tempfile.mkdtemp(prefix="abx-skill-full-")
report = os.path.join(tmp, "report.json")
env = dict(os.environ, TMPDIR=tmp, NO_COLOR="1")
for k in ("ABX_PROVIDER", "ABX_CONFIG", "E2E_RUN_ID", "ABX_SKILL_RUN_PREFIX"):
    env.pop(k, None)
p = subprocess.run([abx, "accept", "skill-tools", "--provider", "local", "--output", report],
                   cwd=root, env=env, capture_output=True, text=True, timeout=900)
print(p.stdout + p.stderr)
check(p.returncode == 0, "a full local run exits 0 (got %d)" % p.returncode)
rep = json.load(open(report)) if os.path.exists(report) else {}
names = [c.get("name") for c in rep.get("checks", [])]
check(names == CHECKS, "every check passed, in order: %s" % names)
check(rep.get("failures") == [] and rep.get("ok") is True and rep.get("interrupted") is False,
      "no failure, ok: %r" % rep.get("failures"))
check(rep.get("repository", {}).get("commit") == "f0b8763045dcbfa1d5c0b914fecbb1e56ba7fe99",
      "the report names the pinned commit")
cl = rep.get("cleanup", {})
check(cl.get("errors") == [] and cl.get("sandboxes_remaining") == 0
      and cl.get("sandboxes_killed") == 1 and cl.get("git_server_processes_remaining") == 0
      and cl.get("mcp_processes_remaining") == 0 and cl.get("platform_stopped") is True
      and cl.get("host_files_removed") is True, "the cleanup is clean: %r" % cl)
text = open(report).read() if os.path.exists(report) else ""
# docs/PLATFORM.md: a local sandbox id is `i` + 20 characters of [a-z0-9]
check(re.search(r"\bi[a-z0-9]{20}\b", text) is None, "no sandbox id in the report")
check(re.search(r"e2b_[0-9a-f]{8,}", text) is None, "no API key in the report")
check("git://" not in text and "127.0.0.1" not in text, "no endpoint in the report")
# 64 hex digits: the preview secret (32 random bytes) is one; the report may hold only the
# document's sha256 and the link's signature (evidence, expired before the report is written)
odd = [l.strip() for l in text.splitlines() if re.search(r"[0-9a-f]{64}", l)
       and not re.match(r'\s*"(sha256|sig|full)": ', l)]
check(not odd, "no preview secret in the report (64-hex values only as sha256/sig): %s" % odd)
abxtest.nothing_left(tmp, "skill-tools")
check(os.listdir(tmp) == ["report.json"], "no work or state dir remains: %s" % os.listdir(tmp))

# SIGTERM during the npm install: npm and its children die with the run at once (they are in the
# host command's process group, which is killed), so nothing writes into the removed work dir.
tmp = tempfile.mkdtemp(prefix="abx-skill-npmint-")
report = os.path.join(tmp, "report.json")
p = subprocess.Popen([abx, "accept", "skill-tools", "--provider", "local", "--output", report],
                     cwd=root, env=dict(env, TMPDIR=tmp), stdout=subprocess.PIPE,
                     stderr=subprocess.STDOUT, text=True)
seen = False
while not seen:
    line = p.stdout.readline()
    if not line:
        break
    seen = "skill-tools: mcp.host_install" in line
check(seen, "npm interrupt: the run reached mcp.host_install")
npm_running = abxtest.wait_until(
    lambda: any(b"npm" in abxtest.cmdline(q) for q in abxtest.procs_with(tmp)), 20, 0.05)
check(npm_running, "npm interrupt: npm runs at the signal")
p.send_signal(signal.SIGTERM)
out, _ = p.communicate(timeout=120)
print(out)
check(p.returncode == 2, "npm interrupt: exit 2 (got %s)" % p.returncode)
check(abxtest.wait_until(lambda: not abxtest.procs_with(tmp), 3),
      "npm interrupt: no npm or other process of the run within 3 s: %s" % abxtest.procs_with(tmp))
rep = json.load(open(report)) if os.path.exists(report) else {}
check(rep.get("interrupted") is True and rep.get("cleanup", {}).get("errors") == [],
      "npm interrupt: the report says interrupted, cleanup clean")
time.sleep(3)
abxtest.nothing_left(tmp, "npm interrupt")
check(os.listdir(tmp) == ["report.json"], "npm interrupt: nothing written after the cleanup: %s"
      % os.listdir(tmp))
finish()
