#!/usr/bin/env python3
"""`abxlua accept conditional` against a remote provider (issue 15 part 6): a platform this test
runs (`abxlua serve`) configured as a remote E2B provider. While the runner works, the test lists
the platform's sandboxes and snapshots, so it knows every identifier the run made; the report must
hold none of them and not the API key; afterwards nothing of the run is left on the platform and
its template list is what it was (the supplied template never created or deleted). A second run
against a platform whose first pause fails (serve --faults) fails that check with exit 1: its
reason names the sandbox by kind, never by id, and the cleanup still leaves nothing.
Usage: test_remote_ids.py ABXLUA"""
import json, os, subprocess, sys, tempfile, threading, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import abxtest
from abxtest import check, finish

abxtest.needs_platform()
abx = os.path.abspath(sys.argv[1])


def watch(ready, seen, done):
    while not done.is_set():
        try:
            st, items = abxtest.api(ready, "GET", "/v2/sandboxes?state=running,paused&limit=100")
            if st == 200:
                seen["sandbox"].update(s["sandboxID"] for s in items)
            st, snaps = abxtest.api(ready, "GET", "/snapshots?limit=100")
            if st == 200:
                for s in snaps:
                    seen["snapshot"].add(s["snapshotID"])
                    seen["snapshot"].update(s.get("names") or [])
        except Exception as e:  # the platform is busy; the next poll counts
            print("poll: %s" % e)
        time.sleep(0.02)


def run(ready, caps="pause, snapshot, connect_resume, v2_routes"):
    """Runs the conditional runner against `ready`'s platform (the provider with capabilities
    `caps`) while watching it; returns (exit code, report text, report, the ids seen)."""
    seen = {"sandbox": set(), "snapshot": set()}
    done = threading.Event()
    proj = abxtest.project(abxtest.remote_config("here", "    capabilities: [%s]\n" % caps))
    report = os.path.join(proj, "report.json")
    env = dict(os.environ, NO_COLOR="1", ABX_SANDBOX_API_KEY=ready["api_key"],
               ABX_SANDBOX_BASE_URL=ready["url"], E2B_SANDBOX_URL=ready["url"])
    env.pop("ABX_PROVIDER", None)
    env.pop("ABX_CONFIG", None)
    t = threading.Thread(target=watch, args=(ready, seen, done))
    t.start()
    try:
        p = subprocess.run([abx, "accept", "conditional", "--provider", "here", "--template",
                            "base", "--report", report], cwd=proj, env=env, capture_output=True,
                           text=True, timeout=240)
    finally:
        done.set()
        t.join()
    print(p.stderr)
    text = open(report).read() if os.path.exists(report) else ""
    return p.returncode, text, (json.loads(text) if text else {}), seen


def nothing_left(ready, what):
    st, left = abxtest.api(ready, "GET", "/v2/sandboxes?state=running,paused")
    check(st == 200 and left == [], "%s: no sandbox is left on the platform (%s)" % (what, left))
    st, snaps = abxtest.api(ready, "GET", "/snapshots")
    check(st == 200 and snaps == [], "%s: no snapshot is left on the platform" % what)


# kills and deletes are held 400 ms, so the watcher sees even the short-lived clones and snapshots
slow = os.path.join(tempfile.mkdtemp(), "slow.yaml")
with open(slow, "w") as f:
    f.write('faults:\n  - route: "DELETE /sandboxes/*"\n    action: {delay_ms: 400}\n'
            '  - route: "DELETE /templates/*"\n    action: {delay_ms: 400}\n')
