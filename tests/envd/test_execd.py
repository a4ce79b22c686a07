#!/usr/bin/env python3
"""tests/envd/test_execd.py: OpenSandbox's execd API as envd serves it (`abxlua envd
--execd-port N`), over real HTTP, inside bubblewrap like tests/envd/test_envd.py.

Usage: test_execd.py <path to abxlua>. Runs envd in a bwrap sandbox (own pid namespace, a
throwaway /etc/passwd with root and user:1000) with the envd port and an execd port on loopback,
then checks every execd route envd serves (commands, files, directories, search and replace, bash
sessions, metrics), the token rule, the 404s of the routes it does not serve, and (t_mutants) that
each envd mutant of ABX_ENVD_MUTANTS lies on execd's routes only when named. Wire source:
opensandbox-group/OpenSandbox specs/execd-api.yaml and OpenSandbox @3bb6fad components/execd/pkg (web/controller, web/model, runtime), cited per check.
Exit code 0 when every check passes; 77 (skip) when bwrap is missing.
"""
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import abxtest  # noqa: E402

FAILS = []
ENVD_PORT = 0
EXECD_PORT = 0
TOKEN = None  # set once /init gave envd an access token


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILS.append(what)
    return cond


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def req(method, path, body=None, headers=None, query=None, token=True, raw=False):
    """One execd request -> (status, headers dict (lowercase names), body bytes or JSON)."""
    c = http.client.HTTPConnection("127.0.0.1", EXECD_PORT, timeout=60)
    h = dict(headers or {})
    if token and TOKEN:
        h["X-EXECD-ACCESS-TOKEN"] = TOKEN
    if query:
        path += "?" + urllib.parse.urlencode(query, doseq=True)
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
        h.setdefault("Content-Type", "application/json")
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    hd = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    if not raw and hd.get("content-type", "").startswith("application/json"):
        try:
            return r.status, hd, json.loads(data)
        except ValueError:
            pass
    return r.status, hd, data


class Events:
    """POST /command as a stream: each event is a JSON object followed by a blank line
    (controller/sse.go writeSingleEvent writes payload + "\\n\\n", no "data:" prefix)."""

    def __init__(self, body, path="/command"):
        self.c = http.client.HTTPConnection("127.0.0.1", EXECD_PORT, timeout=60)
        h = {"Content-Type": "application/json"}
        if TOKEN:
            h["X-EXECD-ACCESS-TOKEN"] = TOKEN
        self.c.request("POST", path, body=json.dumps(body).encode(), headers=h)
        self.r = self.c.getresponse()
        self.status = self.r.status
        self.ctype = self.r.getheader("Content-Type", "")
        self.buf = b""
        self.times = []

    def next(self):
        while b"\n\n" not in self.buf:
            chunk = self.r.read1(65536)
            if not chunk:
                return None
            self.buf += chunk
        frame, self.buf = self.buf.split(b"\n\n", 1)
        self.times.append(time.monotonic())
        return json.loads(frame)

    def all(self):
        out = []
        while True:
            e = self.next()
            if e is None:
                break
            out.append(e)
        self.rest = self.buf
        self.c.close()
        return out

    def close(self):
        self.c.close()


def run(body, path="/command"):
    s = Events(body, path)
    evs = s.all() if s.status == 200 else []
    return s, evs


def texts(evs, kind):
    return [e.get("text") for e in evs if e.get("type") == kind]


def t_ping_and_unknown():
    st, _, body = req("GET", "/ping")
    check(st == 200 and body == b"", f"GET /ping → 200 empty (ping.go) [{st} {body!r}]")
    # routes execd has but this envd does not serve: 404 in execd's error shape
    for m, p in [("POST", "/pty"), ("GET", "/proxy/8080/x")]:
        st, _, j = req(m, p, body={} if m == "POST" else None)
        check(st == 404 and isinstance(j, dict) and j.get("code") == "NOT_SUPPORTED"
              and p in j.get("message", ""), f"{m} {p} → 404 NOT_SUPPORTED [{st} {j}]")
    st, hd, body = req("GET", "/nope")
    check(st == 404 and body == b"404 page not found", f"unknown path → gin's 404 [{st} {body!r}]")
    # /code: no code interpreter listens here (execd_code.c), as execd without its Jupyter
    st, _, j = req("POST", "/code/context", body={"language": "python"})
    check(st == 500 and isinstance(j, dict) and j.get("code") == "RUNTIME_ERROR"
          and "runtime server not configured" in j.get("message", ""),
          f"/code without a code interpreter → 500 RUNTIME_ERROR [{st} {j}]")


def t_command_foreground():
    s, evs = run({"command": "echo one; sleep 0.2; echo two >&2; sleep 0.2; printf 'a\\r\\nb\\n\\nlast'"})
    check(s.status == 200 and s.ctype.startswith("text/event-stream"),
          f"POST /command → 200 text/event-stream [{s.status} {s.ctype}]")
    kinds = [e["type"] for e in evs if e["type"] != "ping"]
    check(kinds and kinds[0] == "init" and len(evs[0].get("text", "")) == 32,
          f"first event init with a 32-hex id (context.go newContextID) [{evs[:1]}]")
    check(kinds[-1:] == ["execution_complete"], f"last event execution_complete [{kinds}]")
    check(texts(evs, "stdout") == ["one", "a", "b", "\n", "last"],
          f"stdout lines split as readFromPos does [{texts(evs, 'stdout')}]")
    check(texts(evs, "stderr") == ["two"], f"stderr line [{texts(evs, 'stderr')}]")
    order = [e.get("text") for e in evs if e["type"] in ("stdout", "stderr")]
    check(order[:2] == ["one", "two"], f"stdout and stderr in the order they happened [{order}]")
    done = [e for e in evs if e["type"] == "execution_complete"][0]
    check(isinstance(done.get("execution_time"), int) and done["execution_time"] >= 400
          and isinstance(done.get("timestamp"), int) and done["timestamp"] > 1.6e12,
          f"execution_complete has execution_time ms and a unix-ms timestamp [{done}]")
    check(s.rest == b"", "nothing after the last frame")
    # events arrive as they happen (not at the end)
    s = Events({"command": "echo early; sleep 1.5; echo late"})
    t0 = time.monotonic()
    first = s.next()
    e = s.next()
    t_early = time.monotonic() - t0
    rest = s.all()
    check(first["type"] == "init" and e.get("text") == "early" and t_early < 1.0,
          f"a line is delivered before the command ends ({t_early:.2f}s)")
    check([x.get("text") for x in rest if x["type"] == "stdout"] == ["late"], "then the rest")
    # the stream lingers ~1 s after the final event (ApiGracefulShutdownTimeout)
    s = Events({"command": "true"})
    evs = []
    t_last = None
    while True:
        x = s.next()
        if x is None:
            break
        evs.append(x)
        t_last = time.monotonic()
    t_end = time.monotonic()
    check(0.7 < t_end - t_last < 2.0, f"stream ends ~1 s after the final event ({t_end - t_last:.2f}s)")


