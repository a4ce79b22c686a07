#!/usr/bin/env python3
"""Ending `abxlua mcp` (stdio) mid-way (issue 15 acceptance): SIGINT and SIGTERM while a long
run_command is in flight end the server with exit 2 after its cleanup; stdin's end of file ends it
with exit 0. Each signal is tried twice:
  remote: the server works on a platform this test runs (a remote provider); the two sandboxes it
    created are gone, a sandbox the test created there itself survives (the server kills only what
    it owns), then the test kills it and stops its platform;
  local: the server starts its own local platform (the default provider; the test gives it the API
    key through ABX_LOCAL_API_KEY, which `abxlua serve` takes, and reads its URL from the server's
    first stderr line), the test creates a sandbox there too; the server kills its two (and only
    those: its cleanup line counts 2) and stops the platform, whose state dir
    $TMPDIR/abxlua-serve.<pid> goes with it.
Every run then leaves no process, mount or cgroup (abxtest.nothing_left). Usage:
test_mcp_interrupt.py ABXLUA"""
import json, os, re, signal, subprocess, sys, tempfile, time
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
sys.path.insert(0, here)
import abxtest
from abxtest import check, finish
from mcptest import Stdio, tool_json

abxtest.needs_platform()
abx = os.path.abspath(sys.argv[1])
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test_mcp_interrupt", "version": "1"}}}
# a sleep this test can tell apart from any other process of the machine
SLEEP = "29.%d" % (os.getpid() % 1000)


def sleeping():
    return any(abxtest.cmdline(p) == b"sleep\0" + SLEEP.encode() + b"\0"
               for p in abxtest.procs_with(SLEEP))


def serve_pids(tmp):
    return [p for p in abxtest.procs_with(tmp) if b"\0serve\0" in abxtest.cmdline(p)]


def exists(ready, sid):
    return abxtest.api(ready, "GET", "/sandboxes/%s" % sid)[0] == 200


def one(mode, sig):
    """One server run; sig None: end it by closing stdin."""
    what = "%s/%s" % (mode, signal.Signals(sig).name if sig else "EOF")
    tmp = tempfile.mkdtemp(prefix="abx-mcp-int.")
    env = dict(os.environ, TMPDIR=tmp, XDG_STATE_HOME=os.path.join(tmp, "state"), NO_COLOR="1",
               E2E_RUN_ID="mcpint%d" % os.getpid())
    for k in ("ABX_PROVIDER", "ABX_CONFIG", "ABX_LOCAL_URL", "ABX_LOCAL_API_KEY"):
        env.pop(k, None)
    serve = None
    if mode == "remote":
        serve, ready = abxtest.start_serve(abx, env=env, log=os.path.join(tmp, "serve.log"))
        cwd = abxtest.project(abxtest.remote_config("here"), root=tmp)
        env.update(ABX_PROVIDER="here", ABX_SANDBOX_API_KEY=ready["api_key"],
                   ABX_SANDBOX_BASE_URL=ready["url"], E2B_SANDBOX_URL=ready["url"])
    else:
        cwd = tmp
        ready = {"api_key": "e2b_" + os.urandom(20).hex()}
        env["ABX_LOCAL_API_KEY"] = ready["api_key"]
    c = Stdio(abx, [], env, cwd, os.path.join(tmp, "mcp.log"))
    t0 = None
    try:
        c.send(INIT)
        r = c.answer(1)
        check(r.get("result", {}).get("protocolVersion") == "2025-06-18", "%s: initialized" % what)
        if mode == "local":
            m = re.search(r"provider local \((http://[^)]+)\)", c.stderr())
            check(m is not None, "%s: the server names its platform's URL" % what)
            ready["url"] = m.group(1)
        ids = [tool_json(c.call(10 + i, "create_sandbox", {"timeout": 120}))["sandbox_id"]
               for i in range(2)]
        st, ext = abxtest.api(ready, "POST", "/sandboxes", {"templateID": "base", "timeout": 120,
                                                           "metadata": {"e2e": "external"}})
        check(st == 201 and ext, "%s: an external sandbox on the same platform (%s)" % (what, st))
        ext = ext["sandboxID"]
        check(all(exists(ready, s) for s in ids + [ext]), "%s: all three are live" % what)
        nb = len(abxtest.bwraps(tmp))
        check(nb >= 3, "%s: sandbox processes (%d bwrap)" % (what, nb))
        if sig:
            c.send({"jsonrpc": "2.0", "id": 20, "method": "tools/call", "params": {
                "name": "run_command", "arguments": {"sandbox_id": ids[0],
                                                     "command": "sleep " + SLEEP}}})
            check(abxtest.wait_until(sleeping, 15, 0.05), "%s: the long command runs" % what)
            t0 = time.time()
            c.p.send_signal(sig)
        else:
            t0 = time.time()
            c.p.stdin.close()
        code = c.p.wait(timeout=40)
        took = time.time() - t0
        log = c.stderr()
        print(log)
        check(code == (2 if sig else 0), "%s: exit %d (got %s)" % (what, 2 if sig else 0, code))
        check(took < 20, "%s: ended %.1f s after the %s" % (what, took, "signal" if sig else "EOF"))
        check("cleanup: 2 owned sandbox(es) killed" in log,
              "%s: the server killed its own two, and only those" % what)
        check(not sleeping(), "%s: the long command is gone" % what)
        if mode == "remote":
            check(not any(exists(ready, s) for s in ids), "%s: the server's sandboxes are gone" % what)
            check(exists(ready, ext), "%s: the external sandbox survives" % what)
            st, _ = abxtest.api(ready, "DELETE", "/sandboxes/%s" % ext)
            check(st == 204, "%s: the external sandbox killed by the test (%s)" % (what, st))
        else:
            check(abxtest.wait_until(lambda: not serve_pids(tmp), 10),
                  "%s: the server's platform stopped" % what)
    finally:
        if c.p.poll() is None:
            c.p.kill()
            c.p.wait()
        if serve:
            serve.terminate()
            serve.wait(timeout=30)
    abxtest.nothing_left(tmp, what)
    left = [d for d in os.listdir(tmp) if d.startswith("abxlua-serve.")]
    check(not left, "%s: no platform state dir left (%s)" % (what, left))


for sig in (signal.SIGINT, signal.SIGTERM):
    for mode in ("remote", "local"):
        one(mode, sig)
one("local", None)
finish()
