#!/usr/bin/env python3
"""tests/envd/test_envd.py: envd (`abxlua envd`) over real HTTP, inside bubblewrap.

Usage: test_envd.py <path to abxlua>. Runs envd in a bwrap sandbox (own pid namespace, a
throwaway /etc/passwd with root and user:1000, /home/user on a temp dir) on a free loopback
port, then checks the process and filesystem Connect services, /files, /init and auth, and
(t_mutants) that each envd mutant of ABX_ENVD_MUTANTS lies only when named, on an envd of its own.
Protocol source: docs/protocol/envd-protocol.md (sections cited per check).
Exit code 0 when every check passes; 77 (skip) when bwrap is missing or cannot run.
"""
import base64
import hashlib
import http.client
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import abxtest  # noqa: E402

TOKEN = "tok-secret-123"
ENVD_VERSION = "0.6.4"  # §9: PTY, watch with entries, metadata, gzip upload
FAILS = []
PORT = 0


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("  FAIL:", what, flush=True)
    return cond


def conn():
    return http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)


def basic(user):
    return "Basic " + base64.b64encode((user + ":").encode()).decode()


def hdrs(user=None, token=TOKEN, extra=None):
    h = {}
    if token:
        h["X-Access-Token"] = token
    if user:
        h["Authorization"] = basic(user)
    if extra:
        h.update(extra)
    return h


