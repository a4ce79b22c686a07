#!/usr/bin/env python3
"""An engine that stays honest when the platform lies or stumbles (issue 27 part 4): runs the
cases of honest_case.lua against honest_api.py, one mode at a time, as a remote provider:

  - a list whose next token repeats, or whose pages repeat ids, is a Protocol error at once
    (naming the token and the page count), and an endless list stops at its bound: a few list
    requests, never a loop until the test's deadline;
  - a 405 on POST /v2/sandboxes names its method and route on the console and in every report
    (JSON, JUnit, TAP, HTML, CTRF) and says which setting to change (route_version: v1);
  - a bare HTML 502 on 1 of 3 gets is retried (the run passes; the JSON report and the summary
    count the retries); on every get it is Unavailable after 4 attempts, never SandboxGone, with
    one line of the HTML;
  - a DELETE answered 204 that kills nothing: the cleanup lists by tag again, its line says how
    many sandboxes are still alive and which, and the run exits 1; so does `abxlua cleanup`;
  - a list that ignores the metadata filter: the sweep kills no sandbox without the run's tag and
    says so, and the run exits 1.

Usage: test_honest.py ABXLUA"""
import json, os, re, subprocess, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import honest_api
from abxtest import check, finish, project, remote_config

abx = os.path.abspath(sys.argv[1])
here = os.path.dirname(os.path.abspath(__file__))
CASE = os.path.join(here, "honest_case.lua")
KEY = "e2b_0123456789abcdef0123"
# without the checks a lying list loops until the test's deadline: keep that short
DEFAULTS = "defaults:\n  test_timeout: 40\n  jobs: 1\n"
REPORTS = ("json", "junit", "tap", "html", "ctrf")


