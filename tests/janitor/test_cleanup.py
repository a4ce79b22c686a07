#!/usr/bin/env python3
"""abxlua cleanup, the janitor: against a running `abxlua serve`, it lists sandboxes tagged
e2e=<run id>, deletes nothing without --yes, kills only the matching tagged ones with --yes, and
never touches an untagged sandbox. Usage: test_cleanup.py ABXLUA"""
import os, subprocess, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import abxtest
from abxtest import check, finish

abx = os.path.abspath(sys.argv[1])
serve, ready = abxtest.start_serve(abx)
url, key = ready["url"], ready["api_key"]

def api(method, path, body=None):
    return abxtest.api(ready, method, path, body)

def ids():
    return {s["sandboxID"] for s in api("GET", "/v2/sandboxes")[1]}

try:
    made = {}
    for name, meta in (("mine1", {"e2e": "runA"}), ("mine2", {"e2e": "runA"}),
                       ("other", {"e2e": "runB"}), ("untagged", {"owner": "someone"})):
        st, body = api("POST", "/sandboxes", {"templateID": "base", "timeout": 300, "metadata": meta})
        check(st == 201, "create %s" % name)
        made[name] = body["sandboxID"]

    proj = abxtest.project(abxtest.remote_config("here", "    capabilities: [snapshot, volume]\n"))
    env = dict(os.environ, ABX_SANDBOX_API_KEY=key, ABX_SANDBOX_BASE_URL=url)
    env.pop("E2B_API_KEY", None)

    def cleanup(*args):
        p = subprocess.run([abx, "cleanup", *args], cwd=proj, env=env, capture_output=True,
                           text=True, timeout=120)
        return p.returncode, p.stdout + p.stderr

    code, out = cleanup()
    check(code == 4 and "--run-id ID or --all-tagged" in out, "no filter is a usage error (4)")

    code, out = cleanup("--run-id", "runA")
    check(code == 1, "dry run exits 1 while tagged sandboxes remain (got %d)" % code)
    check(made["mine1"] in out and made["mine2"] in out and made["other"] not in out,
          "dry run lists exactly runA's sandboxes")
    check("dry run, nothing deleted" in out, "dry run says so")
    check(ids() == set(made.values()), "dry run deleted nothing")
    check(key not in out, "the API key is never printed")

    code, out = cleanup("--run-id", "runA", "--yes")
    check(code == 0, "--yes exits 0 when nothing of the run remains (got %d)" % code)
    left = ids()
    check(made["mine1"] not in left and made["mine2"] not in left, "runA's sandboxes are killed")
    check(made["other"] in left and made["untagged"] in left, "others are untouched")

    code, out = cleanup("--all-tagged", "--older-than", "60")
    check(code == 0 and made["other"] not in out, "--older-than 60 skips a fresh sandbox")

    code, out = cleanup("--all-tagged", "--yes")
    left = ids()
    check(code == 0 and made["other"] not in left, "--all-tagged --yes kills every tagged sandbox")
    check(made["untagged"] in left, "an untagged sandbox is never touched")
    check(made["untagged"] not in out, "an untagged sandbox is not even listed")

    # snapshots of the run's sandboxes and volumes named with the run id (issue 9, item 4)
    st, body = api("POST", "/sandboxes", {"templateID": "base", "timeout": 300, "metadata": {"e2e": "runC"}})
    sid = body["sandboxID"]
    st, snap = api("POST", "/sandboxes/%s/snapshots" % sid, {})
    check(st == 201, "snapshot of runC's sandbox (got %d)" % st)
    st, vol = api("POST", "/volumes", {"name": "abx-runC-data"})
    st2, keep = api("POST", "/volumes", {"name": "keep-me"})
    check(st == 201 and st2 == 201, "two volumes created")
    code, out = cleanup("--run-id", "runC")
    check(code == 1 and snap["snapshotID"] in out and "abx-runC-data" in out and "keep-me" not in out,
          "the dry run lists runC's snapshot and volume, not the other volume")
    code, out = cleanup("--run-id", "runC", "--yes")
    print(out)
    check(code == 0, "--yes with snapshots and volumes exits 0 (got %d)" % code)
    snaps = api("GET", "/snapshots?sandboxID=%s" % sid)[1] or []
    check(not snaps, "runC's snapshot is deleted")
    vols = {v["name"] for v in api("GET", "/volumes")[1]}
    check("abx-runC-data" not in vols and "keep-me" in vols,
          "the volume named with the run id is deleted, the other kept (%s)" % sorted(vols))
finally:
    serve.terminate()
    serve.wait(timeout=30)

finish()