def t_command_error_timeout():
    s, evs = run({"command": "echo out; exit 3"})
    errs = [e for e in evs if e["type"] == "error"]
    check(len(errs) == 1 and errs[0]["error"] == {"ename": "CommandExecError", "evalue": "3",
                                                   "traceback": ["exit status 3"]},
          f"exit 3 → error event CommandExecError/3 (command.go) [{errs}]")
    check(not [e for e in evs if e["type"] == "execution_complete"], "no execution_complete after an error")
    check(evs and evs[-1]["type"] == "error", "error is the last event")
    cid = evs[0]["text"]
    st, _, j = req("GET", f"/command/status/{cid}")
    check(st == 200 and j.get("running") is False and j.get("exit_code") == 3
          and j.get("error") == "exit status 3" and j.get("content") == "echo out; exit 3"
          and j.get("id") == cid and "finished_at" in j and j.get("started_at", "").endswith("Z"),
          f"status of the failed command [{j}]")
    t0 = time.monotonic()
    s, evs = run({"command": "echo start; sleep 30", "timeout": 700})
    el = time.monotonic() - t0
    errs = [e for e in evs if e["type"] == "error"]
    check(errs and errs[0]["error"]["evalue"] == "-1" and errs[0]["error"]["traceback"] == ["signal: killed"]
          and el < 5, f"timeout 700 ms → killed, error evalue -1 ({el:.1f}s) [{errs}]")
    check(texts(evs, "stdout") == ["start"], "output before the timeout was delivered")
    # a start that fails (uid 1000 cannot enter /root): init, then an error event; not kept
    s, evs = run({"command": "true", "cwd": "/root", "uid": 1000})
    kinds = [e["type"] for e in evs]
    check(kinds == ["init", "error"] and evs[1]["error"]["ename"] == "CommandExecError"
          and evs[1]["error"]["evalue"], f"start failure → init + error event (command.go) [{evs}]")
    if evs:
        st, _, j = req("GET", f"/command/status/{evs[0]['text']}")
        check(st == 404, f"a command that never started has no status [{st}]")
    # pings every 3 s while a command is quiet (sse.go ping)
    s, evs = run({"command": "sleep 3.6; echo done"})
    pings = [e for e in evs if e["type"] == "ping"]
    check(len(pings) == 1 and pings[0].get("text") == "pong", f"one ping in 3.6 s of silence [{pings}]")
    # a spawn that fails validation: cwd missing → 400 INVALID_REQUEST_BODY before any stream
    st, _, j = req("POST", "/command", body={"command": "true", "cwd": "/nonexistent"})
    check(st == 400 and j.get("code") == "INVALID_REQUEST_BODY"
          and "working directory does not exist" in j.get("message", ""),
          f"missing cwd → 400 [{st} {j}]")
    for bad, why in [({}, "required"), ({"command": "x", "timeout": -1}, "gte"),
                     ({"command": "x", "gid": 5}, "uid is required"),
                     ({"command": 5}, "command"), ({"command": "x", "envs": {"A": 1}}, "envs")]:
        st, _, j = req("POST", "/command", body=bad)
        check(st == 400 and j.get("code") == "INVALID_REQUEST_BODY" and why in j.get("message", ""),
              f"{bad} → 400 naming {why!r} [{st} {j}]")
    st, _, j = req("POST", "/command", body=b"{not json", headers={"Content-Type": "application/json"})
    check(st == 400 and j.get("message", "").startswith("error parsing request, MAYBE invalid body format"),
          f"malformed JSON → 400 [{st} {j}]")


def t_command_cwd_envs_user():
    s, evs = run({"command": "pwd; echo $FOO; id -u; id -g", "cwd": "/tmp", "envs": {"FOO": "bar baz"}})
    check(texts(evs, "stdout") == ["/tmp", "bar baz", "0", "0"], f"cwd, envs, root by default [{texts(evs, 'stdout')}]")
    s, evs = run({"command": "id -u; id -g; echo $HOME", "uid": 1000})
    check(texts(evs, "stdout")[:2] == ["1000", "1000"], f"uid 1000 → its passwd gid [{texts(evs, 'stdout')}]")
    s, evs = run({"command": "id -u; id -g", "uid": 1000, "gid": 0})
    check(texts(evs, "stdout") == ["1000", "0"], f"uid 1000 gid 0 [{texts(evs, 'stdout')}]")
    s, evs = run({"command": "pwd", "cwd": "~"})
    check(texts(evs, "stdout") == ["/root"], f"cwd ~ → $HOME [{texts(evs, 'stdout')}]")


def t_background_status_logs_kill():
    s, evs = run({"command": "echo l1; echo e1 >&2; sleep 0.5; echo l2; sleep 30", "background": True})
    kinds = [e["type"] for e in evs]
    check(kinds == ["init", "execution_complete"], f"background → init, execution_complete at once [{kinds}]")
    cid = evs[0]["text"]
    st, _, j = req("GET", f"/command/status/{cid}")
    check(st == 200 and j.get("running") is True and "exit_code" not in j and "finished_at" not in j,
          f"background status running [{j}]")
    time.sleep(1.0)
    st, hd, body = req("GET", f"/command/{cid}/logs")
    cur = hd.get("execd-commands-tail-cursor")
    check(st == 200 and body == b"l1\ne1\nl2\n" and cur == str(len(body))
          and hd.get("content-type", "").startswith("text/plain"),
          f"logs: combined output, tail cursor = bytes [{st} {body!r} {cur}]")
    st, hd, body = req("GET", f"/command/{cid}/logs", query={"cursor": 3})
    check(st == 200 and body == b"e1\nl2\n" and hd.get("execd-commands-tail-cursor") == "9",
          f"logs from cursor 3 [{body!r} {hd.get('execd-commands-tail-cursor')}]")
    st, hd, body = req("GET", f"/command/{cid}/logs", query={"cursor": 9})
    check(st == 200 and body == b"" and hd.get("execd-commands-tail-cursor") == "9", "logs at the end: empty")
    st, _, j = req("DELETE", "/command", query={"id": cid})
    check(st == 200, f"DELETE /command?id= → 200 [{st} {j}]")
    st, _, j = req("GET", f"/command/status/{cid}")
    check(j.get("running") is False and j.get("exit_code") == -1 and j.get("error") == "signal: terminated",
          f"killed background command: exit -1, signal: terminated [{j}]")
    st, _, j = req("DELETE", "/command", query={"id": cid})
    check(st == 500 and j.get("code") == "RUNTIME_ERROR" and "is not running" in j.get("message", ""),
          f"DELETE of an ended command → 500 [{st} {j}]")
    st, _, j = req("DELETE", "/command", query={"id": "nope"})
    check(st == 500 and "no such session" in j.get("message", ""), f"DELETE unknown → 500 [{st} {j}]")
    st, _, j = req("DELETE", "/command")
    check(st == 400 and j.get("code") == "MISSING_QUERY", f"DELETE without id → 400 MISSING_QUERY [{st} {j}]")
    st, _, j = req("GET", "/command/status/nope")
    check(st == 404 and j.get("code") == "INVALID_REQUEST_BODY", f"status unknown → 404 [{st} {j}]")
    st, _, j = req("GET", "/command/nope/logs")
    check(st == 400 and "command not found" in j.get("message", ""), f"logs unknown → 400 [{st} {j}]")
    # foreground: killed by DELETE while its stream is open
    s = Events({"command": "echo up; sleep 30"})
    init = s.next()
    s.next()
    st, _, _ = req("DELETE", "/command", query={"id": init["text"]})
    rest = s.all()
    errs = [e for e in rest if e["type"] == "error"]
    check(st == 200 and errs and errs[0]["error"]["traceback"] == ["signal: terminated"],
          f"foreground killed by DELETE → its stream ends with an error event [{errs}]")
    st, _, j = req("GET", f"/command/{init['text']}/logs")
    check(st == 400 and "not running in background" in j.get("message", ""), f"logs of a foreground command → 400 [{j}]")
    # a client that hangs up kills its foreground command
    s = Events({"command": "echo $$ > /tmp/hup.pid; echo go; sleep 30"})
    init = s.next()
    s.next()
    s.close()
    deadline = time.time() + 5
    j = {}
    while time.time() < deadline:
        _, _, j = req("GET", f"/command/status/{init['text']}")
        if j.get("running") is False:
            break
        time.sleep(0.2)
    check(j.get("running") is False and j.get("exit_code") == -1, f"client hang-up kills the command [{j}]")