def run(mode, k, extra="", after=None, seed=()):
    """Runs the cases matching -k against a fake in `mode` holding the sandboxes `seed` ({id,
    metadata} each) first, then after(env, proj, reports) while the fake still answers. Returns
    (process, output, reports {name: text}, the fake's state)."""
    srv = honest_api.start(mode)
    for sbx in seed:
        srv.state.sandboxes[sbx["id"]] = sbx
    proj = project(DEFAULTS + remote_config("fake", extra))
    out_dir = tempfile.mkdtemp()
    env = dict(os.environ, ABX_SANDBOX_API_KEY=KEY, NO_COLOR="1",
               ABX_SANDBOX_BASE_URL="http://127.0.0.1:%d" % srv.server_address[1])
    for name in ("ABX_CONFIG", "ABX_PROVIDER", "ABX_FLAVOR", "CI", "E2E_RUN_ID"):
        env.pop(name, None)
    argv = [abx, "run", "-k", k, CASE]
    for r in REPORTS:
        argv += ["--" + r, os.path.join(out_dir, "report." + r)]
    try:
        p = subprocess.run(argv, cwd=proj, env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as e:  # a loop that never ends: killed, counted as exit -1
        p = subprocess.CompletedProcess(argv, -1, (e.stdout or b"").decode(errors="replace"),
                                        (e.stderr or b"").decode(errors="replace"))
    out = p.stdout + p.stderr
    print("--- %s (-k %r): exit %d" % (mode, k, p.returncode))
    print(out)
    reports = {}
    for r in REPORTS:
        try:
            with open(os.path.join(out_dir, "report." + r)) as f:
                reports[r] = f.read()
        except OSError:
            reports[r] = ""
    if after:
        after(env, proj, reports)
    srv.shutdown()
    check(KEY not in out, mode + ": the key is masked")
    return p, out, reports, srv.state


def lists(state):
    return sum(1 for e in state.log if e[0] == "GET" and e[1] == "/v2/sandboxes")


def test_error(reports):
    """The JSON report's first test's error, or {}."""
    try:
        return (json.loads(reports["json"])["tests"][0]["error"]) or {}
    except (ValueError, IndexError, KeyError, TypeError):
        return {}


# --- paging -------------------------------------------------------------------------------------
p, out, reports, st = run("honest", "paging honest")
check(p.returncode == 0, "honest paging: the run passes (exit %d)" % p.returncode)

p, out, reports, st = run("repeat-token", "paging repeat-token")
check(p.returncode == 1, "repeat-token: the run fails (exit %d)" % p.returncode)
check('Protocol: GET /v2/sandboxes answered 200: next token "tok-same" repeats after 2 pages' in out,
      "repeat-token: a Protocol error naming the request, the token and the page count")
# preflight 1, the test's list 2 pages, the cleanup's sweep and its check 2: never a loop
check(lists(st) <= 8, "repeat-token: %d list requests in all (at most 8)" % lists(st))

p, out, reports, st = run("repeat-ids", "paging repeat-ids")
check(p.returncode == 1, "repeat-ids: the run fails (exit %d)" % p.returncode)
check(re.search(r'Protocol: GET /v2/sandboxes answered 200: page 2 repeats id "ifake\d+" of page 1',
                out) is not None, "repeat-ids: a Protocol error naming the id and the pages")
check(lists(st) <= 8, "repeat-ids: %d list requests in all (at most 8)" % lists(st))

p, out, reports, st = run("endless", "paging endless")
check(p.returncode == 1, "endless: the run fails (exit %d)" % p.returncode)
check('Protocol: GET /v2/sandboxes answered 200: more than 1000 pages (next token "tok-' in out,
      "endless: the list stops at its bound, naming it")

# --- a 405 names its route and the setting --------------------------------------------------------
p, out, reports, st = run("v2-405", "route v2-405",
                          "    route_version: v2\n    capabilities: [v2_routes]\n")
check(p.returncode == 1, "v2-405: the run fails (exit %d)" % p.returncode)
ROUTE = "POST /v2/sandboxes answered 405: method not allowed"
check("Sandbox: " + ROUTE + " (the v2 route comes from providers.fake: route_version v2" in out,
      "v2-405: the console names the route and where the route version comes from")
check("`route_version: v1` there" in out, "v2-405: the console says which setting to change")
for r in REPORTS:
    check(ROUTE in reports[r], "v2-405: the %s report names the route" % r)
check(ROUTE in test_error(reports).get("message", ""), "v2-405: the JSON error's message")

# --- a gateway's bare 502 -------------------------------------------------------------------------
p, out, reports, st = run("bare-502:3", "gateway bare-502")
check(p.returncode == 0, "bare-502 on 1 of 3 gets: the run passes (exit %d)" % p.returncode)
try:
    retries = json.loads(reports["json"])["retries"]
except (ValueError, KeyError):
    retries = None
check(retries is not None and retries >= 2, "bare-502 1 of 3: the JSON report counts %s retries"
      % retries)
check(re.search(r"retry 1/3 of GET /sandboxes/\S+ after HTTP 502 \(a gateway's bare answer\)", out)
      is not None, "bare-502 1 of 3: each retry is logged")
check(re.search(r"^1 passed, 0 failed, 0 skipped, 0 xfailed, %s retries in " % retries, p.stdout,
                re.M) is not None,
      "bare-502 1 of 3: the summary line mentions the retries")

p, out, reports, st = run("bare-502:1", "gateway bare-502")
check(p.returncode == 1, "bare-502 on every get: the run fails (exit %d)" % p.returncode)
check(re.search(r"Unavailable: GET /sandboxes/\S+ answered 502: 502 Bad Gateway \(a gateway's "
                r"answer, no platform JSON\) after 4 attempts", out) is not None,
      "bare-502 always: Unavailable after 4 attempts, one line of the HTML")
check("SandboxGone" not in out and "<html" not in out and "<center>" not in out,
      "bare-502 always: never SandboxGone, no HTML quoted")
check(test_error(reports).get("kind") == "Unavailable", "bare-502 always: the JSON error's kind")

# --- cleanup verifies -----------------------------------------------------------------------------
def janitor(env, proj, reports):
    """`abxlua cleanup --run-id ID --yes` on what the run left: it must not believe the 204."""
    try:
        run_id = json.loads(reports["json"])["run_id"]
    except (ValueError, KeyError):
        run_id = "none"
    j = subprocess.run([abx, "cleanup", "--run-id", run_id, "--yes"], cwd=proj, env=env,
                       capture_output=True, text=True, timeout=120)
    print(j.stdout + j.stderr)
    check(j.returncode == 1, "kill-noop: abxlua cleanup --yes exits 1 (got %d)" % j.returncode)
    check(re.search(r"^cleanup: 1 sandbox\(es\) still alive after the kills: ifake\d+$", j.stdout,
                    re.M) is not None, "kill-noop: abxlua cleanup names the sandbox still alive")


p, out, reports, st = run("kill-noop", "cleanup kill-noop", after=janitor)
alive = sorted(st.sandboxes)
check(len(alive) == 1, "kill-noop: the fake kept its sandbox (%s)" % alive)
check(p.returncode == 1, "kill-noop: the run's exit status is 1 (got %d)" % p.returncode)
m = re.search(r"^cleanup: .*; 1 sandboxes still alive after the cleanup \(listed by tag e2e=\S+\): "
              r"(\S+)$", p.stdout, re.M)
check(m is not None and alive and m.group(1) == alive[0],
      "kill-noop: the cleanup line says 1 is still alive and names it")
try:
    cleanup = json.loads(reports["json"])["cleanup"]
except (ValueError, KeyError):
    cleanup = {}
check((cleanup or {}).get("alive") == alive, "kill-noop: the JSON report's cleanup.alive names it")

# a list that ignores the metadata filter: the sweep kills only what carries the run's tag
OTHER = {"id": "iotherrun00000000001", "metadata": {"e2e": "another-run"}}
p, out, reports, st = run("filter-ignored", "cleanup kill-noop", seed=[OTHER])
check(OTHER["id"] in st.sandboxes, "filter-ignored: another run's sandbox was not killed")
check(not any(e[0] == "DELETE" and OTHER["id"] in e[1] for e in st.log),
      "filter-ignored: no DELETE was sent for it")
check(p.returncode == 1, "filter-ignored: the run fails (exit %d)" % p.returncode)
check(re.search(r"^cleanup error: the list by tag e2e=\S+ also gave 1 sandboxes without that tag "
                r"\(the platform ignores the metadata filter\): not killed$", p.stdout, re.M)
      is not None, "filter-ignored: the cleanup says the list ignored its filter")
finish()
