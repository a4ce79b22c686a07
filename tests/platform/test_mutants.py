#!/usr/bin/env python3
"""`abxlua serve --mutant` (issue 27 part 1, platform/util/mutant.h, docs/mutants.md).

Usage: test_mutants.py [path/to/abxlua] [NAME,...]

Each api and ingress mutant fires: a probe (one per mutant, below) looks for exactly the lie its
catalogue row describes, and must see it on a serve started with that mutant and must NOT see it
on a truthful serve (no --mutant): so each fire:<mutant> check fails whenever the mutant does not
lie, and whenever the probe would call the truth a lie. Then: an unknown name, a bad parameter and
a mutant of another flavour are usage errors (exit 4) naming the valid mutants; `--mutant list` is
a JSON array of all 18 rows with their fields filled; serve's first log line names the mutants on;
the envd mutants reach envd's environment as ABX_ENVD_MUTANTS (read from /proc/<envd>/environ),
and only they.

ABX_MUTANTS_OFF=1 starts every "mutant" serve without its mutant: every fire:* check must then
FAIL (how to see that each can fail). A second argument runs only the named checks. Exit 1 when a
check failed, 77 when skipped (not root, no bubblewrap, envd does not start).
"""
import json
import os
import re
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_platform as tp  # noqa: E402  (Server, check, sandbox_pids, meta_param)

check = tp.check
OFF = os.environ.get("ABX_MUTANTS_OFF") == "1"
BARE = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
API = ["resume-noop", "kill-noop", "set-timeout-noop", "next-token-ignored",
       "metadata-filter-ignored", "state-filter-ignored", "end-at-missing", "metadata-dropped",
       "connect-shortens-ttl", "v2-routes-405", "create-before-ready"]
INGRESS = ["transient-502"]
ENVD = ["binary-read-mangled", "large-upload-dropped", "exit-code-zero", "stderr-as-stdout",
        "stream-no-end", "command-tail-1s"]
FLAVORS = ["e2b", "alicloud-fc", "alicloud-express", "acs", "cubesandbox", "opensandbox"]


def created(s, **fields):
    """A new sandbox's id; created.answered is when its create answered (time.time())."""
    st, _, j = s.create(**fields)
    created.answered = time.time()
    check(st == 201, "create: %d %r" % (st, j))
    return j["sandboxID"]


def get(s, sid):
    st, _, j = s.json("GET", "/sandboxes/" + sid)
    check(st == 200, "GET /sandboxes/%s: %d %r" % (sid, st, j))
    return j