def t_big_output():
    # 20 MB of output through a stream that is read slowly at first: bounded memory, no loss
    s = Events({"command": "head -c 20000000 /dev/zero | tr '\\0' 'x' | fold -w 1000"})
    time.sleep(1.0)
    n = total = 0
    while True:
        e = s.next()
        if e is None:
            break
        if e["type"] == "stdout":
            n += 1
            total += len(e["text"])
    check(n == 20000 and total == 20000000, f"20 MB in 20,000 lines arrive whole ({n} lines, {total} bytes)")
    # a reader that stops reading: envd's memory stays bounded while the command waits
    pid = find_envd(BWRAP_PID)
    s = Events({"command": "head -c 500000000 /dev/zero | tr '\\0' 'x' | fold -w 1000"})
    s.next()
    time.sleep(3.0)
    rss = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) // 1024
    s.close()
    # under AddressSanitizer (make test-asan) freed memory waits in its quarantine, 256 MiB by
    # default, before it is reused: that much more RSS is the sanitizer's, not a buffer of ours
    with open(f"/proc/{pid}/maps") as f:
        asan = "libasan" in f.read()
    bound = 200 + (256 if asan else 0)
    check(0 < rss < bound, f"500 MB of unread output: envd RSS stays bounded ({rss} MiB < {bound} MiB)")


def t_long_line():
    # one 200,000-byte line of 2-byte UTF-8 characters: sent in pieces, none splitting a character
    s, evs = run({"command": "head -c 100000 /dev/zero | tr '\\0' 'x' | sed 's/x/\\xc3\\xa9/g'; echo"})
    outs = texts(evs, "stdout")
    joined = "".join(outs)
    check(len(outs) >= 4 and joined == "\u00e9" * 100000 and all(len(o.encode()) <= 65536 for o in outs),
          f"a long line arrives in pieces of at most 64 KiB, characters whole ({len(outs)} pieces, {len(joined)} chars)")
    st, _, j = req("POST", "/command", body={"command": "true", "timeout": 10**17})
    check(st == 400 and "timeout" in j.get("message", ""), f"timeout past Go's Duration → 400 [{st} {j}]")