serve, ready = abxtest.start_serve(abx, "--faults", slow)
try:
    st, before = abxtest.api(ready, "GET", "/templates")
    check(st == 200, "the platform lists its templates")
    code, text, rep, seen = run(ready)
    check(code == 0, "the remote run exits 0 (got %d)" % code)
    check(rep.get("status") == "passed" and rep.get("provider_kind") == "remote",
          "the report says passed, provider kind remote")
    check(all(c["status"] == "passed" for c in rep.get("checks", [])), "every check passed")
    check(len(seen["sandbox"]) >= 3, "the watcher saw the run's sandboxes (%d)" % len(seen["sandbox"]))
    check(len(seen["snapshot"]) >= 2, "the watcher saw the run's snapshots (%d)" % len(seen["snapshot"]))
    leaked = [i for kind in seen for i in seen[kind] if i in text]
    check(text and not leaked, "the report holds no sandbox or snapshot id (leaked: %s)" % leaked)
    check(ready["api_key"] not in text, "the report holds no API key")
    check(ready["url"] not in text, "the report holds no endpoint")
    nothing_left(ready, "after the run")
    st, after = abxtest.api(ready, "GET", "/templates")
    check(st == 200 and after == before, "the platform's templates are as they were")
    st, _ = abxtest.api(ready, "GET", "/templates/aliases/base")
    check(st == 200, "the supplied template still exists")
    # a provider without pause and snapshots: those checks are skipped naming the capability
    code, text, rep, seen = run(ready, caps="connect_resume")
    st = {c["name"]: c for c in rep.get("checks", [])}
    check(code == 0 and st.get("discovery", {}).get("status") == "passed"
          and st.get("pause_cli_resume_lua", {}).get("status") == "skipped"
          and "lacks capability pause" in (st["pause_cli_resume_lua"].get("reason") or "")
          and st.get("snapshot_create", {}).get("status") == "skipped"
          and "lacks capability snapshot" in (st["snapshot_create"].get("reason") or ""),
          "without pause and snapshot: exit 0 (%d), those checks skipped naming the capability"
          % code)
    nothing_left(ready, "after the run without capabilities")
    # a key the provider refuses: exit 4 before anything is created, no report
    proj = abxtest.project(abxtest.remote_config("here", "    capabilities: [pause, snapshot]\n"))
    env = dict(os.environ, NO_COLOR="1", ABX_SANDBOX_API_KEY="e2b_" + "0" * 40,
               ABX_SANDBOX_BASE_URL=ready["url"], E2B_SANDBOX_URL=ready["url"])
    p = subprocess.run([abx, "accept", "conditional", "--provider", "here", "--template", "base",
                        "--report", os.path.join(proj, "r.json")], cwd=proj, env=env,
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 4 and "refused the API key" in p.stderr
          and not os.path.exists(os.path.join(proj, "r.json")),
          "a refused key: exit 4, no report (%d): %s" % (p.returncode, p.stderr.strip()[-200:]))
finally:
    serve.terminate()
    serve.wait(timeout=30)

faults = os.path.join(tempfile.mkdtemp(), "faults.yaml")
with open(faults, "w") as f:
    f.write('faults:\n  - route: "POST /sandboxes/*/pause"\n    limit: 1\n'
            '    action: {status: 500}\n  - route: "DELETE /sandboxes/*"\n'
            '    action: {delay_ms: 400}\n')
serve, ready = abxtest.start_serve(abx, "--faults", faults)
try:
    code, text, rep, seen = run(ready)
    check(code == 1, "a run whose first pause fails exits 1 (got %d)" % code)
    status = {c["name"]: c for c in rep.get("checks", [])}
    first = status.get("pause_cli_resume_lua", {})
    check(first.get("status") == "failed" and "<sandbox>" in (first.get("reason") or ""),
          "the CLI's failed pause is a failed check whose reason names <sandbox>: %s"
          % first.get("reason"))
    check(status.get("pause_lua_resume_cli", {}).get("status") == "passed",
          "the other direction still runs and passes")
    check(status.get("memory_continuity", {}).get("status") == "not_run",
          "continuity, which needs both directions, is not run")
    check(status.get("owned_cleanup", {}).get("status") == "passed", "the cleanup passed")
    leaked = [i for kind in seen for i in seen[kind] if i in text]
    check(text and seen["sandbox"] and not leaked,
          "the failed run's report holds no id either (leaked: %s)" % leaked)
    nothing_left(ready, "after the failed run")
finally:
    serve.terminate()
    serve.wait(timeout=30)
finish()
