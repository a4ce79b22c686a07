#!/usr/bin/env python3
"""`abxlua accept skill-tools` (issue 15 part 7): its refusals. Each bad input is a usage error,
exit 4, with a message naming the input and the fix, before any work: no report written, no work
dir, no platform started. Quick (no sandbox, no npm). The help lists the options, and
`abxlua accept --help` the kind. Usage: test_skill_tools.py ABXLUA"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import abxtest  # noqa: E402
from abxtest import check, finish  # noqa: E402

abx = os.path.abspath(sys.argv[1])
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
tmp = tempfile.mkdtemp(prefix="abx-skill-refuse-")
SHA = "a" * 40


def accept(*args, cwd=root, env=None):
    e = dict(os.environ, NO_COLOR="1", TMPDIR=tmp)
    for k in ("ABX_SANDBOX_API_KEY", "E2B_API_KEY", "ABX_PROVIDER", "ABX_CONFIG", "E2E_RUN_ID",
              "ABX_SKILL_RUN_PREFIX", "ABX_SKILL_RUNTIME_TEMPLATE"):
        e.pop(k, None)
    e.update(env or {})
    p = subprocess.run([abx, "accept", "skill-tools", *args], cwd=cwd, env=e, capture_output=True,
                       text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


h = subprocess.run([abx, "accept", "--help"], capture_output=True, text=True)
check("skill-tools" in h.stdout, "accept --help lists skill-tools")
code, out = accept("--help")
check(code == 0 and all(o in out for o in ("--output NEW.json", "--provider", "--config",
                                           "--template", "--app-dir", "--repo-url", "--commit")),
      "skill-tools --help lists its options (exit %d)" % code)

existing = os.path.join(tmp, "existing.json")
with open(existing, "w") as f:
    f.write("evidence\n")
new = os.path.join(tmp, "new.json")
proj = abxtest.project(abxtest.remote_config("cloud", "    api_url: https://api.example.test\n"),
                       root=tmp)

# (name, args, cwd, env, words the message must hold)
CASES = [
    ("an existing --output", ["--output", existing], root, None, ["--output", existing, "exists"]),
    ("no --output", [], root, None, ["--output NEW.json"]),
    ("an unknown option", ["--output", new, "--bogus"], root, None, ["unknown option", "--bogus"]),
    ("--output without its value", ["--output"], root, None, ["--output", "requires an argument"]),
    ("--commit without its value", ["--output", new, "--commit"], root, None,
     ["--commit", "requires an argument"]),
    ("--output in a missing directory", ["--output", os.path.join(tmp, "nodir", "r.json")], root,
     None, ["--output", "no such directory", "nodir"]),
    ("--output naming a directory", ["--output", tmp + "/sub/"], root, None,
     ["--output", tmp + "/sub/"]),
    ("a --commit that is not 40 hex digits", ["--output", new, "--repo-url", "https://x.test/r",
                                               "--commit", "abc"], proj, None,
     ["--commit", "40 hex digits", "abc"]),
    ("--repo-url without --commit", ["--output", new, "--repo-url", "https://x.test/r"], proj,
     None, ["--repo-url", "--commit", "together"]),
    ("an unknown provider", ["--output", new, "--provider", "nosuch"], root, None,
     ["unknown provider", "nosuch", "local"]),
    ("--repo-url on the local platform", ["--output", new, "--provider", "local", "--repo-url",
                                          "https://x.test/r", "--commit", SHA], root, None,
     ["--repo-url", "remote provider", "--app-dir"]),
    ("a missing --app-dir", ["--output", new, "--provider", "local", "--app-dir",
                             os.path.join(tmp, "noapp")], root, None,
     ["--app-dir", "noapp", "no such directory"]),
    ("a remote provider without --repo-url", ["--output", new], proj, None,
     ["remote provider", "--repo-url", "--commit"]),
    ("a remote provider without credentials", ["--output", new, "--repo-url", "https://x.test/r",
                                               "--commit", SHA], proj,
     {"ABX_SANDBOX_API_KEY": ""}, ["provider cloud", "missing credentials", "ABX_SANDBOX_API_KEY"]),
    ("a bad E2E_RUN_ID", ["--output", new, "--provider", "local"], root,
     {"E2E_RUN_ID": "a b/c"}, ["E2E_RUN_ID", "letters, digits"]),
    ("a bad ABX_SKILL_RUN_PREFIX", ["--output", new, "--provider", "local"], root,
     {"ABX_SKILL_RUN_PREFIX": "x" * 64}, ["ABX_SKILL_RUN_PREFIX", "at most 63"]),
]
for name, args, cwd, env, words in CASES:
    code, out = accept(*args, cwd=cwd, env=env)
    missing = [w for w in words if w not in out]
    check(code == 4 and not missing, "%s: exit 4 naming it (exit %d, missing %s): %s"
          % (name, code, missing, out.strip().splitlines()[-1] if out.strip() else ""))
    check("skill-tools: cleanup" not in out, "%s: refused before any work" % name)

check(open(existing).read() == "evidence\n", "the existing --output is left as it was")
check(not os.path.exists(new), "no refusal wrote a report")
left = [d for d in os.listdir(tmp) if d.startswith("abxlua-")]
check(not left, "no refusal left a work or platform dir: %s" % left)
check(not abxtest.procs_with(tmp), "no refusal left a process")
finish()