def t_files():
    blob = bytes(range(256)) * 1000 + b"\x00\xff tail"
    boundary = "XbOuNdArY"
    parts = []
    for path, data, meta in [("/tmp/up/a/bin.dat", blob, {"mode": 640}),
                             ("/tmp/up/b.txt", b"hello\nworld\nthird\n", {"owner": "user", "group": "user"})]:
        meta = dict(meta, path=path)
        parts.append(f"--{boundary}\r\nContent-Disposition: form-data; name=\"metadata\"; filename=\"metadata\"\r\n"
                     f"Content-Type: application/json\r\n\r\n".encode() + json.dumps(meta).encode() + b"\r\n")
        parts.append(f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{path}\"\r\n"
                     f"Content-Type: application/octet-stream\r\n\r\n".encode() + data + b"\r\n")
    body = b"".join(parts) + f"--{boundary}--\r\n".encode()
    st, _, j = req("POST", "/files/upload", body=body,
                   headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    check(st == 200, f"upload two files (metadata then file parts) → 200 [{st} {j}]")
    st, hd, data = req("GET", "/files/download", query={"path": "/tmp/up/a/bin.dat"}, raw=True)
    check(st == 200 and data == blob and hd.get("content-type") == "application/octet-stream"
          and hd.get("content-disposition") == 'attachment; filename="bin.dat"'
          and hd.get("accept-ranges") == "bytes", f"download round trip of binary data [{st} {len(data)}]")
    st, hd, data = req("GET", "/files/download", query={"path": "/tmp/up/a/bin.dat"},
                       headers={"Range": "bytes=250-260"}, raw=True)
    check(st == 206 and data == blob[250:261] and hd.get("content-range") == f"bytes 250-260/{len(blob)}",
          f"Range bytes=250-260 → 206 [{st} {hd.get('content-range')}]")
    st, hd, data = req("GET", "/files/download", query={"path": "/tmp/up/a/bin.dat"},
                       headers={"Range": "bytes=-5"}, raw=True)
    check(st == 206 and data == blob[-5:], f"suffix Range → last 5 bytes [{st} {data!r}]")
    st, _, j = req("GET", "/files/download", query={"path": "/tmp/up/a/bin.dat"}, headers={"Range": "lines=1"})
    check(st == 416 and j == {"code": "UNKNOWN"}, f"malformed Range → 416 {{code: UNKNOWN}} [{st} {j}]")
    st, hd, data = req("GET", "/files/download", query={"path": "/tmp/up/a/bin.dat"},
                       headers={"Range": "bytes=999999999-"}, raw=True)
    check(st == 416 and hd.get("content-range") == f"bytes */{len(blob)}", f"Range past the end → 416 [{st}]")
    st, hd, data = req("GET", "/files/download", query={"path": "/tmp/up/b.txt", "offset": 2, "limit": 1}, raw=True)
    check(st == 200 and data == b"world" and hd.get("content-type", "").startswith("text/plain"),
          f"offset/limit lines [{st} {data!r}]")
    st, _, j = req("GET", "/files/download", query={"path": "/tmp/nope"})
    check(st == 404 and j.get("code") == "FILE_NOT_FOUND", f"download missing → 404 FILE_NOT_FOUND [{st} {j}]")
    st, _, j = req("GET", "/files/download")
    check(st == 400 and j.get("code") == "MISSING_QUERY", f"download without path → 400 [{st} {j}]")
    st, _, j = req("GET", "/files/info", query={"path": ["/tmp/up/a/bin.dat", "/tmp/up/b.txt"]})
    a, b = (j or {}).get("/tmp/up/a/bin.dat", {}), (j or {}).get("/tmp/up/b.txt", {})
    check(st == 200 and a.get("size") == len(blob) and a.get("type") == "file" and a.get("mode") == 640
          and a.get("owner") == "root" and b.get("owner") == "user" and b.get("group") == "user"
          and b.get("mode") == 755 and a.get("modified_at", "").endswith("Z") and "created_at" in a,
          f"GET /files/info of two paths: size, mode 640 from metadata, owner, default 755 [{j}]")
    st, _, j = req("GET", "/files/info", query={"path": "/tmp/nope"})
    check(st == 404 and j.get("code") == "FILE_NOT_FOUND", f"info missing → 404 [{st} {j}]")
    st, _, j = req("POST", "/files/permissions", body={"/tmp/up/b.txt": {"mode": 600, "owner": "root", "group": "root"}})
    st2, _, j2 = req("GET", "/files/info", query={"path": "/tmp/up/b.txt"})
    info = (j2 or {}).get("/tmp/up/b.txt", {})
    check(st == 200 and info.get("mode") == 600 and info.get("owner") == "root",
          f"POST /files/permissions mode 600 owner root [{st} {info}]")
    st, _, j = req("POST", "/files/permissions", body={"/tmp/up/b.txt": {"mode": 999}})
    check(st == 500 and j.get("code") == "RUNTIME_ERROR", f"mode 999 (not octal) → 500 [{st} {j}]")
    st, _, j = req("POST", "/files/permissions", body={"/tmp/up/b.txt": {"owner": "nobody-here"}})
    check(st == 500 and "unknown user" in j.get("message", ""), f"unknown owner → 500 [{st} {j}]")
    st, _, j = req("POST", "/files/permissions", body={"/tmp/up/b.txt": {"mode": "755"}})
    check(st == 400 and j.get("code") == "INVALID_REQUEST_BODY", f"mode as a string → 400 [{st} {j}]")
    st, _, j = req("POST", "/files/mv", body=[{"src": "/tmp/up/b.txt", "dest": "/tmp/moved/deep/b.txt"}])
    st2, _, j2 = req("GET", "/files/info", query={"path": "/tmp/moved/deep/b.txt"})
    check(st == 200 and st2 == 200, f"POST /files/mv into a new directory [{st} {j}]")
    st, _, j = req("POST", "/files/mv", body=[{"src": "/tmp/up/b.txt", "dest": "/tmp/x"}])
    check(st == 404 and j.get("code") == "FILE_NOT_FOUND", f"mv of a missing src → 404 [{st} {j}]")
    st, _, j = req("POST", "/files/mv", body=[{"src": "/tmp/moved/deep/b.txt", "dest": "/tmp/up/a/bin.dat"}])
    check(st == 500 and "already exists" in j.get("message", ""), f"mv onto an existing dest → 500 [{st} {j}]")
    st, _, j = req("DELETE", "/files", query={"path": ["/tmp/moved/deep/b.txt", "/tmp/never-there"]})
    st2, _, _ = req("GET", "/files/info", query={"path": "/tmp/moved/deep/b.txt"})
    check(st == 200 and st2 == 404, f"DELETE /files (a missing one is no error) [{st} {st2}]")
    st, _, j = req("DELETE", "/files", query={"path": "/tmp/moved"})
    check(st == 500 and "is a directory" in j.get("message", ""), f"DELETE /files of a directory → 500 [{st} {j}]")
    # upload errors
    st, _, j = req("POST", "/files/upload", body=b"x", headers={"Content-Type": "application/octet-stream"})
    check(st == 400 and j.get("code") == "INVALID_FILE", f"upload not multipart → 400 INVALID_FILE [{st} {j}]")
    only_file = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\nabc\r\n"
                 f"--{boundary}--\r\n").encode()
    st, _, j = req("POST", "/files/upload", body=only_file,
                   headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    check(st == 400 and j.get("code") == "INVALID_FILE_METADATA", f"file without metadata → 400 [{st} {j}]")
    only_meta = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"metadata\"; filename=\"metadata\"\r\n\r\n"
                 '{"path":"/tmp/z"}\r\n' f"--{boundary}--\r\n").encode()
    st, _, j = req("POST", "/files/upload", body=only_meta,
                   headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    check(st == 400 and j.get("code") == "INVALID_FILE_CONTENT", f"metadata without file → 400 [{st} {j}]")


def t_directories():
    st, _, j = req("POST", "/directories", body={"/tmp/d1/x/y": {"mode": 700}, "/tmp/d1/b": {"mode": 0}})
    check(st == 200, f"POST /directories [{st} {j}]")
    open_check = req("GET", "/files/info", query={"path": ["/tmp/d1/x/y", "/tmp/d1/b"]})[2]
    check(open_check.get("/tmp/d1/x/y", {}).get("mode") == 700 and open_check.get("/tmp/d1/b", {}).get("mode") == 755
          and open_check["/tmp/d1/b"].get("type") == "directory", f"modes 700 and default 755 [{open_check}]")
    req("POST", "/command", body={"command": "echo hi > /tmp/d1/x/f; ln -s /tmp/d1/x /tmp/d1/link"})
    time.sleep(0.3)
    st, _, j = req("GET", "/directories/list", query={"path": "/tmp/d1"})
    names = [e["path"] for e in j] if isinstance(j, list) else j
    check(st == 200 and names == ["/tmp/d1/b", "/tmp/d1/link", "/tmp/d1/x"], f"list depth 1 in name order [{names}]")
    types = {e["path"]: e["type"] for e in j} if isinstance(j, list) else {}
    check(types.get("/tmp/d1/link") == "symlink", f"symlink listed as such [{types}]")
    st, _, j = req("GET", "/directories/list", query={"path": "/tmp/d1", "depth": 3})
    names = [e["path"] for e in j] if isinstance(j, list) else j
    check(names == ["/tmp/d1/b", "/tmp/d1/link", "/tmp/d1/x", "/tmp/d1/x/f", "/tmp/d1/x/y"],
          f"depth 3: children after their parent, symlink not followed [{names}]")
    st, _, j = req("GET", "/directories/list", query={"path": "/tmp/d1/link"})
    check(st == 400 and "symbolic link" in j.get("message", ""), f"list of a symlink → 400 [{st} {j}]")
    st, _, j = req("GET", "/directories/list", query={"path": "/tmp/d1/x/f"})
    check(st == 400 and "not a directory" in j.get("message", ""), f"list of a file → 400 [{st} {j}]")
    st, _, j = req("GET", "/directories/list", query={"path": "/tmp/none"})
    check(st == 404 and j.get("code") == "FILE_NOT_FOUND", f"list missing → 404 [{st} {j}]")
    st, _, j = req("GET", "/directories/list", query={"path": "/tmp/d1", "depth": "x"})
    check(st == 400 and j.get("code") == "INVALID_REQUEST_BODY", f"bad depth → 400 [{st} {j}]")
    st, _, j = req("DELETE", "/directories", query={"path": ["/tmp/d1", "/tmp/gone-already"]})
    st2, _, _ = req("GET", "/files/info", query={"path": "/tmp/d1"})
    check(st == 200 and st2 == 404, f"DELETE /directories (rm -rf) [{st} {st2}]")


def t_search():
    """GET /files/search (filesystem.go SearchFiles, util/glob): base names matched, Walk order."""
    req("POST", "/command", body={"command": "mkdir -p /tmp/s/sub /tmp/s/d.txt && cd /tmp/s && "
                                  "echo hello hello > a.txt && echo x > b.log && echo c > sub/c.txt && "
                                  "echo h > .hidden.txt && ln -s a.txt link.txt"})
    time.sleep(0.3)
    st, _, j = req("GET", "/files/search", query={"path": "/tmp/s", "pattern": "*.txt"})
    paths = [e.get("path") for e in j] if isinstance(j, list) else j
    check(st == 200 and paths == ["/tmp/s/.hidden.txt", "/tmp/s/a.txt", "/tmp/s/link.txt", "/tmp/s/sub/c.txt"],
          f"search *.txt: files and symlinks, not the directory d.txt, in Walk order [{st} {paths}]")
    kinds = {e["path"]: (e["type"], e["mode"]) for e in j} if isinstance(j, list) else {}
    check(kinds.get("/tmp/s/link.txt", ("",))[0] == "symlink" and kinds.get("/tmp/s/a.txt") == ("file", 644),
          f"search entries are FileInfo (symlink not followed, mode 644) [{kinds}]")
    st, _, j = req("GET", "/files/search", query={"path": "/tmp/s"})
    check(st == 200 and isinstance(j, list) and len(j) == 5, f"default pattern ** → every file [{st} {j}]")
    for pat, want in [("{a,c}.txt", ["/tmp/s/a.txt", "/tmp/s/sub/c.txt"]), ("**/*.log", ["/tmp/s/b.log"]),
                      ("[!a-b]*.txt", ["/tmp/s/.hidden.txt", "/tmp/s/link.txt", "/tmp/s/sub/c.txt"]),
                      ("nothing*", [])]:
        st, _, j = req("GET", "/files/search", query={"path": "/tmp/s", "pattern": pat})
        got = [e.get("path") for e in j] if isinstance(j, list) else j
        check(st == 200 and got == want, f"search pattern {pat} [{st} {got}]")
    st, _, j = req("GET", "/files/search", query={"path": "/tmp/s/a.txt", "pattern": "a.*"})
    check(st == 200 and [e.get("path") for e in j] == ["/tmp/s/a.txt"], f"search of a file matches itself [{j}]")
    st, _, j = req("GET", "/files/search", query={"pattern": "*"})
    check(st == 400 and j.get("code") == "MISSING_QUERY", f"search without path → 400 MISSING_QUERY [{st} {j}]")
    st, _, j = req("GET", "/files/search", query={"path": "/tmp/nope"})
    check(st == 404 and j.get("code") == "FILE_NOT_FOUND", f"search of a missing path → 404 [{st} {j}]")
    st, _, j = req("GET", "/files/search", query={"path": "/tmp/s", "pattern": "[a"})
    check(st == 500 and j.get("code") == "RUNTIME_ERROR" and "invalid pattern" in j.get("message", ""),
          f"search with a bad pattern → 500 invalid pattern [{st} {j}]")


def t_replace():
    """POST /files/replace (filesystem.go ReplaceContent)."""
    req("POST", "/command", body={"command": "mkdir -p /tmp/r && printf 'aXbXXc' > /tmp/r/f && "
                                  "chmod 640 /tmp/r/f && printf 'keep' > /tmp/r/g"})
    time.sleep(0.3)
    st, _, j = req("POST", "/files/replace", query={"verbose": "true"},
                   body={"/tmp/r/f": {"old": "X", "new": "--"}, "/tmp/r/g": {"old": "zz", "new": "y"}})
    check(st == 200 and j == {"/tmp/r/f": {"replacedCount": 3}, "/tmp/r/g": {"replacedCount": 0}},
          f"replace verbose → per-file replacedCount [{st} {j}]")
    st2, _, data = req("GET", "/files/download", query={"path": "/tmp/r/f"}, raw=True)
    info = req("GET", "/files/info", query={"path": "/tmp/r/f"})[2].get("/tmp/r/f", {})
    check(data == b"a--b----c" and info.get("mode") == 640, f"every occurrence replaced, mode kept [{data!r} {info}]")
    st, _, body = req("POST", "/files/replace", body={"/tmp/r/f": {"old": "--", "new": ""}}, raw=True)
    data = req("GET", "/files/download", query={"path": "/tmp/r/f"}, raw=True)[2]
    check(st == 200 and body == b"" and data == b"abc", f"replace without verbose → 200 empty [{st} {body!r} {data!r}]")
    st, _, j = req("POST", "/files/replace", body={"/tmp/r/f": {"old": "", "new": "x"}})
    check(st == 400 and j.get("code") == "INVALID_REQUEST_BODY" and j.get("message") == "old content must not be empty",
          f"empty old → 400 [{st} {j}]")
    st, _, j = req("POST", "/files/replace", body={"/tmp/r/nope": {"old": "a", "new": "b"}})
    check(st == 404 and j.get("code") == "FILE_NOT_FOUND", f"replace in a missing file → 404 [{st} {j}]")
    st, _, j = req("POST", "/files/replace", body={"/tmp/r": {"old": "a", "new": "b"}})
    check(st == 500 and j.get("code") == "RUNTIME_ERROR", f"replace in a directory → 500 [{st} {j}]")
    st, _, j = req("POST", "/files/replace", body=[{"old": "a"}])
    check(st == 400 and j.get("code") == "INVALID_REQUEST_BODY", f"replace body not an object → 400 [{st} {j}]")
    st, _, j = req("POST", "/files/replace", body={"/tmp/r/f": {"old": 1, "new": "b"}})
    check(st == 400 and "'old'" in j.get("message", ""), f"replace old not a string → 400 naming it [{st} {j}]")


def new_session(body=None):
    st, _, j = req("POST", "/session", body=body if body is not None else {})
    return st, j, (j or {}).get("session_id") if isinstance(j, dict) else None


def t_sessions():
    """Bash sessions (bash_session.go, codeinterpreting.go CreateSession/RunInSession/DeleteSession)."""
    st, j, sid = new_session()
    check(st == 200 and sid and len(sid) == 36 and sid.count("-") == 4, f"POST /session → {{session_id: uuid}} [{st} {j}]")
    st, _, j = req("POST", "/session", body=b"")
    check(st == 200 and "session_id" in (j or {}), f"POST /session with no body → 200 [{st} {j}]")
    s, evs = run({"command": "cd /tmp; export FOO='b a\"r'; echo one; echo; echo two >&2; printf 'no-eol'"},
                 f"/session/{sid}/run")
    kinds = [e.get("type") for e in evs]
    check(s.status == 200 and s.ctype.startswith("text/event-stream") and kinds[0] == "init"
          and evs[0].get("text") == sid and kinds[-1] == "execution_complete",
          f"run → init(session id) … execution_complete [{s.status} {kinds}]")
    check(texts(evs, "stdout") == ["one", "two", "no-eol"] and not texts(evs, "stderr"),
          f"run output: merged lines as stdout, empty lines and markers not sent [{texts(evs, 'stdout')}]")
    s, evs = run({"command": "pwd; echo \"$FOO\""}, f"/session/{sid}/run")
    check(texts(evs, "stdout") == ["/tmp", 'b a"r'], f"cwd and exported vars carry to the next run [{texts(evs, 'stdout')}]")
    s, evs = run({"command": "pwd", "cwd": "/"}, f"/session/{sid}/run")
    check(texts(evs, "stdout") == ["/"], f"run cwd overrides the session's [{texts(evs, 'stdout')}]")
    s, evs = run({"command": "export LATER=1; false"}, f"/session/{sid}/run")
    err = [e for e in evs if e.get("type") == "error"]
    check(len(err) == 1 and err[0]["error"] == {"ename": "CommandExecError", "evalue": "1", "traceback": ["exit status 1"]}
          and "execution_complete" not in [e.get("type") for e in evs], f"exit 1 → error event [{evs}]")
    s, evs = run({"command": "echo \"$LATER\""}, f"/session/{sid}/run")
    check(texts(evs, "stdout") == ["1"], f"a failed run still leaves its variables [{texts(evs, 'stdout')}]")
    t0 = time.monotonic()
    s, evs = run({"command": "echo before; sleep 30", "timeout": 700}, f"/session/{sid}/run")
    rest = json.loads(s.rest) if s.rest.strip() else None
    check(texts(evs, "stdout") == ["before"] and rest == {"code": "RUNTIME_ERROR",
          "message": "error running in session. timeout after 700ms"} and time.monotonic() - t0 < 20,
          f"timeout → the group killed, execd's error JSON ends the stream [{evs} {s.rest!r}]")
    st, j, sid2 = new_session({"cwd": "/tmp/sessdir/deep"})
    s, evs = run({"command": "pwd"}, f"/session/{sid2}/run")
    check(st == 200 and texts(evs, "stdout") == ["/tmp/sessdir/deep"], f"create cwd is made and used [{st} {evs}]")
    bad = [({}, "'Command' failed on the 'required' tag"), ({"command": "x", "timeout": -1}, "'gte' tag"),
           ({"command": "x", "cwd": "/tmp/none-such"}, "working directory does not exist"),
           ({"command": 5}, "field 'command' must be a string")]
    for body, want in bad:
        st, _, j = req("POST", f"/session/{sid}/run", body=body)
        check(st == 400 and j.get("code") == "INVALID_REQUEST_BODY" and want in j.get("message", ""),
              f"run {body} → 400 ({want}) [{st} {j}]")
    st, _, j = req("POST", f"/session/{sid}/run", body=b"{nope", headers={"Content-Type": "application/json"})
    check(st == 400 and j.get("message", "").startswith("error parsing request."), f"run with bad JSON → 400 [{st} {j}]")
    st, _, j = req("POST", "/session/not-a-session/run", body={"command": "true"})
    check(st == 500 and j == {"code": "RUNTIME_ERROR", "message": "error running in session. context not found"},
          f"run in an unknown session → 500 context not found [{st} {j}]")
    st, _, j = req("POST", "/session", body={"cwd": 3})
    check(st == 400 and j.get("code") == "INVALID_REQUEST_BODY", f"create with cwd 3 → 400 [{st} {j}]")
    st, _, j = req("POST", "/session", body={"cwd": "/proc/1/nope"})
    check(st == 500 and j.get("code") == "RUNTIME_ERROR", f"create with an impossible cwd → 500 [{st} {j}]")
    # DELETE while a run is going: its group is killed and its stream ends with the error
    stream = Events({"command": "sleep 30"}, f"/session/{sid}/run")
    first = stream.next()
    t0 = time.monotonic()
    st, _, body = req("DELETE", f"/session/{sid}", raw=True)
    evs = stream.all()
    check(first and first.get("type") == "init" and st == 200 and body == b""
          and [e.get("type") for e in evs if e.get("type") != "ping"] == ["error"]
          and time.monotonic() - t0 < 15, f"DELETE /session/{{id}} kills its running run [{st} {evs}]")
    st, _, j = req("DELETE", f"/session/{sid}")
    check(st == 404 and j == {"code": "CONTEXT_NOT_FOUND", "message": f"session {sid} not found"},
          f"DELETE of a deleted session → 404 CONTEXT_NOT_FOUND [{st} {j}]")
    st, _, j = req("POST", f"/session/{sid}/run", body={"command": "true"})
    check(st == 500 and "context not found" in j.get("message", ""), f"run after delete → 500 [{st} {j}]")
    st, _, body = req("POST", "/session//run", body={"command": "true"})
    check(st == 404 and body == b"404 page not found", f"empty session id → gin's 404 [{st} {body!r}]")
    req("DELETE", f"/session/{sid2}")
    st, _, j = req("GET", "/files/search", query={"path": "/tmp", "pattern": "execd_bash_*"})
    check(st == 200 and j == [], f"each run's script file is removed after it [{st} {j}]")


def t_metrics():
    """GET /metrics and GET /metrics/watch (controller/metric.go, model/metric.go)."""
    st, _, j = req("GET", "/metrics")
    keys = ["cpu_count", "cpu_used_pct", "mem_total_mib", "mem_used_mib", "timestamp"]
    now = time.time() * 1000
    check(st == 200 and isinstance(j, dict) and sorted(j) == sorted(keys) and j["cpu_count"] >= 1
          and 0 <= j["cpu_used_pct"] <= 100 and j["mem_total_mib"] > j["mem_used_mib"] > 0
          and isinstance(j["timestamp"], int) and abs(j["timestamp"] - now) < 60000,
          f"GET /metrics → Metrics [{st} {j}]")
    c = http.client.HTTPConnection("127.0.0.1", EXECD_PORT, timeout=30)
    c.request("GET", "/metrics/watch", headers={"X-EXECD-ACCESS-TOKEN": TOKEN} if TOKEN else {})
    r = c.getresponse()
    lines = [json.loads(r.readline()) for _ in range(2)]
    c.close()
    check(r.status == 200 and r.getheader("Content-Type", "").startswith("text/event-stream")
          and all(sorted(x) == sorted(keys) for x in lines) and lines[1]["timestamp"] > lines[0]["timestamp"],
          f"GET /metrics/watch → a Metrics JSON line each second [{r.status} {lines}]")
    st, _, body = req("POST", "/metrics", body={})
    check(st == 404 and body == b"404 page not found", f"POST /metrics → gin's 404 [{st} {body!r}]")


def t_token():
    global TOKEN
    c = http.client.HTTPConnection("127.0.0.1", ENVD_PORT, timeout=10)
    c.request("POST", "/init", body=json.dumps({"accessToken": "tok-xyz"}),
              headers={"Content-Type": "application/json"})
    check(c.getresponse().status == 204, "envd /init sets an access token")
    c.close()
    want = {"error": "Unauthorized: invalid or missing header X-EXECD-ACCESS-TOKEN"}
    for path in ["/ping", "/command/status/x", "/files/info", "/nope"]:
        st, _, j = req("GET", path, token=False)
        check(st == 401 and j == want, f"{path} without the token → 401 (router.go) [{st} {j}]")
    st, _, j = req("GET", "/ping", headers={"X-EXECD-ACCESS-TOKEN": "wrong"}, token=False)
    check(st == 401, f"wrong token → 401 [{st}]")
    TOKEN = "tok-xyz"
    st, _, _ = req("GET", "/ping")
    check(st == 200, "the right token → 200")
    s, evs = run({"command": "echo authed"})
    check(texts(evs, "stdout") == ["authed"], "a command with the token runs")


# ---- mutants (platform/envd/mutants.h) on execd's routes ----------------------------------------
# Each probe runs against the execd at EXECD_PORT and says "clean" (the truth), "mutated" (exactly
# the documented lie) or what else it saw; t_mutants runs it on the main envd (no
# ABX_ENVD_MUTANTS: clean) and on an envd started with that one mutant (mutated).
MUTANTS = ["binary-read-mangled", "large-upload-dropped", "exit-code-zero", "stderr-as-stdout",
           "stream-no-end", "command-tail-1s"]


def upload(files):
    """POST /files/upload of [(path, bytes)], each a metadata part then its file part."""
    boundary = "MuTbNd"
    parts = []
    for path, data in files:
        parts.append(f"--{boundary}\r\nContent-Disposition: form-data; name=\"metadata\"; filename=\"metadata\"\r\n"
                     f"Content-Type: application/json\r\n\r\n".encode() + json.dumps({"path": path}).encode() + b"\r\n")
        parts.append(f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{path}\"\r\n"
                     f"Content-Type: application/octet-stream\r\n\r\n".encode() + data + b"\r\n")
    body = b"".join(parts) + f"--{boundary}--\r\n".encode()
    return req("POST", "/files/upload", body=body,
               headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})