def ttl_left(s, sid):
    """Seconds from now to the sandbox's endAt."""
    from datetime import datetime
    end = get(s, sid)["endAt"]
    return datetime.strptime(end.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp() - time.time()


def envd(s, sid, path="/health"):
    """A request to the sandbox's envd through serve's ingress: (status, headers, body)."""
    return s.request("GET", path, key=False,
                     headers={"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": str(tp.ENVD_PORT)})


def ids(j):
    return [x["sandboxID"] for x in j]


# ---- the probes: each returns (lied, what it saw) ----------------------------------------------

def p_resume_noop(s):
    sid = created(s)
    st, _, _ = s.request("POST", "/sandboxes/%s/pause" % sid)
    check(st == 204, "pause: %d" % st)
    st, _, j = s.json("POST", "/sandboxes/%s/connect" % sid, {"timeout": 60})
    state = get(s, sid)["state"]
    check(st in (200, 201), "connect of the paused sandbox: %d %r" % (st, j))
    return state == "paused", "connect %d, then state %s" % (st, state)


def p_kill_noop(s):
    sid = created(s)
    st, _, _ = s.request("DELETE", "/sandboxes/" + sid)
    check(st == 204, "kill: %d" % st)
    after, _, _ = s.request("GET", "/sandboxes/" + sid)
    return after == 200, "DELETE 204, then GET %d" % after


def p_set_timeout_noop(s):
    sid = created(s, timeout=60)
    st, _, _ = s.request("POST", "/sandboxes/%s/timeout" % sid, {"timeout": 600})
    check(st == 204, "set timeout: %d" % st)
    left = ttl_left(s, sid)
    return left < 300, "timeout 600 answered 204, endAt in %.0f s" % left


def p_next_token_ignored(s):
    for _ in range(2):
        created(s)
    st, hd, first = s.json("GET", "/v2/sandboxes?limit=1")
    token = hd.get("x-next-token")
    check(st == 200 and len(first) == 1 and token, "first page: %d %r %r" % (st, first, token))
    st, hd, second = s.json("GET", "/v2/sandboxes?limit=1&nextToken=" + urllib.parse.quote(token))
    check(st == 200, "second page: %d %r" % (st, second))
    return (ids(second) == ids(first) and bool(hd.get("x-next-token")),
            "page 1 %r, page 2 %r" % (ids(first), ids(second)))


def p_metadata_filter_ignored(s):
    created(s, metadata={"who": "probe"})
    st, _, j = s.json("GET", "/v2/sandboxes?metadata=" + tp.meta_param({"who": "nobody"}))
    st1, _, j1 = s.json("GET", "/sandboxes?metadata=" + tp.meta_param({"who": "nobody"}))
    check(st == 200 and st1 == 200, "lists: %d %d" % (st, st1))
    return bool(j) and bool(j1), "a filter matching nothing listed v2 %d, v1 %d" % (len(j), len(j1))


def p_state_filter_ignored(s):
    created(s)
    st, _, j = s.json("GET", "/v2/sandboxes?state=paused")
    check(st == 200, "list: %d %r" % (st, j))
    return bool(j), "state=paused listed %r (none is paused)" % [x["state"] for x in j]


def p_end_at_missing(s):
    sid = created(s)
    one = get(s, sid)
    st, _, lst = s.json("GET", "/v2/sandboxes")
    check(st == 200 and lst, "list: %d %r" % (st, lst))
    return ("endAt" not in one and all("endAt" not in x for x in lst),
            "get has endAt: %s, list: %s" % ("endAt" in one, ["endAt" in x for x in lst]))


def p_metadata_dropped(s):
    sid = created(s, metadata={"who": "probe"})
    meta = get(s, sid)["metadata"]
    return meta == {}, "created with {who: probe}, get shows %r" % (meta,)


def p_connect_shortens_ttl(s):
    sid = created(s, timeout=600)
    st, _, j = s.json("POST", "/sandboxes/%s/connect" % sid, {"timeout": 30})
    check(st == 200, "connect: %d %r" % (st, j))
    left = ttl_left(s, sid)
    return left < 300, "TTL 600, connect timeout 30: endAt in %.0f s" % left


def p_v2_routes_405(s):
    g, _, _ = s.request("GET", "/v2/sandboxes")
    p, _, _ = s.request("POST", "/v2/sandboxes", {})  # truthful: 400, templateID is required
    v1, _, _ = s.request("GET", "/sandboxes")
    check(v1 == 200, "GET /sandboxes (v1): %d" % v1)
    return g == 405 and p == 405, "GET /v2/sandboxes %d, POST /v2/sandboxes %d" % (g, p)


def p_create_before_ready(s):
    """The first envd request right after the create answered; only one sent within 1.5 s of the
    answer counts (a busy machine may delay it past the 2 s): a fresh sandbox is tried again."""
    for _ in range(5):
        sid = created(s)
        sent = time.time()
        st, hd, body = envd(s, sid)
        bare = st == 502 and body == BARE and hd.get("content-type", "").startswith("text/html")
        if bare:  # only its first 2 s: then envd answers
            deadline = time.time() + 30
            while st != 204 and time.time() < deadline:
                time.sleep(0.2)
                st, _, _ = envd(s, sid)
            check(st == 204, "envd still answers %d after the first 2 s" % st)
            return True, "the first envd request: bare 502, later 204"
        if sent - created.answered < 1.5:
            return False, "the first envd request %.2f s after the create answered: %d %r" % (
                sent - created.answered, st, body[:80])
    raise AssertionError("inconclusive: no envd request went out within 1.5 s of a create in 5 tries")


def p_transient_502(s):
    sid = created(s)
    seen = []
    for i in range(1, 91):
        st, hd, body = envd(s, sid)
        if st == 502:
            check(body == BARE and hd.get("content-type", "").startswith("text/html"),
                  "request %d: 502 but not the bare page: %r %r" % (i, hd, body[:200]))
            seen.append(i)
        else:
            check(st == 204, "request %d: %d %r" % (i, st, body[:200]))
    # 1 in 3 drawn per request: about 30 of 90, and some back to back (a retry can meet another)
    twice = any(b - a == 1 for a, b in zip(seen, seen[1:]))
    return 15 <= len(seen) <= 50 and twice, "bare 502s at requests %r of 90 (transient-502:3)" % seen


PROBES = {"resume-noop": p_resume_noop, "kill-noop": p_kill_noop,
          "set-timeout-noop": p_set_timeout_noop, "next-token-ignored": p_next_token_ignored,
          "metadata-filter-ignored": p_metadata_filter_ignored,
          "state-filter-ignored": p_state_filter_ignored, "end-at-missing": p_end_at_missing,
          "metadata-dropped": p_metadata_dropped, "connect-shortens-ttl": p_connect_shortens_ttl,
          "v2-routes-405": p_v2_routes_405, "create-before-ready": p_create_before_ready,
          "transient-502": p_transient_502}
SPEC = {"transient-502": "transient-502:3"}


def kill_all(s):
    st, _, j = s.json("GET", "/v2/sandboxes")
    for sid in ids(j) if st == 200 else []:
        s.request("DELETE", "/sandboxes/" + sid)


def fires(name, truthful):
    """The check fire:<name>: the probe sees the lie on a serve with the mutant, not on `truthful`."""
    def run(_s, _ctx):
        s = tp.Server(args=() if OFF else ("--mutant", SPEC.get(name, name)))
        try:
            lied, saw = PROBES[name](s)
        finally:
            s.stop()
        check(lied, "with --mutant %s the lie was not seen: %s" % (name, saw))
        try:
            lied, saw = PROBES[name](truthful)
        finally:
            kill_all(truthful)
        check(not lied, "the truthful serve was taken for a lie: %s" % saw)
    run.__name__ = "t_fire:" + name
    return run


# ---- the option, the catalogue, the log line, envd's environment ------------------------------

def t_unknown_is_usage_error(_s, _ctx):
    names = API + INGRESS + ENVD
    for args, want in [(["--mutant", "no-such-mutant"], b"unknown mutant 'no-such-mutant'"),
                       (["--mutant", "kill-noop,no-such"], b"unknown mutant 'no-such'"),
                       (["--mutant", "transient-502:0"], b"must be an integer 1..1000"),
                       (["--mutant", "kill-noop:2"], b"takes no parameter"),
                       (["--mutant", "kill-noop,kill-noop"], b"named twice"),
                       (["--flavor", "opensandbox", "--mutant", "kill-noop"],
                        b"does not apply to the flavor opensandbox")]:
        p = subprocess.run([tp.BIN, "serve", "--port", "0"] + args, capture_output=True, timeout=30)
        check(p.returncode == 4 and want in p.stderr,
              "%s: exit %d %r" % (" ".join(args), p.returncode, p.stderr[-400:]))
    p = subprocess.run([tp.BIN, "serve", "--mutant", "no-such-mutant"], capture_output=True, timeout=30)
    missing = [n for n in names if n.encode() not in p.stderr]
    check(b"valid mutants are" in p.stderr and not missing,
          "the error does not name the valid mutants %r: %r" % (missing, p.stderr[-600:]))


def capabilities():
    """The capability names of lib/abx/run/config.lua (M.CAPABILITIES)."""
    text = open(os.path.join(ROOT, "lib", "abx", "run", "config.lua")).read()
    block = re.search(r"M\.CAPABILITIES = \{(.*?)\}", text, re.S).group(1)
    return set(re.findall(r'"([a-z_0-9]+)"', block))


def t_list_is_the_catalogue(_s, _ctx):
    p = subprocess.run([tp.BIN, "serve", "--mutant", "list"], capture_output=True, timeout=30)
    check(p.returncode == 0, "--mutant list: exit %d %r" % (p.returncode, p.stderr[-300:]))
    rows = json.loads(p.stdout)
    check(isinstance(rows, list), "not a JSON array: %r" % rows)
    check([r.get("name") for r in rows] == API + INGRESS + ENVD,
          "the names: %r" % [r.get("name") for r in rows])
    caps = capabilities()
    for r in rows:
        for k in ("source", "wire"):
            check(isinstance(r.get(k), str) and len(r[k]) > 5, "%s: %s %r" % (r["name"], k, r.get(k)))
        check(isinstance(r.get("flavors"), list) and r["flavors"] and set(r["flavors"]) <= set(FLAVORS),
              "%s: flavors %r" % (r["name"], r.get("flavors")))
        check(isinstance(r.get("requires"), list) and set(r["requires"]) <= caps,
              "%s: requires %r (capabilities: %r)" % (r["name"], r.get("requires"), sorted(caps)))
        want = "api" if r["name"] in API else "ingress" if r["name"] in INGRESS else "envd"
        check(r.get("layer") == want, "%s: layer %r, not %s" % (r["name"], r.get("layer"), want))
    t502 = rows[len(API)]
    check(t502.get("parameter") == {"default": 2, "min": 1, "max": 1000},
          "transient-502's parameter: %r" % t502.get("parameter"))
    check(all("parameter" not in r for r in rows if r["name"] != "transient-502"),
          "a row without a parameter has one")


def first_line(proc):
    """serve's first line on stderr."""
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = os.read(proc.stderr.fileno(), 1)
        if not chunk:
            break
        buf += chunk
    return buf.decode(errors="replace")


def t_first_log_line(_s, _ctx):
    s = tp.Server(args=("--mutant", "transient-502", "--mutant", "kill-noop"))
    try:
        line = first_line(s.proc)
    finally:
        s.stop()
    check(line.rstrip().endswith("abxlua serve: mutants on: kill-noop, transient-502:2 (docs/mutants.md)"),
          "first line: %r" % line)
    s = tp.Server()
    try:
        line = first_line(s.proc)
    finally:
        s.stop()
    check("mutants" not in line, "a serve without --mutant names mutants: %r" % line)


def envd_environ(s):
    """The environment of the envd of serve `s`'s one sandbox: /proc/<pid>/environ of the process
    running `/opt/abx/abxlua envd` among its sandboxes' processes, read as root."""
    for pid in tp.sandbox_pids(s.state_dir):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmd = f.read().split(b"\0")
            if cmd[:2] != [b"/opt/abx/abxlua", b"envd"]:
                continue
            with open("/proc/%d/environ" % pid, "rb") as f:
                env = f.read().split(b"\0")
            return dict(e.decode(errors="replace").split("=", 1) for e in env if b"=" in e)
        except OSError:
            continue
    raise AssertionError("no envd process among serve's sandboxes")


def t_envd_gets_its_mutants(_s, _ctx):
    """Two envd mutants and an api one: envd's environment names the envd ones alone."""
    mutants = "kill-noop,stderr-as-stdout,exit-code-zero"
    s = tp.Server(args=() if OFF else ("--mutant", mutants))
    try:
        created(s)
        env = envd_environ(s)
    finally:
        s.stop()
    check(env.get("ABX_ENVD_MUTANTS") == "exit-code-zero,stderr-as-stdout",
          "ABX_ENVD_MUTANTS in envd's environment: %r (--mutant %s)" % (env.get("ABX_ENVD_MUTANTS"), mutants))


def t_no_envd_mutants_no_variable(_s, _ctx):
    s = tp.Server(args=("--mutant", "kill-noop"))
    try:
        created(s)
        env = envd_environ(s)
    finally:
        s.stop()
    check("ABX_ENVD_MUTANTS" not in env, "ABX_ENVD_MUTANTS without an envd mutant: %r" % env)


def main():
    only = sys.argv[2] if len(sys.argv) > 2 else None
    truthful = tp.start_for_checks("freezer")
    if isinstance(truthful, int):
        return truthful
    checks = [fires(n, truthful) for n in API + INGRESS] + [
        t_unknown_is_usage_error, t_list_is_the_catalogue, t_first_log_line,
        t_envd_gets_its_mutants, t_no_envd_mutants_no_variable]
    try:
        failed = tp.run_checks(truthful, {}, checks, only=only, width=34)
    finally:
        code, _, err = truthful.stop()
    if code != 0:
        print("FAIL truthful serve exit %r: %s" % (code, err.decode(errors="replace")[-400:]))
        failed += 1
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
