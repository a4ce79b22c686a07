#!/usr/bin/env python3
"""`abxlua accept conditional` (issue 15 part 6) on the local provider: a full run writes its report
and exits 0 with every check passed and no identifier or credential in it; the bad inputs are
refused with exit 4 naming the fix and write no report; the supplied template is never created or
deleted. Usage: test_conditional.py ABXLUA"""
import json, os, re, subprocess, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import abxtest
from abxtest import check, finish

abxtest.needs_platform()
abx = os.path.abspath(sys.argv[1])
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECKS = ["engine", "template", "discovery", "source", "pause_cli_resume_lua",
          "pause_lua_resume_cli", "memory_continuity", "file_continuity", "snapshot_create",
          "snapshot_list", "snapshot_restore", "clone_isolation", "snapshot_delete",
          "owned_cleanup"]


def accept(*args, cwd=root, env=None, timeout=240):
    e = dict(os.environ, NO_COLOR="1")
    for k in ("ABX_SANDBOX_API_KEY", "E2B_API_KEY", "ABX_PROVIDER", "ABX_CONFIG", "E2E_RUN_ID"):
        e.pop(k, None)
    e.update(env or {})
    p = subprocess.run([abx, "accept", "conditional", *args], cwd=cwd, env=e, capture_output=True,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


tmp = tempfile.mkdtemp()

# 1. a full local run
report = os.path.join(tmp, "report.json")
code, out, err = accept("--provider", "local", "--template", "base", "--report", report,
                        env={"TMPDIR": tmp})
print(err)
check(code == 0, "a full local run exits 0 (got %d)" % code)
check(os.path.exists(report), "the report is written")
rep = json.load(open(report)) if os.path.exists(report) else {}
names = [c.get("name") for c in rep.get("checks", [])]
check(names == CHECKS, "the report has every check in order: %s" % names)
shown = re.findall(r"^conditional: (?:\[\d+/\d+\] )?([a-z_]+): "
                   r"(?:passed|failed|skipped|interrupted|not_run)\b", err, re.M)
check(shown == CHECKS, "one progress line per check, in the report's order: %s" % shown)
check(all(c.get("status") == "passed" for c in rep.get("checks", [])),
      "every check passed: %s" % [(c["name"], c["status"], c.get("reason"))
                                  for c in rep.get("checks", []) if c["status"] != "passed"])
check(all(set(c) >= {"name", "status", "duration", "reason"} for c in rep.get("checks", [])),
      "each check has name, status, duration and reason")
check(rep.get("status") == "passed" and rep.get("template") == "base"
      and rep.get("provider") == "local", "the report's status, provider and template")
ops = next((c.get("details", {}).get("operations") for c in rep.get("checks", [])
            if c["name"] == "discovery"), None) or []
check(sorted(o["operation"] for o in ops) == sorted(
    ["pause", "resume", "snapshot create", "snapshot list", "snapshot restore", "snapshot delete"])
      and all(o["cli"] and o["lua"] for o in ops),
      "discovery lists the six operations, offered by both sides")
check(rep.get("cleanup", {}).get("errors") == [], "cleanup had no errors")
text = open(report).read() if os.path.exists(report) else ""
# the run's tag is printed on stderr; the report holds no identifier of what the run made
tag = re.search(r"tag e2e=(\S+)", err)
check(tag is not None and tag.group(1) not in text, "the run's tag is not in the report")
check(re.search(r"snap-[a-z0-9]{8,}", text) is None, "no snapshot id in the report")
# docs/PLATFORM.md: a local sandbox id is `i` + 20 characters of [a-z0-9]
check(re.search(r"\bi[a-z0-9]{20}\b", text) is None, "no sandbox id in the report")
check(re.search(r"e2b_[0-9a-f]{8,}", text) is None, "no API key in the report")
check("127.0.0.1" not in text, "no endpoint in the report")
check(not [d for d in os.listdir(tmp) if d.startswith("abxlua-")],
      "the run's work and platform state dirs are gone: %s" % os.listdir(tmp))
mounts = open("/proc/self/mountinfo").read()
check(tmp not in mounts, "no mount of the run is left")

# 2. refusals: exit 4, a message naming the fix, no report written
code, out, err = accept("--provider", "local", "--template", "base", "--report", report)
check(code == 4 and "already exists" in err, "an existing --report is refused (exit %d): %s"
      % (code, err.strip()))
new = os.path.join(tmp, "new.json")
code, out, err = accept("--provider", "nosuch", "--template", "base", "--report", new)
check(code == 4 and "unknown provider" in err and "local" in err,
      "an unknown provider is refused naming the configured ones (exit %d): %s" % (code, err.strip()))
code, out, err = accept("--provider", "local", "--template", "no-such-template-x",
                        "--report", new, env={"TMPDIR": tmp})
check(code == 4 and "unknown template" in err and "never creates" in err,
      "an unknown template is refused (exit %d): %s" % (code, err.strip()))
code, out, err = accept("--provider", "local", "--report", new)
check(code == 4 and "--template" in err, "a missing --template is refused (exit %d)" % code)
code, out, err = accept("--provider", "local", "--template", "base")
check(code == 4 and "--report" in err, "a missing --report is refused (exit %d)" % code)
code, out, err = accept("--provider", "local", "--template", "base", "--report", new,
                        "--timeout", "0")
check(code == 4 and "--timeout" in err, "a bad --timeout is refused (exit %d)" % code)
proj = abxtest.project(abxtest.remote_config("cloud", "    api_url: https://api.example.test\n"))
code, out, err = accept("--provider", "cloud", "--template", "base", "--report", new, cwd=proj,
                        env={"ABX_SANDBOX_API_KEY": ""})
check(code == 4 and "missing credentials" in err and "ABX_SANDBOX_API_KEY" in err,
      "a cloud provider without credentials is refused naming the variable (exit %d): %s"
      % (code, err.strip()))
check(not os.path.exists(new), "no refusal wrote a report")
check(not [d for d in os.listdir(tmp) if d.startswith("abxlua-")],
      "the refused unknown template left no work or platform dir")
finish()