def probe_binary_read_mangled():
    """CubeSandbox#1570 on GET /files/download: invalid UTF-8 as U+FFFD, Range on the result."""
    data = bytes(range(256)) * 100 + "é€😀".encode() * 1000 + b"\xf0\x9f"
    mangled = data.decode("utf-8", "replace").encode("utf-8")
    st, _, j = upload([("/tmp/mut/bin.dat", data)])
    if st != 200:
        return f"upload {st} {j}"
    whole = req("GET", "/files/download", query={"path": "/tmp/mut/bin.dat"}, raw=True)
    part = req("GET", "/files/download", query={"path": "/tmp/mut/bin.dat"},
               headers={"Range": "bytes=120-139"}, raw=True)
    got = [(whole[0], whole[2]), (part[0], part[2])]
    if got == [(200, data), (206, data[120:140])]:
        return "clean"
    if got == [(200, mangled), (206, mangled[120:140])]:
        return "mutated"
    return f"other: {[(g[0], len(g[1])) for g in got]}"


def probe_large_upload_dropped():
    """OpenSandbox#1016 on POST /files/upload: a file over 18 KiB answers 200, is not there."""
    big, edge = os.urandom(18433), os.urandom(18432)
    st, _, body = upload([("/tmp/mut/big.bin", big), ("/tmp/mut/edge.bin", edge)])
    if (st, body) != (200, b""):
        return f"upload {st} {body}"
    got = [req("GET", "/files/download", query={"path": p}, raw=True)[0::2]
           for p in ("/tmp/mut/big.bin", "/tmp/mut/edge.bin")]
    if got == [(200, big), (200, edge)]:
        return "clean"
    if got[0][0] == 404 and got[1] == (200, edge):
        return "mutated"
    return f"other: {[(g[0], len(g[1])) for g in got]}"


