#!/usr/bin/env python3
"""A command's output streamed with keep_output = false costs the engine no memory for its size:
runs tests/kinds/command_rss_case.lua alone in its own `abxlua run` (-j 1, and ctest RUN_SERIAL)
against the local platform and checks that 128 MiB through on_stdout grew the process's RSS by less
than ABX_COMMAND_RSS_LIMIT_MB (default 64 MiB). The suite's own test (scenarios/03_commands.lua)
bounds the engine's accounting (handle:held_peak()) instead: RSS is a fact of the whole process,
and there other tests run beside it (issue 22). Needs root and bubblewrap, like tests/platform
(exit 77 = skipped). Usage: test_command_rss.py ABXLUA"""
import os, re, subprocess, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import check, finish, needs_platform
here = os.path.dirname(os.path.abspath(__file__))
root = os.path.abspath(os.path.join(here, "..", ".."))
abx = os.path.abspath(sys.argv[1])
LIMIT_MB = float(os.environ.get("ABX_COMMAND_RSS_LIMIT_MB", "64"))
needs_platform()

p = subprocess.run([abx, "run", "-s", "-j", "1", "tests/kinds/command_rss_case.lua"], cwd=root,
                   env=dict(os.environ, NO_COLOR="1"), capture_output=True, text=True, timeout=600)
out = p.stdout + p.stderr
print(out)
check(p.returncode == 0 and re.search(r"^1 passed, 0 failed", out, re.M) is not None,
      "the 128 MiB stream passed (exit %d)" % p.returncode)
nums = {k: int(v) for k, v in re.findall(r"^(rss_base_kb|rss_peak_kb|held_peak)=(\d+)", out, re.M)}
grown = (nums["rss_peak_kb"] - nums["rss_base_kb"]) / 1024 if len(nums) == 3 else None
check(grown is not None and grown < LIMIT_MB,
      "RSS grew by %.1f MiB (< %.0f MiB) for a 128 MiB output; held_peak %s bytes"
      % (grown if grown is not None else -1, LIMIT_MB, nums.get("held_peak")))
finish()
