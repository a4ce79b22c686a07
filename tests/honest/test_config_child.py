#!/usr/bin/env python3
"""A run's --config reaches every child process its tests start, and no scenario reads a config
of its own (issue 27 part 4):

  - `abxlua run --config ../proj/config/abxlua.yaml` from a directory whose own config names a
    provider `decoy` (remote, no credentials): the children of config_child_case.lua, run in /
    without ABX_CONFIG or ABX_PROVIDER from the test, list the providers of --config and reach the
    run's provider (`abxlua sandbox list` sees the test's sandbox on the fake control plane);
  - `abxlua list --config X scenarios/08_providers.lua` collects one test per remote provider of
    X, not of the config/abxlua.yaml of the working directory.

Usage: test_config_child.py ABXLUA"""
import os, subprocess, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import honest_api
from abxtest import check, finish, remote_config

abx = os.path.abspath(sys.argv[1])
here = os.path.dirname(os.path.abspath(__file__))
root = os.path.abspath(os.path.join(here, "..", ".."))
KEY = "e2b_0123456789abcdef0123"

work = tempfile.mkdtemp(prefix="abx-config-child-")
for d, text in (("proj", remote_config("fakeprov")),
                ("decoy", "provider: decoy\nproviders:\n  decoy:\n    kind: remote\n"
                          "    api_url: http://127.0.0.1:9\n    credential_env: [ABX_DECOY_KEY]\n")):
    os.makedirs(os.path.join(work, d, "config"))
    with open(os.path.join(work, d, "config", "abxlua.yaml"), "w") as f:
        f.write(text)

srv = honest_api.start("honest")
env = dict(os.environ, ABX_SANDBOX_API_KEY=KEY, NO_COLOR="1",
           ABX_SANDBOX_BASE_URL="http://127.0.0.1:%d" % srv.server_address[1])
for name in ("ABX_CONFIG", "ABX_PROVIDER", "ABX_FLAVOR", "ABX_DECOY_KEY", "CI", "E2E_RUN_ID"):
    env.pop(name, None)
p = subprocess.run([abx, "run", "--config", "../proj/config/abxlua.yaml",
                    os.path.join(here, "config_child_case.lua")],
                   cwd=os.path.join(work, "decoy"), env=env, capture_output=True, text=True,
                   timeout=180)
srv.shutdown()
out = p.stdout + p.stderr
print(out)
check(p.returncode == 0, "the children read the run's config and reach its provider (exit %d)"
      % p.returncode)
check("1 passed, 0 failed" in p.stdout, "the case passed")

# 08_providers collects the remote providers of --config, not of the working directory's config
p = subprocess.run([abx, "list", "--config", os.path.join(work, "proj", "config", "abxlua.yaml"),
                    "scenarios/08_providers.lua"], cwd=root, env=env, capture_output=True,
                   text=True, timeout=60)
print(p.stdout + p.stderr)
check(p.returncode == 0, "abxlua list 08_providers (exit %d)" % p.returncode)
check("cloud provider fakeprov:" in p.stdout, "08_providers has a test for --config's remote provider")
check("cloud provider e2b:" not in p.stdout,
      "08_providers has none for the working directory's config (providers.e2b)")
finish()