def probe_exit_code_zero():
    """exit 3 reported as a success: execution_complete, status exit_code 0."""
    s, evs = run({"command": "echo out; exit 3"})
    kinds = [e["type"] for e in evs if e["type"] != "ping"]
    st, _, j = req("GET", f"/command/status/{evs[0]['text']}") if evs else (0, None, None)
    if kinds[-1:] == ["error"] and evs[-1]["error"]["evalue"] == "3" and j.get("exit_code") == 3:
        return "clean"
    if kinds == ["init", "stdout", "execution_complete"] and j.get("exit_code") == 0 and not j.get("error"):
        return "mutated"
    return f"other: {evs} {j}"


def probe_stderr_as_stdout():
    s, evs = run({"command": "echo out; echo err >&2"})
    out, err = texts(evs, "stdout"), texts(evs, "stderr")
    if (out, err) == (["out"], ["err"]):
        return "clean"
    if err == [] and sorted(out) == ["err", "out"]:
        return "mutated"
    return f"other: {out} {err}"


def probe_stream_no_end():
    """OpenSandbox#1277: no final event, the stream stays open with its pings once the command
    has ended (its status says so)."""
    s = Events({"command": "echo x"})
    evs, cid, ended = [], None, False
    try:
        while True:
            e = s.next()
            if e is None:
                break
            evs.append(e)
            cid = cid or e.get("text")
            if e["type"] in ("execution_complete", "error"):
                continue
            if e["type"] == "ping" and ended:
                break  # a ping after the command ended, and no final event
            st, _, j = req("GET", f"/command/status/{cid}")
            ended = st == 200 and j.get("running") is False and j.get("exit_code") == 0
    finally:
        s.close()
    kinds = [e["type"] for e in evs]
    if kinds == ["init", "stdout", "execution_complete"]:
        return "clean"
    if ended and kinds[:2] == ["init", "stdout"] and kinds[-1] == "ping" and set(kinds[2:]) == {"ping"}:
        return "mutated"
    return f"other: {kinds}"