def unary(path, msg, user=None, token=TOKEN, ctype="application/json", raw=None, extra=None):
    c = conn()
    body = raw if raw is not None else json.dumps(msg).encode()
    h = hdrs(user, token, extra)
    h["Content-Type"] = ctype
    c.request("POST", path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    try:
        j = json.loads(data) if data else None
    except ValueError:
        j = None
    return r.status, j


def envelope(msg):
    p = json.dumps(msg).encode()
    return struct.pack(">BI", 0, len(p)) + p


class Stream:
    """A server stream: iterate (flags, json) envelopes incrementally."""

    def __init__(self, path, msg, user=None, token=TOKEN, extra=None, raw=None):
        self.c = conn()
        h = hdrs(user, token, extra)
        h["Content-Type"] = "application/connect+json"
        self.c.request("POST", path, body=raw if raw is not None else envelope(msg), headers=h)
        self.r = self.c.getresponse()
        self.status = self.r.status

    def next(self):
        head = self.r.read(5)
        if len(head) < 5:
            return None
        flags, n = struct.unpack(">BI", head)
        payload = self.r.read(n)
        return flags, json.loads(payload)

    def all(self):
        out = []
        if self.status != 200:
            self.body = self.r.read()
            self.c.close()
            return out
        while True:
            e = self.next()
            if e is None:
                break
            out.append(e)
        self.c.close()
        return out

    def close(self):
        self.c.close()


def run(cmd, args=(), user=None, envs=None, cwd=None, stdin=False, extra=None, tag=None):
    proc = {"cmd": cmd, "args": list(args)}
    if envs:
        proc["envs"] = envs
    if cwd is not None:
        proc["cwd"] = cwd
    msg = {"process": proc, "stdin": stdin}
    if tag:
        msg["tag"] = tag
    s = Stream("/process.Process/Start", msg, user=user, extra=extra)
    return summarize(s.status, s.all())


def summarize(status, evs):
    """-> dict(status, pid, stdout, stderr, end, trailer, order_ok, keepalives)"""
    res = {"status": status, "pid": None, "stdout": b"", "stderr": b"", "pty": b"", "end": None,
           "trailer": None, "keepalives": 0, "events": evs}
    order_ok = True
    for i, (flags, m) in enumerate(evs):
        if flags == 2:
            res["trailer"] = m
            order_ok = order_ok and i == len(evs) - 1
            continue
        ev = m.get("event", {})
        if "start" in ev:
            res["pid"] = ev["start"].get("pid")
            order_ok = order_ok and i == 0
        elif "data" in ev:
            d = ev["data"]
            if "stdout" in d:
                res["stdout"] += base64.b64decode(d["stdout"])
            if "stderr" in d:
                res["stderr"] += base64.b64decode(d["stderr"])
            if "pty" in d:
                res["pty"] += base64.b64decode(d["pty"])
        elif "keepalive" in ev:
            res["keepalives"] += 1
        elif "end" in ev:
            res["end"] = ev["end"]
    res["order_ok"] = order_ok
    return res


def sign(path, op, user, token, exp=None):
    raw = f"{path}:{op}:{user}:{token}" + (f":{exp}" if exp is not None else "")
    return "v1_" + base64.b64encode(hashlib.sha256(raw.encode()).digest()).decode().rstrip("=")


def files_get(path, user=None, token=TOKEN, params=None):
    q = {"path": path}
    if user:
        q["username"] = user
    if params:
        q.update(params)
    c = conn()
    c.request("GET", "/files?" + urllib.parse.urlencode(q), headers=hdrs(None, token))
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def files_post(path, data, user=None, token=TOKEN, ctype="application/octet-stream",
               params=None):
    q = {}
    if path is not None:
        q["path"] = path
    if user:
        q["username"] = user
    if params:
        q.update(params)
    c = conn()
    h = hdrs(None, token)
    h["Content-Type"] = ctype
    c.request("POST", "/files?" + urllib.parse.urlencode(q), body=data, headers=h)
    r = c.getresponse()
    body = r.read()
    c.close()
    try:
        return r.status, json.loads(body)
    except ValueError:
        return r.status, body


def list_pids():
    st, j = unary("/process.Process/List", {})
    return st, [p["pid"] for p in (j or {}).get("processes", [])], j


# ---------------------------------------------------------------------------------------------


def t_health_init():
    c = conn()
    c.request("GET", "/health")
    r = c.getresponse()
    check(r.status == 204 and r.read() == b"", "GET /health -> 204 empty")
    st, j = unary("/process.Process/List", {}, token=None)
    check(st == 200, f"List before a token is set -> 200 (got {st})")
    c = conn()
    c.request("POST", "/init", body=json.dumps({"accessToken": TOKEN, "envVars": {"FOO": "bar"}}),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    check(r.status == 204, f"first /init -> 204 (got {r.status})")
    check(r.getheader("X-Envd-Version") == ENVD_VERSION, f"X-Envd-Version: {ENVD_VERSION}")
    st, j = unary("/process.Process/List", {}, token=None)
    check(st == 401 and j == {"code": 401, "message": "unauthorized access, please provide a "
                                "valid access token or method signing if supported"},
          f"List without token -> 401 JSON (got {st} {j})")
    st, j = unary("/process.Process/List", {}, token="wrong")
    check(st == 401, f"List with a wrong token -> 401 (got {st})")
    s = Stream("/process.Process/Start", {"process": {"cmd": "true"}}, token=None)
    s.all()
    check(s.status == 401, f"Start without token -> plain 401 (got {s.status})")
    c = conn()
    c.request("POST", "/init", body=b"{}", headers={"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    check(r.status == 401, f"second /init without token -> 401 (got {r.status})")
    c = conn()
    c.request("POST", "/init", body=json.dumps({"envVars": {"FOO": "bar"}}),
              headers={"Content-Type": "application/json", "X-Access-Token": TOKEN})
    r = c.getresponse()
    r.read()
    check(r.status == 204, f"second /init with token -> 204 (got {r.status})")


def t_connect_codec():
    st, j = unary("/process.Process/List", None, raw=b"")
    check(st == 400 and j and j.get("code") == "invalid_argument", f"empty unary body -> 400 "
          f"invalid_argument (got {st} {j})")
    st, j = unary("/process.Process/List", None, raw=b"{nope")
    check(st == 400 and j and j.get("code") == "invalid_argument", "bad JSON -> invalid_argument")
    st, _ = unary("/process.Process/List", None, raw=b"", ctype="application/proto")
    check(st == 415, f"application/proto -> 415 (got {st})")
    st, j = unary("/process.Process/List", {"unknownField": 1}, ctype="application/json; charset=utf-8")
    check(st == 200, f"unknown fields ignored, charset accepted (got {st})")
    s = Stream("/process.Process/Start", None, raw=b"\x00\x00\x00")
    evs = s.all()
    check(s.status == 200 and len(evs) == 1 and evs[0][0] == 2 and
          evs[0][1].get("error", {}).get("code") == "invalid_argument",
          f"truncated envelope -> 200 + end-stream invalid_argument (got {s.status} {evs})")
    s = Stream("/process.Process/Start", None, raw=struct.pack(">BI", 0, 0xFFFFFFF0) + b"{}")
    evs = s.all()
    check(len(evs) == 1 and evs[0][0] == 2 and "error" in evs[0][1], "huge envelope length -> error")
    st, j = unary("/filesystem.Filesystem/Nope", {})
    check(st == 404, f"unknown method -> 404 (got {st})")


def t_start_basic():
    r = run("/bin/sh", ["-c", "echo out; echo err >&2"])
    check(r["status"] == 200 and r["order_ok"], "Start stream shape (start first, trailer last)")
    check(isinstance(r["pid"], int) and r["pid"] > 0, f"start event has pid ({r['pid']})")
    check(r["stdout"] == b"out\n" and r["stderr"] == b"err\n",
          f"stdout/stderr ({r['stdout']!r} {r['stderr']!r})")
    check(r["end"] == {"exited": True, "status": "exit status 0"}, f"end exit 0 ({r['end']})")
    check(r["trailer"] == {}, f"end-stream {{}} ({r['trailer']})")
    r = run("/bin/sh", ["-c", "exit 3"])
    check(r["end"] == {"exitCode": 3, "exited": True, "status": "exit status 3",
                       "error": "exit status 3"}, f"end exit 3 ({r['end']})")
    r = run("/bin/sh", ["-c", "kill -9 $$"])
    check(r["end"] == {"exitCode": -1, "status": "signal: killed", "error": "signal: killed"},
          f"end killed ({r['end']})")
    r = run("/no/such/binary")
    check(r["trailer"].get("error", {}).get("code") == "invalid_argument" and r["pid"] is None,
          f"spawn failure -> invalid_argument ({r['trailer']})")


def t_cwd_env_user():
    r = run("pwd", cwd="/tmp")
    check(r["stdout"] == b"/tmp\n", f"cwd /tmp ({r['stdout']!r})")
    r = run("pwd")
    check(r["stdout"] == b"/root\n", f"root default cwd is home ({r['stdout']!r})")
    r = run("pwd", user="user")
    check(r["stdout"] == b"/home/user\n", f"user default cwd is home ({r['stdout']!r})")
    r = run("pwd", user="user", cwd="sub/..")
    check(r["stdout"] == b"/home/user\n", f"relative cwd joins home ({r['stdout']!r})")
    r = run("pwd", cwd="/does/not/exist")
    err = r["trailer"].get("error", {})
    check(err.get("code") == "invalid_argument" and "does not exist" in err.get("message", ""),
          f"missing cwd -> invalid_argument ({err})")
    r = run("/bin/sh", ["-c", 'echo "$FOO|$BAR|$E2B_SANDBOX|$HOME|$USER|$LOGNAME|$PATH"'],
            user="user", envs={"BAR": "baz"})
    check(r["stdout"] == b"bar|baz|true|/home/user|user|user|"
          b"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n",
          f"environment ({r['stdout']!r})")
    r = run("/bin/sh", ["-c", "echo $FOO"], envs={"FOO": "override"})
    check(r["stdout"] == b"override\n", "request envs override /init envVars")
    r = run("env")
    check(TOKEN.encode() not in r["stdout"] and b"ENVD" not in r["stdout"],
          "no envd environment or token leaks into children")
    r = run("id", ["-u"], user="user")
    check(r["stdout"] == b"1000\n", f"user runs as uid 1000 ({r['stdout']!r})")
    r = run("id", ["-G"], user="user")
    check(r["stdout"].split() == [b"1000"], f"user groups ({r['stdout']!r})")
    r = run("id", ["-u"], user="root")
    check(r["stdout"] == b"0\n", f"root runs as uid 0 ({r['stdout']!r})")
    r = run("id", user="nobody2")
    err = r["trailer"].get("error", {}) if r["trailer"] else {}
    check(err.get("code") == "unauthenticated" and err.get("message") ==
          "invalid username: 'nobody2'", f"unknown user -> unauthenticated ({err})")
    st, j = unary("/process.Process/List", {}, user="nobody2")
    check(st == 401 and j.get("code") == "unauthenticated", "unary unknown user -> 401")
    r = run("/bin/sh", ["-c", "ls -l /proc/self/fd | wc -l"])
    check(r["stdout"].strip() == b"5", f"child has only fds 0-2 (+ls's own) ({r['stdout']!r})")


def t_user_files_change():
    """envd caches user lookups while /etc/passwd, /etc/group and nsswitch.conf keep their
    identity: a user added after a lookup, or whose uid changed, is seen by the next Start."""
    r = run("id", ["-u"], user="late")
    err = r["trailer"].get("error", {}) if r["trailer"] else {}
    check(err.get("code") == "unauthenticated", f"user 'late' does not exist yet ({err})")
    run("id", ["-u"], user="user")  # a cached lookup before the files change
    time.sleep(0.05)  # past the filesystem's timestamp tick
    with open(f"{TMP}/passwd", "a") as f:  # in place: the bind mount keeps the inode
        f.write("late:x:1001:1000::/tmp:/bin/bash\n")
    r = run("id", ["-u"], user="late")
    check(r["stdout"] == b"1001\n", f"an added user is found ({r['stdout']!r} {r['trailer']})")
    time.sleep(0.05)
    data = open(f"{TMP}/passwd").read().replace("late:x:1001:", "late:x:1002:")
    with open(f"{TMP}/passwd", "r+") as f:  # same size, same inode: mtime/ctime tell
        f.write(data)
    r = run("id", ["-u"], user="late")
    check(r["stdout"] == b"1002\n", f"a changed uid is seen ({r['stdout']!r})")
    r = run("id", ["-u"], user="user")
    check(r["stdout"] == b"1000\n", f"other users still resolve ({r['stdout']!r})")


def t_timeout():
    t0 = time.time()
    r = run("sleep", ["30"], extra={"Connect-Timeout-Ms": "1000"})
    dt = time.time() - t0
    # < 20 s: ended by the 1 s deadline, not by the 30 s sleep, with room for a busy machine
    check(r["pid"] is not None and dt < 20, f"timeout stream ended in {dt:.1f}s")
    check(r["trailer"].get("error", {}).get("code") == "deadline_exceeded",
          f"timeout -> deadline_exceeded ({r['trailer']})")
    check(r["end"] is not None and r["end"].get("status") == "signal: killed",
          f"timeout kills with SIGKILL ({r['end']})")
    st, pids, _ = list_pids()
    check(st == 200 and r["pid"] not in pids, f"timed-out process gone from List ({pids})")


def start_bg(cmd, args=(), stdin=False, tag=None, user=None, extra=None):
    msg = {"process": {"cmd": cmd, "args": list(args)}, "stdin": stdin}
    if tag:
        msg["tag"] = tag
    s = Stream("/process.Process/Start", msg, user=user, extra=extra)
    first = s.next()
    pid = first[1]["event"]["start"]["pid"] if first and first[0] == 0 else None
    return s, pid


def t_stdin_signal_connect():
    s, pid = start_bg("cat", stdin=True, tag="catter")
    check(pid is not None, "cat started")
    st, pids, lj = list_pids()
    info = [p for p in (lj or {}).get("processes", []) if p["pid"] == pid]
    check(info and info[0].get("tag") == "catter" and info[0]["config"]["cmd"] == "cat",
          f"List shows pid, tag, config ({info})")
    st, j = unary("/process.Process/SendInput", {"process": {"pid": pid},
                                                 "input": {"stdin": base64.b64encode(b"hello\n").decode()}})
    check(st == 200 and j == {}, f"SendInput -> 200 {{}} ({st} {j})")
    st, j = unary("/process.Process/SendInput", {"process": {"tag": "catter"},
                                                 "input": {"stdin": "d29ybGQK"}})
    check(st == 200, f"SendInput by tag ({st} {j})")
    st, j = unary("/process.Process/CloseStdin", {"process": {"pid": pid}})
    check(st == 200, f"CloseStdin ({st})")
    st, j = unary("/process.Process/CloseStdin", {"process": {"pid": pid}})
    check(st in (200, 404), f"CloseStdin twice is harmless ({st})")
    r = summarize(200, [(0, {"event": {"start": {"pid": pid}}})] + s.all())
    check(r["stdout"] == b"hello\nworld\n" and r["end"] == {"exited": True, "status": "exit status 0"},
          f"cat echoes stdin then EOF ({r['stdout']!r} {r['end']})")
    st, j = unary("/process.Process/SendInput", {"process": {"pid": 999999},
                                                 "input": {"stdin": "eA=="}})
    check(st == 404 and j.get("code") == "not_found", f"SendInput unknown pid -> not_found ({st})")
    s2, pid2 = start_bg("sleep", ["30"])
    st, j = unary("/process.Process/SendInput", {"process": {"pid": pid2}, "input": {"stdin": "eA=="}})
    check(st == 500 and j.get("code") == "internal", f"SendInput stdin disabled -> internal ({st} {j})")
    st, j = unary("/process.Process/SendSignal", {"process": {"pid": pid2}, "signal": "SIGNAL_UNSPECIFIED"})
    check(st == 501 and j.get("code") == "unimplemented", f"bad signal -> unimplemented ({st} {j})")
    st, j = unary("/process.Process/SendSignal", {"process": {"pid": pid2}, "signal": "SIGNAL_SIGTERM"})
    check(st == 200, f"SendSignal SIGTERM ({st} {j})")
    r = summarize(200, s2.all())
    check(r["end"] == {"exitCode": -1, "status": "signal: terminated", "error": "signal: terminated"},
          f"SIGTERM end ({r['end']})")
    st, j = unary("/process.Process/SendSignal", {"process": {"pid": 999999}, "signal": 9})
    check(st == 404 and j.get("code") == "not_found", f"SendSignal unknown pid ({st} {j})")
    # Connect to a running process
    s3, pid3 = start_bg("/bin/sh", ["-c", "sleep 1; echo late; exit 4"])
    s3.close()  # client goes away; the process keeps running
    c = Stream("/process.Process/Connect", {"process": {"pid": pid3}})
    r = summarize(c.status, c.all())
    check(r["pid"] == pid3 and r["stdout"] == b"late\n" and r["end"] and r["end"].get("exitCode") == 4,
          f"Connect gets live output and end ({r['pid']} {r['stdout']!r} {r['end']})")
    c = Stream("/process.Process/Connect", {"process": {"pid": 999999}})
    evs = c.all()
    check(c.status == 200 and len(evs) == 1 and evs[0][1].get("error", {}).get("code") == "not_found"
          and evs[0][1]["error"].get("message") == "process with pid 999999 not found",
          f"Connect unknown pid -> end-stream not_found ({evs})")
    # keepalive
    r = run("sleep", ["2.5"], extra={"Keepalive-Ping-Interval": "1"})
    check(r["keepalives"] >= 1, f"keepalive events with Keepalive-Ping-Interval: 1 ({r['keepalives']})")
    # disconnect keeps the process running
    s4, pid4 = start_bg("/bin/sh", ["-c", "sleep 1; echo done > /tmp/after-disconnect"])
    s4.close()
    time.sleep(2.5)
    r = run("cat", ["/tmp/after-disconnect"])
    check(r["stdout"] == b"done\n", f"process survives client disconnect ({r['stdout']!r})")
    st, j = unary("/process.Process/Update", {"process": {"pid": 999999},
                                              "pty": {"size": {"cols": 80, "rows": 24}}})
    check(st == 404 and j.get("code") == "not_found", f"Update unknown pid -> not_found ({st} {j})")


def t_big_output():
    r = run("/bin/sh", ["-c", "head -c 5242880 /dev/urandom > /tmp/big; cat /tmp/big; echo -n tail"])
    st, data = files_get("/tmp/big")
    check(st == 200 and len(data) == 5242880, f"/files GET of 5 MiB ({st} {len(data)})")
    check(r["stdout"] == data + b"tail", f"5 MiB stdout intact and in order ({len(r['stdout'])})")


def t_streams_more():
    # a slow client: envd must apply backpressure, not drop output (12 MiB > 4 MiB queue)
    s = Stream("/process.Process/Start", {"process": {"cmd": "/bin/sh", "args": [
        "-c", "head -c 12582912 /dev/urandom | tee /tmp/big2"]}, "stdin": False})
    first = s.next()
    time.sleep(2)
    r = summarize(200, [first] + s.all())
    st, data = files_get("/tmp/big2")
    check(len(r["stdout"]) == 12582912 and r["stdout"] == data,
          f"slow reader still gets all 12 MiB in order ({len(r['stdout'])})")
    # two subscribers see the same output; Connect after exit gets start + end (retention)
    s1, pid = start_bg("/bin/sh", ["-c", "sleep 1; echo shared; exit 2"])
    c = Stream("/process.Process/Connect", {"process": {"pid": pid}})
    r1 = summarize(200, [(0, {"event": {"start": {"pid": pid}}})] + s1.all())
    r2 = summarize(c.status, c.all())
    check(r1["stdout"] == b"shared\n" and r2["stdout"] == b"shared\n" and
          r2["end"] and r2["end"].get("exitCode") == 2, f"two subscribers ({r1['stdout']!r} {r2['stdout']!r})")
    c = Stream("/process.Process/Connect", {"process": {"pid": pid}})
    r3 = summarize(c.status, c.all())
    check(r3["pid"] == pid and r3["end"] and r3["end"].get("exitCode") == 2 and r3["trailer"] == {},
          f"Connect after exit answers start + retained end ({r3['events']})")
    st, pids, _ = list_pids()
    check(pid not in pids, "ended process not in List")
    # Connect-Timeout-Ms on Connect bounds only the stream
    s5, pid5 = start_bg("sleep", ["3"])
    c = Stream("/process.Process/Connect", {"process": {"pid": pid5}}, extra={"Connect-Timeout-Ms": "500"})
    r = summarize(c.status, c.all())
    check(r["trailer"].get("error", {}).get("code") == "deadline_exceeded", f"Connect deadline ({r['trailer']})")
    st, pids, _ = list_pids()
    check(pid5 in pids, "Connect deadline does not kill the process")
    s5.all()
    # oversized and malformed requests
    st, j = unary("/process.Process/List", None, raw=b"{" + b" " * (5 * 1024 * 1024) + b"}")
    check(st in (400, 413, 429) and j and j.get("code") in ("resource_exhausted", "invalid_argument"),
          f"oversized unary body rejected ({st} {j})")
    st, j = unary("/process.Process/SendInput", {"process": {"pid": 1}, "input": {"stdin": "!!!"}})
    check(st == 400, f"bad base64 -> invalid_argument ({st} {j})")
    for raw in (b"\x02\x00\x00\x00\x02{}", b"\x01\x00\x00\x00\x02{}", b"\x00\x00\x00\x00\x02[]",
                os.urandom(64), b"\x00\x00\x00\x00\x05nulls"):
        s = Stream("/process.Process/Start", None, raw=raw)
        evs = s.all()
        check(s.status == 200 and len(evs) == 1 and evs[0][0] == 2 and "error" in evs[0][1],
              f"malformed stream request {raw[:8]!r} -> end-stream error ({evs})")
    st, j = unary("/process.Process/Start", {})
    check(st == 415, f"unary content type on a stream method -> 415 ({st})")
    c = conn()
    c.request("GET", "/health")
    check(c.getresponse().status == 204, "still healthy after malformed input")


def t_filesystem():
    fs = "/filesystem.Filesystem/"
    st, j = unary(fs + "MakeDir", {"path": "/home/user/d1/d2"}, user="user")
    e = (j or {}).get("entry", {})
    check(st == 200 and e.get("type") == "FILE_TYPE_DIRECTORY" and e.get("name") == "d2" and
          e.get("path") == "/home/user/d1/d2" and e.get("owner") == "user" and
          e.get("mode") == 0o755 and e.get("permissions") == "drwxr-xr-x",
          f"MakeDir entry ({st} {j})")
    st, j = unary(fs + "MakeDir", {"path": "~/d1/d2"}, user="user")
    check(st == 409 and j.get("code") == "already_exists", f"MakeDir again -> already_exists ({st})")
    st, _ = files_post("/home/user/d1/f.txt", b"hello", user="user")
    st, j = unary(fs + "MakeDir", {"path": "d1/f.txt"}, user="user")
    check(st == 400 and j.get("code") == "invalid_argument", f"MakeDir on a file ({st} {j})")
    st, j = unary(fs + "Stat", {"path": "/home/user/d1/f.txt"}, user="user")
    e = (j or {}).get("entry", {})
    check(st == 200 and e.get("type") == "FILE_TYPE_FILE" and e.get("size") == "5" and
          e.get("permissions") == "-rw-r--r--" and e.get("mode") == 0o644 and
          e.get("owner") == "user" and e.get("group") == "user" and
          e.get("modifiedTime", "").endswith("Z"), f"Stat entry ({j})")
    st, j = unary(fs + "Move", {"source": "d1/f.txt", "destination": "d1/d2/d3/g.txt"}, user="user")
    e = (j or {}).get("entry", {})
    check(st == 200 and e.get("path") == "/home/user/d1/d2/d3/g.txt" and e.get("name") == "g.txt",
          f"Move returns destination entry ({st} {j})")
    st, j = unary(fs + "Move", {"source": "d1/missing", "destination": "d1/x"}, user="user")
    check(st == 404 and j.get("code") == "not_found", f"Move missing source ({st})")
    st, j = unary(fs + "ListDir", {"path": "/home/user/d1"}, user="user")
    names = [x["path"] for x in (j or {}).get("entries", [])]
    check(st == 200 and names == ["/home/user/d1/d2"], f"ListDir depth 1 ({names})")
    st, j = unary(fs + "ListDir", {"path": "/home/user/d1", "depth": 3}, user="user")
    names = sorted(x["path"] for x in (j or {}).get("entries", []))
    check(names == ["/home/user/d1/d2", "/home/user/d1/d2/d3", "/home/user/d1/d2/d3/g.txt"],
          f"ListDir depth 3 ({names})")
    st, j = unary(fs + "ListDir", {"path": "/home/user/nope"}, user="user")
    check(st == 404 and j.get("code") == "not_found", f"ListDir missing ({st})")
    st, j = unary(fs + "ListDir", {"path": "/home/user/d1/d2/d3/g.txt"}, user="user")
    check(st == 400 and j.get("code") == "invalid_argument", f"ListDir on a file ({st})")
    st, j = unary(fs + "Remove", {"path": "/home/user/d1"}, user="user")
    check(st == 200, f"Remove ({st} {j})")
    st, j = unary(fs + "Stat", {"path": "/home/user/d1"}, user="user")
    check(st == 404 and j.get("code") == "not_found", f"Stat after Remove -> not_found ({st})")
    st, j = unary(fs + "Remove", {"path": "/home/user/d1"}, user="user")
    check(st == 200, f"Remove of a missing path is OK ({st})")
    # E2B's envd makes directories as root and hands the new ones to the user (EnsureDirs)
    st, j = unary(fs + "MakeDir", {"path": "/root/u"}, user="user")
    check(st == 200 and j["entry"].get("owner") == "user", f"MakeDir /root/u as user ({st} {j})")
    st, j = unary(fs + "MakeDir", {"path": "/tmp/mk/a/b"}, user="user")
    check(st == 200 and j["entry"].get("owner") == "user", f"MakeDir in root's /tmp as user ({st} {j})")
    owners = [unary(fs + "Stat", {"path": p})[1]["entry"].get("owner") for p in ("/tmp", "/tmp/mk", "/tmp/mk/a")]
    check(owners == ["root", "user", "user"], f"only the new directories are the user's: {owners}")
    st, j = files_post("/tmp/mk/a/mv-src.txt", b"m", user="user")  # same file system as /tmp/mv
    st, j = unary(fs + "Move", {"source": "/tmp/mk/a/mv-src.txt", "destination": "/tmp/mv/new/f.txt"},
                  user="user")
    check(st == 200 and unary(fs + "Stat", {"path": "/tmp/mv/new"})[1]["entry"].get("owner") == "user",
          f"Move into a new directory under root's /tmp as user ({st} {j})")
    st, j = unary(fs + "MakeDir", {"path": "/root/r"}, user="root")
    check(st == 200 and j["entry"].get("owner") == "root", f"root can write /root ({st} {j})")
    st, j = unary(fs + "Stat", {"path": "/root/r"}, user="user")
    check(st == 403, f"user cannot stat inside /root (0700) ({st} {j})")


def t_files():
    allb = bytes(range(256)) * 4
    st, j = files_post("/home/user/bin.dat", allb, user="user")
    check(st == 200 and j == [{"path": "/home/user/bin.dat", "name": "bin.dat", "type": "file"}],
          f"POST octet-stream ({st} {j})")
    st, data = files_get("/home/user/bin.dat", user="user")
    check(st == 200 and data == allb, "all 256 byte values round trip")
    st, j = unary("/filesystem.Filesystem/Stat", {"path": "/home/user/bin.dat"})
    check(j and j["entry"].get("owner") == "user" and j["entry"].get("mode") == 0o644,
          f"uploaded file owned by user, 0644 ({j})")
    big = os.urandom(10 * 1024 * 1024 + 7)
    st, j = files_post("/home/user/deep/er/big.bin", big, user="user")
    check(st == 200, f"POST 10 MiB ({st})")
    st, data = files_get("/home/user/deep/er/big.bin", user="user")
    check(st == 200 and data == big, f"10 MiB round trip ({len(data)})")
    st, j = unary("/filesystem.Filesystem/Stat", {"path": "/home/user/deep"})
    check(j and j["entry"].get("owner") == "user", "created parent dirs owned by user")
    b = "XyZzy123boundary"
    parts = []
    for name, content in (("/home/user/m/a.txt", b"AAA"), ("/home/user/m/b.bin", bytes(range(256)))):
        parts.append(f"--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
                     f"Content-Type: application/octet-stream\r\n\r\n".encode() + content + b"\r\n")
    parts.append(f"--{b}\r\nContent-Disposition: form-data; name=\"other\"\r\n\r\nignored\r\n".encode())
    body = b"".join(parts) + f"--{b}--\r\n".encode()
    st, j = files_post(None, body, user="user", ctype=f"multipart/form-data; boundary={b}")
    check(st == 200 and [x["path"] for x in j] == ["/home/user/m/a.txt", "/home/user/m/b.bin"],
          f"multipart upload of two parts ({st} {j})")
    check(files_get("/home/user/m/a.txt")[1] == b"AAA" and
          files_get("/home/user/m/b.bin")[1] == bytes(range(256)), "multipart contents")
    body = (f"--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"/home/user/m/empty\"\r\n"
            f"\r\n\r\n--{b}--\r\n").encode()
    st, j = files_post(None, body, user="user", ctype=f"multipart/form-data; boundary={b}")
    check(st == 200 and files_get("/home/user/m/empty") == (200, b""), f"multipart empty file ({st} {j})")
    st, j = files_post("/home/user/x", b"x", ctype="text/plain")
    check(st == 400, f"other content type -> 400 ({st})")
    st, data = files_get("/home/user/missing.txt")
    check(st == 404 and json.loads(data).get("code") == 404, f"missing file -> 404 JSON ({st} {data})")
    st, data = files_get("/home/user")
    check(st == 400, f"directory -> 400 ({st})")
    st, j = files_post("/root/nope.txt", b"x", user="user")
    check(st in (401, 403), f"user cannot upload into /root ({st} {j})")
    # missing parents are made as root and handed to the user (E2B's write.test.ts writes /0/...)
    st, j = files_post("/tmp/up0/a/f.txt", b"up", user="user")
    check(st == 200 and j == [{"path": "/tmp/up0/a/f.txt", "name": "f.txt", "type": "file"}],
          f"upload as user into new directories under root's /tmp ({st} {j})")
    owners = [unary("/filesystem.Filesystem/Stat", {"path": p})[1]["entry"].get("owner")
              for p in ("/tmp", "/tmp/up0", "/tmp/up0/a", "/tmp/up0/a/f.txt")]
    check(owners == ["root", "user", "user", "user"], f"upload: only the new directories are the user's: {owners}")
    st, j = files_post("/tmp/up0/a/f.txt/x", b"x", user="user")
    check(st in (400, 403, 500) and j, f"upload below a file fails ({st} {j})")
    # signatures (§8): test vectors first, to validate the helper
    check(sign("/home/user/a.txt", "read", "", "tok") == "v1_Zkbb3914oLJLvMBzCAHQhm2ydBLxbSx2eQUR/kLdvIY",
          "signature helper matches reference vector 1")
    check(sign("/home/user/a.txt", "write", "user", "tok", 1700000000) ==
          "v1_x09R0+VxB2mRzkxWcRyFCpiJmFv0okUrtgQ6q12G0jM", "signature helper matches vector 2")
    p = "/home/user/bin.dat"
    st, _ = files_get(p, user="user", token=None)
    check(st == 401, f"/files without token or signature -> 401 ({st})")
    st, _ = files_get(p, user="user", token="bad")
    check(st == 401, f"/files with wrong token -> 401 ({st})")
    st, data = files_get(p, user="user", token=None,
                         params={"signature": sign(p, "read", "user", TOKEN)})
    check(st == 200 and data == allb, f"/files with a valid signature ({st})")
    st, _ = files_get(p, user="user", token=None, params={"signature": sign(p, "write", "user", TOKEN)})
    check(st == 401, f"write signature refused for read ({st})")
    exp = int(time.time()) + 60
    st, _ = files_get(p, user="user", token=None, params={
        "signature": sign(p, "read", "user", TOKEN, exp), "signature_expiration": str(exp)})
    check(st == 200, f"signature with future expiration ({st})")
    exp = int(time.time()) - 5
    st, data = files_get(p, user="user", token=None, params={
        "signature": sign(p, "read", "user", TOKEN, exp), "signature_expiration": str(exp)})
    check(st == 401 and b"expired" in data, f"expired signature -> 401 ({st} {data})")
    st, j = files_post("/home/user/signed.txt", b"s", user="user", token=None,
                       params={"signature": sign("/home/user/signed.txt", "write", "user", TOKEN)})
    check(st == 200, f"signed upload ({st} {j})")


def t_default_user():
    c = conn()
    c.request("POST", "/init", body=json.dumps({"defaultUser": "user", "defaultWorkdir": "/tmp"}),
              headers={"Content-Type": "application/json", "X-Access-Token": TOKEN})
    r = c.getresponse()
    r.read()
    check(r.status == 204, "/init defaultUser")
    r = run("/bin/sh", ["-c", "id -un; pwd"])
    check(r["stdout"] == b"user\n/tmp\n", f"default user and workdir ({r['stdout']!r})")


# ---- PTY, StreamInput (§4.2, §4.4) -----------------------------------------------------------

def b64(data):
    return base64.b64encode(data).decode()


def start_pty(cmd, args=(), cols=80, rows=24, user=None, envs=None):
    proc = {"cmd": cmd, "args": list(args)}
    if envs:
        proc["envs"] = envs
    s = Stream("/process.Process/Start", {"process": proc, "pty": {"size": {"cols": cols, "rows": rows}}},
               user=user)
    first = s.next()
    pid = first[1]["event"]["start"]["pid"] if first and first[0] == 0 else None
    return s, pid


def read_until(s, needle, timeout=10):
    """Read envelopes from a process stream until the collected pty/stdout contains needle."""
    got, evs = b"", []
    s.c.sock.settimeout(timeout)
    while needle not in got:
        e = s.next()
        if e is None:
            break
        evs.append(e)
        d = e[1].get("event", {}).get("data", {})
        for k in ("pty", "stdout"):
            if k in d:
                got += base64.b64decode(d[k])
        if e[0] == 2 or "end" in e[1].get("event", {}):
            break
    return got, evs


def send_input(pid, data, kind="stdin"):
    return unary("/process.Process/SendInput", {"process": {"pid": pid}, "input": {kind: b64(data)}})


def t_pty():
    s, pid = start_pty("/bin/sh", ["-c", "tty; stty size; read line; echo got-$line"], cols=100,
                       rows=30, user="user")
    check(pid is not None, "PTY process started")
    out, evs = read_until(s, b"30 100")
    check(re_match(rb"/dev/pts/\d+", out), f"tty(1) sees a pseudo-terminal ({out!r})")
    check(b"30 100" in out, f"stty size shows the requested rows and cols ({out!r})")
    kinds = {k for _, m in evs for k in m.get("event", {}).get("data", {})}
    check(kinds == {"pty"}, f"PTY output only as data.pty ({kinds})")
    st, j = send_input(pid, b"hello\n", "pty")
    check(st == 200 and j == {}, f"SendInput pty -> 200 ({st} {j})")
    rest = summarize(200, s.all())
    out2 = out + rest["pty"]
    check(b"hello" in out2 and b"got-hello" in out2, f"pty input echoed and read ({out2!r})")
    check(rest["stdout"] == b"" and rest["end"] == {"exited": True, "status": "exit status 0"},
          f"PTY process ends normally ({rest['end']})")
    # resize visible through stty size
    s, pid = start_pty("/bin/sh", ["-c", "read a; stty size; read b"], cols=80, rows=24)
    st, j = unary("/process.Process/Update", {"process": {"pid": pid},
                                              "pty": {"size": {"cols": 132, "rows": 43}}})
    check(st == 200 and j == {}, f"Update resizes ({st} {j})")
    send_input(pid, b"go\n", "pty")
    out, _ = read_until(s, b"43 132")
    check(b"43 132" in out, f"stty size after Update ({out!r})")
    # wrong kinds of input, CloseStdin, resize of a pipe process
    st, j = send_input(pid, b"x", "stdin")
    check(st == 500 and j.get("code") == "internal", f"stdin input to a PTY process -> internal ({st} {j})")
    st, j = unary("/process.Process/CloseStdin", {"process": {"pid": pid}})
    check(st == 500 and j.get("code") == "unknown" and "cannot close stdin for PTY process" in
          j.get("message", ""), f"CloseStdin on a PTY -> unknown ({st} {j})")
    send_input(pid, b"done\n", "pty")
    r = summarize(200, s.all())
    check(r["end"] is not None and r["end"].get("exited"), f"PTY process exits after input ({r['end']})")
    s2, pid2 = start_bg("cat", stdin=True)
    st, j = send_input(pid2, b"x", "pty")
    check(st == 500 and j.get("code") == "internal", f"pty input to a pipe process -> internal ({st} {j})")
    st, j = unary("/process.Process/Update", {"process": {"pid": pid2},
                                              "pty": {"size": {"cols": 10, "rows": 10}}})
    check(st == 500 and j.get("code") == "internal" and "error resizing tty" in j.get("message", ""),
          f"Update of a pipe process -> internal error resizing tty ({st} {j})")
    unary("/process.Process/CloseStdin", {"process": {"pid": pid2}})
    s2.all()
    # EOF through 0x04, as the SDKs do for a PTY
    s, pid = start_pty("cat")
    send_input(pid, b"abc\n\x04", "pty")
    r = summarize(200, s.all())
    check(b"abc" in r["pty"] and r["end"] == {"exited": True, "status": "exit status 0"},
          f"cat on a PTY ends on ^D ({r['pty']!r} {r['end']})")
    # kill, and a big output in 16 KiB chunks
    s, pid = start_pty("/bin/sh", ["-c", "head -c 300000 /dev/zero | tr '\\0' a; echo; echo MARK; sleep 30"])
    out, evs = read_until(s, b"MARK")
    st, j = unary("/process.Process/SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})
    check(st == 200, f"SendSignal SIGKILL to a PTY process ({st} {j})")
    r = summarize(200, evs + s.all())
    sizes = [len(base64.b64decode(m["event"]["data"]["pty"])) for _, m in r["events"]
             if "data" in m.get("event", {})]
    check(r["end"] == {"exitCode": -1, "status": "signal: killed", "error": "signal: killed"},
          f"killed PTY process end ({r['end']})")
    check(sizes and max(sizes) <= 16384 and r["pty"].count(b"a") == 300000,
          f"PTY output complete in chunks of at most 16 KiB (max {max(sizes) if sizes else 0}, "
          f"{r['pty'].count(b'a')} bytes)")


def re_match(pattern, data):
    import re
    return re.search(pattern, data) is not None


class ClientStream:
    """A client-streaming request: envelopes are sent as HTTP/1.1 chunks while it is open."""

    def __init__(self, path, user=None, token=TOKEN, ctype="application/connect+json"):
        self.c = conn()
        self.c.putrequest("POST", path)
        for k, v in hdrs(user, token, {"Content-Type": ctype, "Transfer-Encoding": "chunked"}).items():
            self.c.putheader(k, v)
        self.c.endheaders()

    def send(self, msg=None, raw=None):
        data = raw if raw is not None else envelope(msg)
        self.c.send(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def finish(self):
        try:
            self.c.send(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            # an early answer (401, 415) may come and the connection close before the body is
            # complete; the answer is still in this socket's receive queue
            pass
        r = self.c.getresponse()
        body = r.read()
        self.c.close()
        evs, i = [], 0
        while r.status == 200 and i + 5 <= len(body):
            flags, n = struct.unpack(">BI", body[i:i + 5])
            evs.append((flags, json.loads(body[i + 5:i + 5 + n])))
            i += 5 + n
        return r.status, evs


def t_stream_input():
    s, pid = start_bg("cat", stdin=True)
    cs = ClientStream("/process.Process/StreamInput")
    cs.send({"start": {"process": {"pid": pid}}})
    cs.send({"data": {"input": {"stdin": b64(b"hello\n")}}})
    out, _ = read_until(s, b"hello\n", timeout=5)
    check(out == b"hello\n", f"StreamInput data is applied while the request is open ({out!r})")
    cs.send({"keepalive": {}})
    cs.send({"data": {"input": {"stdin": b64(b"world\n")}}})
    st, evs = cs.finish()
    check(st == 200 and evs == [(0, {}), (2, {})], f"StreamInput response: {{}} then end {{}} ({st} {evs})")
    unary("/process.Process/CloseStdin", {"process": {"pid": pid}})
    r = summarize(200, s.all())
    check(out + r["stdout"] == b"hello\nworld\n" and r["end"] and r["end"].get("exited"),
          f"cat got both StreamInput messages ({out + r['stdout']!r})")
    cs = ClientStream("/process.Process/StreamInput")
    cs.send({"start": {"process": {"pid": 999999}}})
    st, evs = cs.finish()
    check(st == 200 and len(evs) == 1 and evs[0][0] == 2 and
          evs[0][1].get("error", {}).get("code") == "not_found", f"StreamInput unknown pid ({evs})")
    cs = ClientStream("/process.Process/StreamInput")
    cs.send({"data": {"input": {"stdin": "eA=="}}})
    st, evs = cs.finish()
    check(len(evs) == 1 and evs[0][0] == 2 and "error" in evs[0][1], f"StreamInput data before start ({evs})")
    s, pid = start_pty("cat")
    cs = ClientStream("/process.Process/StreamInput")
    cs.send({"start": {"process": {"pid": pid}}})
    cs.send({"data": {"input": {"pty": b64(b"ptyin\n\x04")}}})
    st, evs = cs.finish()
    r = summarize(200, s.all())
    check(evs == [(0, {}), (2, {})] and b"ptyin" in r["pty"], f"StreamInput pty input ({evs} {r['pty']!r})")
    cs = ClientStream("/process.Process/StreamInput", token=None)
    cs.send({"start": {"process": {"pid": 1}}})
    st, _ = cs.finish()
    check(st == 401, f"StreamInput without token -> 401 ({st})")
    cs = ClientStream("/process.Process/StreamInput", ctype="application/json")
    st, _ = cs.finish()
    check(st == 415, f"StreamInput with a unary content type -> 415 ({st})")


# ---- WatchDir and watchers (§5) ---------------------------------------------------------------

FS = "/filesystem.Filesystem/"


def inotify_fds():
    if not ENVD_PID:
        return -1
    n = 0
    for fd in os.listdir(f"/proc/{ENVD_PID}/fd"):
        try:
            if os.readlink(f"/proc/{ENVD_PID}/fd/{fd}") == "anon_inode:inotify":
                n += 1
        except OSError:
            pass
    return n


def sh(script, user="user"):
    return run("/bin/sh", ["-c", script], user=user)


def collect_watch(s):
    evs = []
    while True:
        e = s.next()
        if e is None:
            break
        evs.append(e)
    s.close()
    return evs


def t_watch_dir():
    unary(FS + "MakeDir", {"path": "/home/user/w"}, user="user")
    base = inotify_fds()
    s = Stream(FS + "WatchDir", {"path": "/home/user/w", "recursive": True, "includeEntry": True},
               user="user", extra={"Keepalive-Ping-Interval": "1", "Connect-Timeout-Ms": "5000"})
    first = s.next()
    check(s.status == 200 and first == (0, {"start": {}}), f"WatchDir starts with {{start:{{}}}} ({first})")
    check(inotify_fds() == base + 1, "WatchDir holds one inotify fd")
    sh("cd /home/user/w && echo hi > a && mkdir sub && sleep 0.3 && echo x > sub/b && mv a c && "
       "chmod 600 c && rm sub/b && sleep 1.6")
    evs = collect_watch(s)
    fsev = [m["filesystem"] for f, m in evs if f == 0 and "filesystem" in m]
    pairs = [(e["name"], e["type"][len("EVENT_TYPE_"):]) for e in fsev]
    for want in [("a", "CREATE"), ("a", "WRITE"), ("sub", "CREATE"), ("sub/b", "CREATE"),
                 ("sub/b", "WRITE"), ("a", "RENAME"), ("c", "CREATE"), ("c", "CHMOD"),
                 ("sub/b", "REMOVE")]:
        check(want in pairs, f"WatchDir event {want} ({pairs})")
    check(pairs.index(("a", "CREATE")) < pairs.index(("a", "RENAME")) < pairs.index(("sub/b", "REMOVE")),
          f"WatchDir events in order ({pairs})")
    ent = [e.get("entry") for e in fsev if e["name"] == "c" and e["type"] == "EVENT_TYPE_CHMOD"]
    check(ent and ent[0] and ent[0].get("path") == "/home/user/w/c" and ent[0].get("mode") == 0o600,
          f"includeEntry gives EntryInfo on CHMOD ({ent})")
    rem = [e for e in fsev if e["type"] in ("EVENT_TYPE_REMOVE", "EVENT_TYPE_RENAME")]
    check(all("entry" not in e for e in rem), "no entry on REMOVE/RENAME")
    check(sum(1 for f, m in evs if f == 0 and "keepalive" in m) >= 1, "WatchDir keepalive after 1 s of silence")
    check(evs and evs[-1][0] == 2 and evs[-1][1].get("error", {}).get("code") == "deadline_exceeded",
          f"WatchDir ends at Connect-Timeout-Ms with deadline_exceeded ({evs[-1] if evs else None})")
    time.sleep(0.3)
    check(inotify_fds() == base, f"inotify fd closed after the deadline ({inotify_fds()} vs {base})")
    # non-recursive: changes inside a subdirectory are not reported; client disconnect cleans up
    s = Stream(FS + "WatchDir", {"path": "~/w"}, user="user")
    s.next()
    sh("cd /home/user/w && echo y > sub/deep && echo z > top")
    s.c.sock.settimeout(5)
    got = []
    while not any(e.get("name") == "top" and e["type"] == "EVENT_TYPE_WRITE" for e in got):
        e = s.next()
        if e is None or e[0] == 2:
            break
        if "filesystem" in e[1]:
            got.append(e[1]["filesystem"])
    check(any(e["name"] == "top" for e in got) and not any(e["name"].startswith("sub/") for e in got),
          f"non-recursive watch ({got})")
    check(all("entry" not in e for e in got), "no entry without includeEntry")
    s.close()
    deadline = time.time() + 5
    while inotify_fds() != base and time.time() < deadline:
        time.sleep(0.2)
    check(inotify_fds() == base, "inotify fd closed after the client disconnects")
    for req, code, what in (({"path": "/home/user/nope"}, "not_found", "missing"),
                            ({"path": "/home/user/w/c"}, "invalid_argument", "a file"),
                            ({"path": "/root"}, "permission_denied", "/root as user")):
        s = Stream(FS + "WatchDir", req, user="user")
        evs = s.all()
        check(s.status == 200 and len(evs) == 1 and evs[0][0] == 2 and
              evs[0][1].get("error", {}).get("code") == code, f"WatchDir on {what} -> {code} ({evs})")


def t_watchers():
    unary(FS + "MakeDir", {"path": "/home/user/pw/sub"}, user="user")
    st, j = unary(FS + "CreateWatcher", {"path": "/home/user/pw", "recursive": True}, user="user")
    wid = (j or {}).get("watcherId", "")
    check(st == 200 and wid.startswith("w") and len(wid) > 4, f"CreateWatcher -> watcherId ({st} {j})")
    sh("echo 1 > /home/user/pw/f && echo 2 > /home/user/pw/sub/g")
    st, j = unary(FS + "GetWatcherEvents", {"watcherId": wid})
    pairs = [(e["name"], e["type"]) for e in (j or {}).get("events", [])]
    check(st == 200 and ("f", "EVENT_TYPE_CREATE") in pairs and ("sub/g", "EVENT_TYPE_WRITE") in pairs,
          f"GetWatcherEvents returns queued events ({st} {pairs})")
    st, j = unary(FS + "GetWatcherEvents", {"watcher_id": wid})
    check(st == 200 and not (j or {}).get("events"), f"GetWatcherEvents drained the queue ({j})")
    sh("rm /home/user/pw/f")
    st, j = unary(FS + "GetWatcherEvents", {"watcherId": wid})
    check([e["type"] for e in (j or {}).get("events", [])] == ["EVENT_TYPE_REMOVE"],
          f"only new events after a drain ({j})")
    # queue bound: 11000 creations, the newest 10000 kept
    sh("cd /home/user/pw/sub && i=0; while [ $i -lt 11000 ]; do : > f$i; i=$((i+1)); done")
    st, j = unary(FS + "GetWatcherEvents", {"watcherId": wid})
    ev = (j or {}).get("events", [])
    check(len(ev) == 10000 and ev[-1]["name"] == "sub/f10999" and ev[0]["name"] == "sub/f1000",
          f"queue keeps the newest 10000 events ({len(ev)} {ev[:1]} {ev[-1:]})")
    st, j = unary(FS + "RemoveWatcher", {"watcherId": wid})
    check(st == 200 and j == {}, f"RemoveWatcher ({st} {j})")
    st, j = unary(FS + "GetWatcherEvents", {"watcherId": wid})
    check(st == 404 and j.get("code") == "not_found", f"GetWatcherEvents after remove -> not_found ({st})")
    st, j = unary(FS + "RemoveWatcher", {"watcherId": wid})
    check(st == 404 and j.get("code") == "not_found", f"RemoveWatcher twice -> not_found ({st})")
    st, j = unary(FS + "CreateWatcher", {"path": "/home/user/none"}, user="user")
    check(st == 404 and j.get("code") == "not_found", f"CreateWatcher on a missing dir ({st} {j})")
    st, j = unary(FS + "CreateWatcher", {"path": "/root"}, user="user")
    check(st == 403 and j.get("code") == "permission_denied", f"CreateWatcher as user on /root ({st} {j})")
    base = inotify_fds()
    st, j = unary(FS + "CreateWatcher", {"path": "/home/user/pw"}, user="user")
    check(inotify_fds() == base + 1, "a watcher holds an inotify fd")
    unary(FS + "RemoveWatcher", {"watcherId": j["watcherId"]})
    check(inotify_fds() == base, "RemoveWatcher closes it")


# ---- metadata, gzip, metrics (§7) ---------------------------------------------------------------

def files_post_h(path, data, headers, user="user", ctype="application/octet-stream"):
    q = {"path": path, "username": user}
    c = conn()
    h = hdrs(None, TOKEN, headers)
    h["Content-Type"] = ctype
    c.request("POST", "/files?" + urllib.parse.urlencode(q), body=data, headers=h)
    r = c.getresponse()
    body = r.read()
    c.close()
    try:
        return r.status, json.loads(body)
    except ValueError:
        return r.status, body


def t_metadata():
    p = "/home/user/meta/m.txt"
    st, j = files_post_h(p, b"m", {"X-Metadata-Owner": "alice", "X-Metadata-Build-ID": "42 x"})
    check(st == 200 and j == [{"path": p, "name": "m.txt", "type": "file",
                               "metadata": {"owner": "alice", "build-id": "42 x"}}],
          f"upload with X-Metadata-* returns metadata ({st} {j})")
    st, j = unary(FS + "Stat", {"path": p}, user="user")
    check((j or {}).get("entry", {}).get("metadata") == {"owner": "alice", "build-id": "42 x"},
          f"Stat shows metadata ({j})")
    st, j = unary(FS + "ListDir", {"path": "/home/user/meta"}, user="user")
    check([e.get("metadata") for e in (j or {}).get("entries", [])] == [{"owner": "alice", "build-id": "42 x"}],
          f"ListDir shows metadata ({j})")
    st, j = files_post_h(p, b"m2", {"X-Metadata-Owner": "bob"})
    st, j = unary(FS + "Stat", {"path": p}, user="user")
    check(j["entry"].get("metadata") == {"owner": "bob"}, f"a new upload replaces the whole set ({j})")
    st, j = files_post_h(p, b"m3", {})
    st, j = unary(FS + "Stat", {"path": p}, user="user")
    check("metadata" not in j["entry"], f"an upload without metadata clears it ({j})")
    st, j = files_post_h(p, b"k", {"X-Metadata-" + "k" * 246: "v"})
    check(st == 200, f"key of 246 bytes accepted ({st} {j})")
    for hdr, what in (({"X-Metadata-" + "k" * 247: "v"}, "key of 247 bytes"),
                      ({f"X-Metadata-K{i}": "v" * 1000 for i in range(5)}, "over 4096 bytes in total"),
                      ({"X-Metadata-Bad": "caf\xe9"}, "non-ASCII value")):
        st, j = files_post_h("/home/user/meta/bad.txt", b"x", hdr)
        check(st == 400 and isinstance(j, dict) and j.get("code") == 400, f"metadata {what} -> 400 ({st} {j})")
    st, j = unary(FS + "Stat", {"path": "/home/user/meta/bad.txt"}, user="user")
    check(st == 404, "a refused upload writes nothing")
    # watch entries carry metadata too
    st, j = unary(FS + "CreateWatcher", {"path": "/home/user/meta", "includeEntry": True}, user="user")
    files_post_h(p, b"w", {"X-Metadata-Tag": "t"})
    st, j2 = unary(FS + "GetWatcherEvents", {"watcherId": j["watcherId"]})
    ents = [e.get("entry", {}).get("metadata") for e in (j2 or {}).get("events", []) if "entry" in e]
    check({"tag": "t"} in ents, f"watch event entry has metadata ({ents})")
    unary(FS + "RemoveWatcher", {"watcherId": j["watcherId"]})
    # tmpfs (/tmp in this sandbox) supports user.* xattrs only on newer kernels: note, don't fail
    st, j = files_post_h("/tmp/meta-tmpfs.txt", b"t", {"X-Metadata-A": "b"}, user="root")
    print(f"  NOTE: metadata on tmpfs /tmp (kernel {os.uname().release}): {st} {j}", flush=True)
    check(st == 200 or (st == 500 and "extended attributes" in str(j)),
          f"metadata on tmpfs either works or fails clearly ({st} {j})")


def t_gzip():
    import gzip
    import zlib
    data = b"compressible line of text\n" * 20000
    st, j = files_post("/home/user/gz/plain.txt", data, user="user")
    c = conn()
    c.request("GET", "/files?" + urllib.parse.urlencode({"path": "/home/user/gz/plain.txt"}),
              headers=hdrs(None, TOKEN, {"Accept-Encoding": "gzip, deflate"}))
    r = c.getresponse()
    body = r.read()
    c.close()
    check(r.status == 200 and r.getheader("Content-Encoding") == "gzip" and len(body) < len(data) // 10
          and gzip.decompress(body) == data, f"GET with Accept-Encoding: gzip ({r.status} "
          f"{r.getheader('Content-Encoding')} {len(body)})")
    check("Accept-Encoding" in (r.getheader("Vary") or ""), "Vary: Accept-Encoding")
    for ae in ("identity", "gzip;q=0", None):
        c = conn()
        c.request("GET", "/files?" + urllib.parse.urlencode({"path": "/home/user/gz/plain.txt"}),
                  headers=hdrs(None, TOKEN, {"Accept-Encoding": ae} if ae else {}))
        r = c.getresponse()
        body = r.read()
        c.close()
        check(r.getheader("Content-Encoding") is None and body == data, f"Accept-Encoding {ae} -> identity")
    st, j = files_post_h("/home/user/gz/up.bin", gzip.compress(data), {"Content-Encoding": "gzip"})
    check(st == 200 and files_get("/home/user/gz/up.bin")[1] == data, f"POST Content-Encoding: gzip ({st} {j})")
    st, j = files_post_h("/home/user/gz/two.bin", gzip.compress(b"one,") + gzip.compress(b"two"),
                         {"Content-Encoding": "gzip"})
    check(st == 200 and files_get("/home/user/gz/two.bin")[1] == b"one,two", "concatenated gzip members")
    st, j = files_post_h("/home/user/gz/bad.bin", b"\x1f\x8bnot gzip at all", {"Content-Encoding": "gzip"})
    check(st == 400, f"corrupt gzip -> 400 ({st} {j})")
    st, j = files_post_h("/home/user/gz/trunc.bin", gzip.compress(data)[:-20], {"Content-Encoding": "gzip"})
    check(st == 400, f"truncated gzip -> 400 ({st} {j})")
    st, j = files_post_h("/home/user/gz/br.bin", b"x", {"Content-Encoding": "br"})
    check(st == 400, f"unsupported Content-Encoding -> 400 ({st})")
    # more than 1 GiB once decompressed (written to /dev/null as root)
    co = zlib.compressobj(1, zlib.DEFLATED, 31)
    zero = bytes(1 << 20)
    bomb = b"".join(co.compress(zero) for _ in range(1025)) + co.flush()
    st, j = files_post_h("/dev/null", bomb, {"Content-Encoding": "gzip"}, user="root")
    check(st == 400 and "1 GiB" in str(j), f"gzip over 1 GiB decompressed -> 400 ({st} {j})")


def t_metrics():
    c = conn()
    c.request("GET", "/metrics", headers=hdrs())
    r = c.getresponse()
    j = json.loads(r.read())
    c.close()
    keys = {"ts", "cpu_count", "cpu_used_pct", "mem_total", "mem_used", "mem_cache", "mem_total_mib",
            "mem_used_mib", "disk_used", "disk_total"}
    check(r.status == 200 and set(j) == keys, f"/metrics keys ({r.status} {sorted(j)})")
    check(abs(j["ts"] - time.time()) < 10 and j["cpu_count"] >= 1 and 0 <= j["cpu_used_pct"] <= 100 and
          0 < j["mem_used"] < j["mem_total"] and j["mem_total_mib"] == j["mem_total"] >> 20 and
          0 <= j["disk_used"] <= j["disk_total"] and j["disk_total"] > 0, f"/metrics values ({j})")
    c = conn()
    c.request("GET", "/metrics")
    r = c.getresponse()
    r.read()
    check(r.status == 401, f"/metrics without token -> 401 ({r.status})")
    out = subprocess.run([BINARY, "envd", "--version"], capture_output=True, text=True).stdout.strip()
    check(out == ENVD_VERSION, f"envd --version prints {ENVD_VERSION} ({out!r})")


# ---- mutants (platform/envd/mutants.h): ABX_ENVD_MUTANTS makes envd lie in a named way ---------
# Each probe runs against the envd at PORT and says "clean" (the truth, byte for byte),
# "mutated" (exactly the documented lie) or what else it saw. t_mutants runs each probe on the
# main envd (no ABX_ENVD_MUTANTS: must be clean) and on an envd started with that one mutant
# (must be mutated).
ENVD_MUTANTS = ["binary-read-mangled", "large-upload-dropped", "exit-code-zero", "stderr-as-stdout",
                "stream-no-end", "command-tail-1s"]


def get_gzip(path):
    import gzip
    c = conn()
    c.request("GET", "/files?" + urllib.parse.urlencode({"path": path}),
              headers=hdrs(None, TOKEN, {"Accept-Encoding": "gzip"}))
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, gzip.decompress(body) if r.getheader("Content-Encoding") == "gzip" else body


def probe_binary_read_mangled():
    """CubeSandbox#1570: a read decoded as UTF-8 text, invalid sequences as U+FFFD."""
    import random
    rnd = random.Random(1570)
    data = (b"\x89PNG\r\n\x1a\n\x00\xff\xfe text \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 \xed\xa0\x80"
            b"\xf4\x90\x80\x80\xc0\xaf\xe0\x80\xaf\xf8\x88\x80\x80\x80" +
            bytes(rnd.getrandbits(8) for _ in range(200000)) + "é€😀".encode() * 30000 + b"\xe2\x82")
    mangled = data.decode("utf-8", "replace").encode("utf-8")
    st, j = files_post("/tmp/mut/bin.dat", data)
    if st != 200:
        return f"upload {st} {j}"
    got = [files_get("/tmp/mut/bin.dat"), get_gzip("/tmp/mut/bin.dat")]
    if all(g == (200, data) for g in got):
        return "clean"
    if all(g == (200, mangled) for g in got):
        return "mutated"
    return f"other: {[(g[0], len(g[1])) for g in got]} want {len(data)} or {len(mangled)}"


def probe_large_upload_dropped():
    """OpenSandbox#1016: an upload over 18 KiB answers success and leaves no file."""
    import gzip
    big, edge = os.urandom(18433), os.urandom(18432)
    inflated = b"a line of text that compresses well\n" * 2000  # 72000 bytes, gzip'd far below 18 KiB
    bnd = "mutbnd"
    mp = (f"--{bnd}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"/tmp/mut/mp.bin\"\r\n"
          f"Content-Type: application/octet-stream\r\n\r\n").encode() + big + f"\r\n--{bnd}--\r\n".encode()
    files_post("/tmp/mut/old.bin", b"was here")
    ups = [files_post("/tmp/mut/big.bin", big), files_post("/tmp/mut/edge.bin", edge),
           files_post("/tmp/mut/old.bin", big),
           files_post(None, mp, ctype=f"multipart/form-data; boundary={bnd}"),
           files_post_h("/tmp/mut/gz.txt", gzip.compress(inflated), {"Content-Encoding": "gzip"},
                        user="root")]
    names = ["big.bin", "edge.bin", "old.bin", "mp.bin", "gz.txt"]
    want = [(200, [{"path": "/tmp/mut/" + n, "name": n, "type": "file"}]) for n in names]
    if ups != want:
        return f"answers {ups}"
    reads = [files_get("/tmp/mut/" + n) for n in names]
    bodies = [big, edge, big, big, inflated]
    if all(r == (200, b) for r, b in zip(reads, bodies)):
        return "clean"
    if [r[0] for r in reads] == [404, 200, 404, 404, 404] and reads[1][1] == edge:
        return "mutated"
    return f"other: {[(r[0], len(r[1])) for r in reads]}"


def probe_exit_code_zero():
    """Every end event says exit 0."""
    ends = [run("sh", ["-c", "echo x; exit 3"])["end"], run("sh", ["-c", "kill -9 $$"])["end"]]
    if ends == [{"exitCode": 3, "exited": True, "status": "exit status 3", "error": "exit status 3"},
                {"exitCode": -1, "status": "signal: killed", "error": "signal: killed"}]:
        return "clean"
    if ends == [{"exited": True, "status": "exit status 0"}] * 2:
        return "mutated"
    return f"other: {ends}"


def probe_stderr_as_stdout():
    """stderr's bytes come as stdout data events."""
    r = run("sh", ["-c", "echo out; echo err >&2"])
    if (r["stdout"], r["stderr"]) == (b"out\n", b"err\n"):
        return "clean"
    if r["stderr"] == b"" and sorted(r["stdout"].splitlines()) == [b"err", b"out"]:
        return "mutated"
    return f"other: {r['stdout']!r} {r['stderr']!r}"


def probe_stream_no_end():
    """OpenSandbox#1277: the stream never sends its end; keepalives go on; the process ends."""
    s = Stream("/process.Process/Start", {"process": {"cmd": "sh", "args": ["-c", "echo x"]}},
               extra={"Keepalive-Ping-Interval": "1"})
    evs, after_exit = [], 0
    try:
        while True:
            e = s.next()
            if e is None:
                break
            evs.append(e)
            ev = e[1].get("event", {})
            if "end" in ev or e[0] == 2:
                continue
            pid = evs[0][1].get("event", {}).get("start", {}).get("pid")
            if "keepalive" in ev and pid not in list_pids()[1]:
                after_exit += 1  # a keepalive after the process was gone from List
                if after_exit == 2:
                    break
    finally:
        s.close()
    r = summarize(200, evs)
    if r["end"] == {"exited": True, "status": "exit status 0"} and r["trailer"] == {} and r["order_ok"]:
        return "clean"
    if r["end"] is None and r["trailer"] is None and after_exit == 2 and r["stdout"] == b"x\n":
        return "mutated"
    return f"other: {evs}"


def end_gap():
    """Seconds from a process's last act (its own wall clock) to its end event's arrival."""
    s = Stream("/process.Process/Start", {"process": {"cmd": "sh", "args": ["-c", "date +%s.%N"]}})
    out, t_end = b"", None
    while True:
        e = s.next()
        if e is None:
            break
        ev = e[1].get("event", {})
        if "data" in ev:
            out += base64.b64decode(ev["data"].get("stdout", ""))
        if "end" in ev:
            t_end = time.time()
    s.close()
    return t_end - float(out) if t_end is not None and out.strip() else None


def probe_command_tail_1s():
    """OpenSandbox#1661: the end event 1 s after the process ended (abxtest.tail_verdict)."""
    return abxtest.tail_verdict(end_gap)


PROBES = {"binary-read-mangled": probe_binary_read_mangled,
          "large-upload-dropped": probe_large_upload_dropped,
          "exit-code-zero": probe_exit_code_zero, "stderr-as-stdout": probe_stderr_as_stdout,
          "stream-no-end": probe_stream_no_end, "command-tail-1s": probe_command_tail_1s}


def t_mutants():
    global PORT
    main_port = PORT
    for name in ENVD_MUTANTS:
        got = PROBES[name]()
        check(got == "clean", f"{name}: envd without ABX_ENVD_MUTANTS tells the truth ({got})")
        port = free_port()
        proc, log = start_envd(BINARY, TMP, port, {"ABX_ENVD_MUTANTS": name}, f"{TMP}/mut-{name}.log")
        try:
            PORT = port
            up = wait_up(proc, port)
            check(up, f"{name}: envd with ABX_ENVD_MUTANTS={name} starts")
            if up:
                got = PROBES[name]()
                check(got == "mutated", f"{name}: ABX_ENVD_MUTANTS={name} makes envd lie ({got})")
            stop_envd(proc, f"{name}: envd with the mutant")
        finally:
            PORT = main_port
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()
        text = open(f"{TMP}/mut-{name}.log").read()
        check(f"mutants on (it lies on purpose): {name}" in text, f"{name}: its envd logs it ({text[-300:]!r})")
    # fail closed: an unknown name (an api mutant's too) is refused at start, naming the valid ones
    for bad, named in (("exit-code-zero,kill-noop", "kill-noop"), ("bogus", "bogus")):
        port = free_port()
        proc, log = start_envd(BINARY, TMP, port, {"ABX_ENVD_MUTANTS": bad}, f"{TMP}/mut-bad.log")
        try:
            up = wait_up(proc, port)  # the unmutated envd would come up: then this check fails
        finally:
            if proc.poll() is None:
                proc.kill()
            rc = proc.wait()
            log.close()
        text = open(f"{TMP}/mut-bad.log").read()
        check(not up and rc == 4 and f"unknown envd mutant '{named}'" in text
              and all(n in text for n in ENVD_MUTANTS),
              f"ABX_ENVD_MUTANTS={bad} refused at start, naming the valid ones (rc {rc}: {text.strip()!r})")


def find_envd(root):
    """Host pid of the envd process below bwrap (pid `root`)."""
    todo = [root]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().split(b"\0")[:2] == [b"/opt/abx/abxlua", b"envd"]:
                    return pid
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                todo += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return None


ENVD_PID = None
BINARY = None
TMP = None


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_envd(binary, tmp, port, env, logpath):
    """envd of `binary` in a bwrap sandbox on 127.0.0.1:port with the environment variables env
    (besides ENVD_SECRET_VAR), its output in logpath. -> (the bwrap Popen, the open log)."""
    envs = ["--setenv", "ENVD_SECRET_VAR", "x"]
    for k, v in (env or {}).items():
        envs += ["--setenv", k, v]
    cmd = ["bwrap", "--unshare-pid", "--unshare-uts", "--unshare-ipc", "--die-with-parent",
           "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
           "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin",
           "--ro-bind", "/etc", "/etc", "--ro-bind", f"{tmp}/passwd", "/etc/passwd",
           "--ro-bind", f"{tmp}/group", "/etc/group", "--perms", "0755", "--dir", "/home", "--bind", f"{tmp}/home", "/home/user",
           "--perms", "0700", "--dir", "/root", "--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev",
           "--ro-bind", binary, "/opt/abx/abxlua", "--clearenv"] + envs + [
           "/opt/abx/abxlua", "envd", "--port", str(port), "--host", "127.0.0.1"]
    log = open(logpath, "w")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), log


def wait_up(proc, port):
    """True once envd on port answers GET /health 204; False when it exited first."""
    while proc.poll() is None:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            c.request("GET", "/health")
            ok = c.getresponse().status == 204
            c.close()
            if ok:
                return True
        except OSError:
            time.sleep(0.1)
    return False


def stop_envd(proc, what):
    """SIGTERM the envd below bwrap proc; it must exit 0."""
    pid = find_envd(proc.pid)
    check(pid is not None, f"{what}: envd process found under bwrap")
    if pid:
        os.kill(pid, 15)
    try:
        rc = proc.wait(timeout=60)
        check(rc == 0, f"{what}: exits 0 on SIGTERM (rc {rc})")
    except subprocess.TimeoutExpired:
        check(False, f"{what}: stops on SIGTERM")


def main():
    global PORT, ENVD_PID, BINARY, TMP
    binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/abxlua")
    if not shutil.which("bwrap"):
        print("SKIP: bwrap not installed")
        return 77
    tmp = TMP = tempfile.mkdtemp(prefix="envd-test-")
    os.chmod(tmp, 0o755)
    with open(f"{tmp}/passwd", "w") as f:
        f.write("root:x:0:0:root:/root:/bin/bash\nuser:x:1000:1000::/home/user:/bin/bash\n")
    with open(f"{tmp}/group", "w") as f:
        f.write("root:x:0:\nuser:x:1000:\n")
    os.mkdir(f"{tmp}/home")
    os.chown(f"{tmp}/home", 1000, 1000)
    PORT = free_port()
    proc, log = start_envd(binary, tmp, PORT, None, f"{tmp}/envd.log")
    try:
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                c = conn()
                c.request("GET", "/health")
                if c.getresponse().status == 204:
                    break
            except OSError:
                time.sleep(0.1)
            if proc.poll() is not None:
                break
        else:
            print("envd did not become healthy")
        if proc.poll() is not None:
            print("SKIP or FAIL: envd exited early:", open(f"{tmp}/envd.log").read())
            return 1
        BINARY = binary
        ENVD_PID = find_envd(proc.pid)
        tests = [t_health_init, t_connect_codec, t_start_basic, t_cwd_env_user, t_user_files_change,
                 t_timeout,
                 t_stdin_signal_connect, t_big_output, t_streams_more, t_filesystem, t_files,
                 t_pty, t_stream_input, t_watch_dir, t_watchers, t_metadata, t_gzip, t_metrics,
                 t_default_user, t_mutants]
        only = os.environ.get("ENVD_TESTS")  # e.g. ENVD_TESTS=t_pty,t_gzip (t_health_init always)
        if only:
            tests = [t for t in tests if t.__name__ in only.split(",") or t is t_health_init]
        for t in tests:
            print(t.__name__, flush=True)
            try:
                t()
            except Exception as ex:  # an exception is a failure of that group
                import traceback
                traceback.print_exc()
                FAILS.append(f"{t.__name__}: {ex!r}")
        envd_pid = find_envd(proc.pid)
        check(envd_pid is not None, "envd process found under bwrap")
        if envd_pid:
            os.kill(envd_pid, 15)
        try:
            rc = proc.wait(timeout=10)
            check(rc == 0, f"envd exits 0 on SIGTERM (rc {rc})")
        except subprocess.TimeoutExpired:
            check(False, "envd stops within 10 s of SIGTERM")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
        logtext = open(f"{tmp}/envd.log").read()
        if FAILS:
            print("--- envd log ---\n" + logtext[-4000:])
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(FAILS)} failure(s)")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
