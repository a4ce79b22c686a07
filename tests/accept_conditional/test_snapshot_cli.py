#!/usr/bin/env python3
"""`abxlua sandbox snapshot create|list|restore|delete` (issue 15 part 6) against a platform this
test runs, reached as the local provider through ABX_LOCAL_URL / ABX_LOCAL_API_KEY: each
subcommand's JSON, the restore's tag, a snapshot of a paused sandbox leaves it paused, a deleted
snapshot is NotFound (exit 1) for delete and restore, bad input is a usage error (exit 4); and
`abxlua providers --json`. Usage: test_snapshot_cli.py ABXLUA"""
import json, os, subprocess, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import abxtest
from abxtest import check, finish

abxtest.needs_platform()
abx = os.path.abspath(sys.argv[1])
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
serve, ready = abxtest.start_serve(abx)
env = dict(os.environ, NO_COLOR="1", ABX_LOCAL_URL=ready["url"], ABX_LOCAL_API_KEY=ready["api_key"],
           E2E_RUN_ID="snapcli%d" % os.getpid())
for k in ("ABX_PROVIDER", "ABX_CONFIG"):
    env.pop(k, None)


def sbx(*args):
    p = subprocess.run([abx, "sandbox", *args], cwd=root, env=env, capture_output=True, text=True,
                       timeout=120)
    doc = None
    if "--json" in args:
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            pass
    return p.returncode, doc, p.stdout, p.stderr


try:
    code, doc, out, err = sbx("create", "--json")
    check(code == 0 and doc and doc.get("sandbox_id"), "a sandbox to snapshot (exit %d) %s" % (code, err))
    sid = doc["sandbox_id"]
    code, doc, out, err = sbx("snapshot", "create", sid, "--json")
    check(code == 0 and doc.get("ok") is True and doc.get("command") == "snapshot create"
          and doc.get("sandbox_id") == sid and doc.get("snapshot_id", "").startswith("snap-")
          and isinstance(doc.get("names"), list), "snapshot create --json: %s" % doc)
    snap = doc["snapshot_id"]
    code, doc, out, err = sbx("snapshot", "create", sid)
    check(code == 0 and out.strip().startswith("snap-"), "snapshot create prints the id")
    second = out.strip()
    code, doc, out, err = sbx("snapshot", "list", sid, "--json")
    ids = [s["snapshot_id"] for s in (doc or {}).get("snapshots", [])]
    check(code == 0 and ids == sorted([snap, second]), "snapshot list ID --json: both, sorted")
    code, doc, out, err = sbx("snapshot", "list")
    check(code == 0 and snap in out and second in out and out.startswith("SNAPSHOT"),
          "snapshot list: a table")
    code, doc, out, err = sbx("snapshot", "restore", snap, "--run-id", "restored1", "--json")
    check(code == 0 and doc.get("snapshot_id") == snap and doc.get("run_id") == "restored1"
          and (doc.get("metadata") or {}).get("e2e") == "restored1", "snapshot restore --json: %s" % doc)
    clone = (doc or {}).get("sandbox_id")
    st, info = abxtest.api(ready, "GET", "/sandboxes/%s" % clone)
    check(st == 200 and info["metadata"].get("e2e") == "restored1", "the clone carries the tag")
    code, doc, out, err = sbx("snapshot", "delete", snap, "--json")
    check(code == 1 and doc and doc.get("ok") is False,
          "a snapshot still used by a sandbox is not deleted (exit %d): %s" % (code, err.strip()))
    sbx("kill", clone)
    code, doc, out, err = sbx("snapshot", "delete", snap, "--json")
    check(code == 0 and doc == {"ok": True, "command": "snapshot delete", "snapshot_id": snap,
                                "deleted": True}, "snapshot delete --json: %s" % doc)
    code, doc, out, err = sbx("snapshot", "delete", snap, "--json")
    check(code == 1 and doc.get("ok") is False and doc["error"]["kind"] == "NotFound",
          "deleting it again is NotFound, exit 1 (%d): %s" % (code, doc))
    code, doc, out, err = sbx("snapshot", "restore", snap, "--json")
    check(code == 1 and (doc or {}).get("error", {}).get("kind") == "NotFound",
          "restoring a deleted snapshot is NotFound, exit 1 (%d)" % code)
    code, doc, out, err = sbx("pause", sid, "--json")
    check(code == 0, "pause the source")
    code, doc, out, err = sbx("snapshot", "create", sid, "--json")
    st, info = abxtest.api(ready, "GET", "/sandboxes/%s" % sid)
    check(st == 200 and info["state"] == "paused",
          "a snapshot of a paused sandbox (exit %d) leaves it paused" % code)
    if code == 0:
        sbx("snapshot", "delete", doc["snapshot_id"])
    sbx("snapshot", "delete", second)
    code, doc, out, err = sbx("snapshot", "create", "no-such-sandbox", "--json")
    check(code == 1 and (doc or {}).get("error", {}).get("kind") == "SandboxNotFound",
          "a snapshot of an unknown sandbox is SandboxNotFound, exit 1 (%d)" % code)
    code, doc, out, err = sbx("snapshot")
    check(code == 4 and "create, list, restore, delete" in err,
          "no subcommand: usage error naming them (exit %d)" % code)
    code, doc, out, err = sbx("snapshot", "delete", "bad id!")
    check(code == 4 and "not a snapshot id" in err, "a malformed id: usage error (exit %d)" % code)
    code, doc, out, err = sbx("snapshot", "create", sid, "--name", "no spaces")
    check(code == 4 and "--name" in err, "a malformed --name: usage error (exit %d)" % code)
    sbx("kill", sid)
    st, snaps = abxtest.api(ready, "GET", "/snapshots")
    check(st == 200 and snaps == [], "nothing is left: %s" % snaps)
    p = subprocess.run([abx, "providers", "--json"], cwd=root, capture_output=True, text=True)
    rows = json.loads(p.stdout) if p.returncode == 0 else []
    local = next((r for r in rows if r["name"] == "local"), {})
    check(local.get("kind") == "local" and "pause" in local.get("capabilities", [])
          and rows[0]["kind"] == "local", "providers --json lists the providers, local first")
finally:
    serve.terminate()
    serve.wait(timeout=30)
finish()