def final_gap():
    """Seconds from a command's last act (its wall clock) to its final event's arrival."""
    s = Events({"command": "date +%s.%N"})
    out, t_fin = None, None
    while True:
        e = s.next()
        if e is None:
            break
        if e["type"] == "stdout":
            out = e["text"]
        if e["type"] in ("execution_complete", "error"):
            t_fin = time.time()
    s.close()
    return t_fin - float(out) if t_fin is not None and out else None


def probe_command_tail_1s():
    """OpenSandbox#1661: the end event 1 s after the process ended (abxtest.tail_verdict)."""
    return abxtest.tail_verdict(final_gap)


PROBES = {"binary-read-mangled": probe_binary_read_mangled,
          "large-upload-dropped": probe_large_upload_dropped,
          "exit-code-zero": probe_exit_code_zero, "stderr-as-stdout": probe_stderr_as_stdout,
          "stream-no-end": probe_stream_no_end, "command-tail-1s": probe_command_tail_1s}


def t_mutants():
    global ENVD_PORT, EXECD_PORT, TOKEN
    main = (ENVD_PORT, EXECD_PORT, TOKEN)
    for name in MUTANTS:
        got = PROBES[name]()
        check(got == "clean", f"{name}: execd without ABX_ENVD_MUTANTS tells the truth ({got})")
        ports = (free_port(), free_port())
        proc, log = start_envd(BINARY, TMP, *ports, {"ABX_ENVD_MUTANTS": name}, f"{TMP}/mut-{name}.log")
        try:
            ENVD_PORT, EXECD_PORT, TOKEN = ports[0], ports[1], None
            up = wait_up(proc)
            check(up, f"{name}: envd with ABX_ENVD_MUTANTS={name} starts")
            if up:
                got = PROBES[name]()
                check(got == "mutated", f"{name}: ABX_ENVD_MUTANTS={name} makes execd lie ({got})")
            stop_envd(proc, f"{name}: envd with the mutant")
        finally:
            ENVD_PORT, EXECD_PORT, TOKEN = main
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()


def find_envd(root):
    """Host pid of the envd process below bwrap (pid `root`): bwrap itself does not pass a
    SIGTERM on."""
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


BWRAP_PID = None
BINARY = None
TMP = None


def start_envd(binary, tmp, envd_port, execd_port, env, logpath):
    """envd of `binary` with execd in a bwrap sandbox on 127.0.0.1 (envd_port, execd_port), the
    environment variables env besides HOME and PATH, its output in logpath. -> (Popen, log)."""
    envs = ["--setenv", "HOME", "/root", "--setenv", "PATH", "/usr/bin:/bin"]
    for k, v in (env or {}).items():
        envs += ["--setenv", k, v]
    cmd = ["bwrap", "--unshare-pid", "--unshare-uts", "--unshare-ipc", "--die-with-parent",
           "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
           "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin",
           "--ro-bind", "/etc", "/etc", "--ro-bind", f"{tmp}/passwd", "/etc/passwd",
           "--ro-bind", f"{tmp}/group", "/etc/group", "--perms", "0700", "--dir", "/root",
           "--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev", "--chdir", "/",
           "--ro-bind", binary, "/opt/abx/abxlua", "--clearenv"] + envs + [
           "/opt/abx/abxlua", "envd", "--port", str(envd_port), "--host", "127.0.0.1",
           "--execd-port", str(execd_port)]
    log = open(logpath, "w")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), log


def wait_up(proc):
    """True once execd at EXECD_PORT answers GET /ping 200; False when proc exited first."""
    while proc.poll() is None:
        try:
            if req("GET", "/ping")[0] == 200:
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
    global ENVD_PORT, EXECD_PORT, BWRAP_PID, BINARY, TMP
    binary = BINARY = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/abxlua")
    if not shutil.which("bwrap"):
        print("SKIP: bwrap not installed")
        return 77
    tmp = TMP = tempfile.mkdtemp(prefix="execd-test-")
    os.chmod(tmp, 0o755)
    with open(f"{tmp}/passwd", "w") as f:
        f.write("root:x:0:0:root:/root:/bin/bash\nuser:x:1000:1000::/home/user:/bin/bash\n")
    with open(f"{tmp}/group", "w") as f:
        f.write("root:x:0:\nuser:x:1000:\n")
    ENVD_PORT, EXECD_PORT = free_port(), free_port()
    proc, log = start_envd(binary, tmp, ENVD_PORT, EXECD_PORT, None, f"{tmp}/envd.log")
    BWRAP_PID = proc.pid
    try:
        deadline = time.time() + 10
        up = False
        while time.time() < deadline and proc.poll() is None:
            try:
                up = req("GET", "/ping")[0] == 200
                if up:
                    break
            except OSError:
                time.sleep(0.1)
        if not up:
            print("envd/execd did not come up:", open(f"{tmp}/envd.log").read())
            return 1
        # a bad --execd-port is refused before anything listens
        bad = subprocess.run([binary, "envd", "--port", "1", "--execd-port", "x"], capture_output=True, text=True)
        check(bad.returncode == 4 and "--execd-port" in bad.stderr, f"--execd-port x refused [{bad.returncode}]")
        tests = [t_ping_and_unknown, t_command_foreground, t_command_error_timeout, t_command_cwd_envs_user,
                 t_background_status_logs_kill, t_big_output, t_long_line, t_files, t_directories, t_search, t_replace, t_sessions,
                 t_metrics, t_token, t_mutants]
        only = os.environ.get("EXECD_TESTS")
        if only:
            tests = [t for t in tests if t.__name__ in only.split(",")]
        for t in tests:
            print(t.__name__, flush=True)
            try:
                t()
            except Exception as ex:  # an exception fails that group
                import traceback
                traceback.print_exc()
                FAILS.append(f"{t.__name__}: {ex!r}")
        envd_pid = find_envd(proc.pid)
        check(envd_pid is not None, "envd process found under bwrap")
        if envd_pid:
            os.kill(envd_pid, 15)
        try:
            rc = proc.wait(timeout=15)
            check(rc == 0, f"envd (with execd) exits 0 on SIGTERM (rc {rc})")
        except subprocess.TimeoutExpired:
            check(False, "envd stops within 15 s of SIGTERM")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
        if FAILS:
            print("--- envd log ---\n" + open(f"{tmp}/envd.log").read()[-4000:])
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(FAILS)} failure(s)")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
