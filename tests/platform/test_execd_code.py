#!/usr/bin/env python3
"""execd's /code routes on `abxlua serve --flavor opensandbox` (issue 25 item 2): OpenSandbox's
code interpreting through the execd port (44772) of a sandbox made from OpenSandbox's
code-interpreter image name, served by envd (platform/envd/execd_code.c) on the code-interpreter
server's Jupyter (platform/code_interpreter/execd_code.py).

Usage: test_execd_code.py [path/to/abxlua]

Checked over real HTTP through serve's ingress (URI mode /sandboxes/<id>/port/44772/...), with the
secureAccess token: image "<registry>/opensandbox/code-interpreter:v1.1.0" and its documented
entrypoint run (near misses of that name are no template); the token is required; contexts
create/get/list (all, by language)/delete one/delete by language;
POST /code's SSE events (init with the context id, stdout, execution_count, result with "text",
execution_complete with execution_time; every event a JSON object then a blank line, no "data:")
and the state a context keeps; an error ends with status "error" then error {ename, evalue,
traceback}; the language's default context; a command (no language) run by execd; interrupt (a
sleeping execution ends with KeyboardInterrupt) and "session is busy" meanwhile; deleting a context
that runs code; the 400/404/500
answers for bad input; a sandbox without a code interpreter answers 500 RUNTIME_ERROR.
Sources: OpenSandbox @3bb6fad specs/execd-api.yaml, components/execd/pkg/web/controller/
codeinterpreting.go, sse.go. Exit 1 when a check failed, 77 when skipped.
"""
import http.client
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_platform as tp  # noqa: E402

failures = []
# OpenSandbox's code-interpreter image behind its registry host (examples/code-interpreter/main.py)
IMAGE = "sandbox-registry.cn-zhangjiakou.cr.aliyuncs.com/opensandbox/code-interpreter:v1.1.0"
ENTRY = ["/opt/code-interpreter/code-interpreter.sh"]


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


class Execd:
    def __init__(self, s, sid, token):
        self.s, self.sid, self.token = s, sid, token

    def req(self, method, path, body=None, token=True, timeout=120):
        """(status, content-type, body bytes)."""
        c = http.client.HTTPConnection("127.0.0.1", self.s.port, timeout=timeout)
        h = {"Content-Type": "application/json"}
        if token and self.token:
            h["X-EXECD-ACCESS-TOKEN"] = self.token
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        c.request(method, "/sandboxes/%s/port/44772%s" % (self.sid, path), body, h)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, r.getheader("Content-Type") or "", data

    def json(self, method, path, body=None, **kw):
        st, ct, data = self.req(method, path, body, **kw)
        try:
            return st, json.loads(data) if data else None
        except ValueError:
            return st, data

    def run(self, code, language="python", cid=None, raw=None):
        """POST /code: (status, content-type, [events]); events split on blank lines."""
        body = raw if raw is not None else {"code": code, "context": dict(
            {"language": language}, **({"id": cid} if cid else {}))}
        st, ct, data = self.req("POST", "/code", body)
        if st != 200:  # one pseudo-event, so every check on the events fails naming the answer
            return st, ct, [{"type": "HTTP %d" % st, "text": data.decode(errors="replace")[:300]}]
        text = data.decode()
        chunks = [c for c in text.split("\n\n") if c.strip()]
        evs = []
        for c in chunks:
            try:
                evs.append(json.loads(c))
            except ValueError:
                evs.append({"type": "UNPARSABLE", "text": c})
        return st, ct, evs


def run_started(x, code, cid, started, out):
    """POST /code in a thread: sets `started` once the init event came (the execution holds the
    context), then out["evs"] = every event."""
    c = http.client.HTTPConnection("127.0.0.1", x.s.port, timeout=120)
    c.request("POST", "/sandboxes/%s/port/44772/code" % x.sid, json.dumps(
        {"code": code, "context": {"id": cid, "language": "python"}}),
        {"Content-Type": "application/json", "X-EXECD-ACCESS-TOKEN": x.token or ""})
    r = c.getresponse()
    evs = []
    for line in iter(r.readline, b""):
        if line.strip():
            evs.append(json.loads(line))
            if evs[-1]["type"] == "init":
                started.set()
    c.close()
    started.set()
    out["evs"] = evs


def types(evs):
    return [e["type"] for e in evs if e.get("type") != "ping"]


def result_text(evs):
    return [e["results"].get("text") for e in evs if e["type"] == "result"]


def create(o, image, entry, secure=True):
    st, _, j = o.json("POST", "/v1/sandboxes", {
        "image": {"uri": image}, "entrypoint": entry, "timeout": 600, "secureAccess": secure,
        "resourceLimits": {"cpu": "1", "memory": "1Gi"}}, key=False,
        headers={"OPEN-SANDBOX-API-KEY": o.key})
    check(st == 202, "create %s -> 202 (%d %r)" % (image, st, j))
    sid = j["id"]
    deadline = time.time() + 240
    state = None
    while time.time() < deadline:
        st, _, j = o.json("GET", "/v1/sandboxes/" + sid, key=False,
                          headers={"OPEN-SANDBOX-API-KEY": o.key})
        state = j["status"]["state"] if st == 200 else st
        if state not in ("Pending",):
            break
        time.sleep(0.5)
    check(state == "Running", "sandbox of %s Running (%r %r)" % (image, state, j.get("status")))
    st, _, e = o.json("GET", "/v1/sandboxes/%s/endpoints/44772" % sid, key=False,
                      headers={"OPEN-SANDBOX-API-KEY": o.key})
    return Execd(o, sid, (e.get("headers") or {}).get("X-EXECD-ACCESS-TOKEN"))


def t_contexts(x):
    st, _, _ = x.req("GET", "/code/contexts", token=False)
    check(st == 401, "no X-EXECD-ACCESS-TOKEN -> 401 (%d)" % st)
    st, c = x.json("POST", "/code/context", {"language": "python"})
    check(st == 200 and c.get("language") == "python" and c.get("id") and set(c) == {"id", "language"},
          "POST /code/context -> {id, language} (%d %r)" % (st, c))
    cid = c.get("id")
    st, g = x.json("GET", "/code/contexts/" + cid)
    check(st == 200 and g == {"id": cid, "language": "python"}, "GET /code/contexts/{id} (%d %r)" % (st, g))
    st, all_ = x.json("GET", "/code/contexts")
    st2, py = x.json("GET", "/code/contexts?language=python")
    check(st == 200 and st2 == 200 and cid in [i["id"] for i in all_] and cid in [i["id"] for i in py],
          "the context is listed, all and by language (%r %r)" % (all_, py))
    st, none = x.json("GET", "/code/contexts?language=java")
    check(st == 200 and none == [], "no java contexts -> [] (%d %r)" % (st, none))
    st, c2 = x.json("POST", "/code/context", {"language": "python", "cwd": "/tmp/ctx-dir"})
    check(st == 200 and c2.get("cwd") == "/tmp/ctx-dir", "a context with cwd echoes it (%d %r)" % (st, c2))
    st, _, evs = x.run("import os\nos.getcwd()", cid=c2.get("id"))
    check(result_text(evs) == ["'/tmp/ctx-dir'"], "its kernel runs in cwd, made on create (%r)" % (evs,))
    return cid, c2.get("id")


def t_run(x, cid):
    st, ct, evs = x.run("print('hi')\n1 + 1", cid=cid)
    check(st == 200 and ct.startswith("text/event-stream"), "POST /code -> 200 text/event-stream (%d %s)" % (st, ct))
    check(types(evs) == ["init", "stdout", "execution_count", "result", "execution_complete"],
          "events init, stdout, execution_count, result, execution_complete (%r)" % (types(evs),))
    byt = {e["type"]: e for e in evs}
    check(byt.get("init", {}).get("text") == cid, "init names the context (%r)" % (byt.get("init"),))
    check(byt.get("stdout", {}).get("text") == "hi\n", "stdout 'hi\\n' (%r)" % (byt.get("stdout"),))
    check(byt.get("result", {}).get("results") == {"text": "2"}, "result {text: '2'} (%r)" % (byt.get("result"),))
    check(isinstance(byt.get("execution_count", {}).get("execution_count"), int), "execution_count is a number")
    check(isinstance(byt.get("execution_complete", {}).get("execution_time"), int), "execution_time in ms")
    check(all(isinstance(e.get("timestamp"), int) and e["timestamp"] > 1.6e12 for e in evs),
          "every event has a Unix-ms timestamp")
    check(all(e["type"] != "UNPARSABLE" for e in evs), "every event is its JSON object, no data: prefix")
    x.run("x = 20", cid=cid)
    check(result_text(x.run("x * 2 + 2", cid=cid)[2]) == ["42"], "the context keeps its state")
    st, _, evs = x.run("print('before')\n1 / 0", cid=cid)
    err = evs[-1] if evs else {}
    check(types(evs) == ["init", "stdout", "status", "error"] and evs[-2].get("text") == "error",
          "an error: init, stdout, status error, error last (%r)" % (types(evs),))
    e = err.get("error") or {}
    check(e.get("ename") == "ZeroDivisionError" and e.get("evalue") == "division by zero"
          and isinstance(e.get("traceback"), list) and e["traceback"], "error {ename, evalue, traceback[]} (%r)" % (e,))
    # the context is free once the last event is out: code run right after an error or a result
    # never finds it busy (it did under load: the answer ended before the kernel went idle)
    answers = []
    for code in ("1 / 0", "1") * 10:
        st, _, evs = x.run(code, cid=cid)
        answers.append(types(evs)[-1] if st == 200 else "%d %r" % (st, evs))
    check(answers == ["error", "execution_complete"] * 10,
          "20 executions back to back, each right after the last event (%r)" % (answers,))
    st, _, a = x.run("only_default = 3")
    st, _, b = x.run("only_default")
    ia = [v["text"] for v in a if v["type"] == "init"]
    check(result_text(b) == ["3"] and ia and ia == [v["text"] for v in b if v["type"] == "init"]
          and ia[0] != cid, "no context id: the language's default context, kept (%r %r)" % (a, b))
    st, _, evs = x.run("echo cmd-$((6*7))", language="")
    check(st == 200 and "cmd-42" in "".join(v.get("text", "") for v in evs if v["type"] == "stdout")
          and types(evs)[-1] == "execution_complete", "no language: execd runs a command (%r)" % (evs,))


def t_interrupt(x, cid):
    out, started = {}, threading.Event()
    th = threading.Thread(target=run_started, args=(
        x, "import time\nprint('sleeping', flush=True)\ntime.sleep(60)", cid, started, out))
    t0 = time.time()
    th.start()
    started.wait(60)
    busy = x.json("POST", "/code", {"code": "1", "context": {"id": cid, "language": "python"}})
    check(busy[0] == 500 and busy[1].get("code") == "RUNTIME_ERROR" and "session is busy" in busy[1].get("message", ""),
          "a second execution meanwhile -> 500 session is busy (%r)" % (busy,))
    st, _, body = x.req("DELETE", "/code?id=" + cid)
    check(st == 200 and body == b"", "DELETE /code?id= -> 200 empty (%d %r)" % (st, body))
    th.join(60)
    evs = out.get("evs") or [{}]
    check(time.time() - t0 < 50 and evs[-1].get("type") == "error"
          and (evs[-1].get("error") or {}).get("ename") == "KeyboardInterrupt",
          "the execution ends with KeyboardInterrupt (%r)" % (evs[-2:],))


def t_errors(x):
    cases = [
        ("POST", "/code", {}, 400, "INVALID_REQUEST_BODY", "no code"),
        ("POST", "/code", "not json", 400, "INVALID_REQUEST_BODY", "a body that is not JSON"),
        ("POST", "/code", {"code": 1}, 400, "INVALID_REQUEST_BODY", "code not a string"),
        ("POST", "/code", {"code": "1", "context": {"id": "nope", "language": "python"}}, 500,
         "RUNTIME_ERROR", "an unknown context"),
        ("POST", "/code", {"code": "1", "context": {"language": "cobol"}}, 500, "RUNTIME_ERROR",
         "an unknown language"),
        ("POST", "/code/context", {"language": "cobol"}, 500, "RUNTIME_ERROR", "create: no kernel"),
        ("POST", "/code/context", [], 400, "INVALID_REQUEST_BODY", "create: not an object"),
        ("GET", "/code/contexts/nope", None, 404, "CONTEXT_NOT_FOUND", "get: unknown"),
        ("DELETE", "/code/contexts/nope", None, 404, "CONTEXT_NOT_FOUND", "delete: unknown"),
        ("GET", "/code/contexts/a%20b%3F", None, 404, "CONTEXT_NOT_FOUND", "get: an id to escape"),
        ("DELETE", "/code", None, 400, "MISSING_QUERY", "interrupt without id"),
        ("DELETE", "/code?id=nope", None, 500, "RUNTIME_ERROR", "interrupt: unknown id"),
        ("DELETE", "/code/contexts", None, 400, "MISSING_QUERY", "delete by language without it"),
        ("GET", "/code/contexts?language=command", None, 500, "RUNTIME_ERROR", "list: command"),
    ]
    for method, path, body, want, code, what in cases:
        st, j = x.json(method, path, body)
        check(st == want and isinstance(j, dict) and j.get("code") == code and j.get("message"),
              "%s %s (%s) -> %d %s (%d %r)" % (method, path, what, want, code, st, j))
    # an empty answer says so (Content-Length: 0, as gin's c.Status): OpenSandbox's SDK
    # (openapi-fetch) parses any other 200 body as JSON, "Unexpected end of JSON input"
    st, c = x.json("POST", "/code/context", {"language": "python"})
    conn = http.client.HTTPConnection("127.0.0.1", x.s.port, timeout=120)
    conn.request("DELETE", "/sandboxes/%s/port/44772/code/contexts/%s" % (x.sid, (c or {}).get("id")),
                 headers={"X-EXECD-ACCESS-TOKEN": x.token or ""})
    r = conn.getresponse()
    body, length = r.read(), r.getheader("Content-Length")
    conn.close()
    check(r.status == 200 and body == b"" and length == "0",
          "DELETE /code/contexts/{id} -> 200, Content-Length: 0 (%d %r %r)" % (r.status, length, body))
    st, ct, data = x.req("GET", "/code/nothing")
    check(st == 404 and data == b"404 page not found", "an unknown /code path -> gin's 404 (%d %r)" % (st, data))


def t_delete(x, cid, cid2):
    out, started = {}, threading.Event()
    th = threading.Thread(target=run_started, args=(x, "import time\ntime.sleep(60)", cid2, started, out))
    t0 = time.time()
    th.start()
    started.wait(60)
    st, _, _ = x.req("DELETE", "/code/contexts/" + cid2)
    th.join(60)
    evs = out.get("evs") or [{}]
    check(st == 200 and time.time() - t0 < 50 and evs[-1].get("type") == "error",
          "deleting a context that runs code interrupts it (%d %r)" % (st, evs[-1:]))
    st, _, body = x.req("DELETE", "/code/contexts/" + cid)
    check(st == 200 and body == b"", "DELETE /code/contexts/{id} -> 200 (%d)" % st)
    st, _ = x.json("GET", "/code/contexts/" + cid)
    check(st == 404, "a deleted context is gone (%d)" % st)
    st, _, _ = x.req("DELETE", "/code/contexts?language=python")
    st2, py = x.json("GET", "/code/contexts?language=python")
    check(st == 200 and py == [], "DELETE /code/contexts?language=python removes them all (%d %r)" % (st, py))
    check(result_text(x.run("5 * 5")[2]) == ["25"], "a default context is made again afterwards")


def main():
    s = tp.start_for_checks("freezer")
    if isinstance(s, int):
        return s
    s.stop()
    s = tp.Server(args=("--flavor", "opensandbox"))
    t0 = time.time()
    try:
        for uri in ("opensandbox/code-interpreter-x", "other/opensandbox/code-interpreter",
                    "opensandbox/code-interpreter:"):
            st, _, j = s.json("POST", "/v1/sandboxes", {
                "image": {"uri": uri}, "entrypoint": ENTRY, "timeout": 600,
                "resourceLimits": {"cpu": "1", "memory": "1Gi"}}, key=False,
                headers={"OPEN-SANDBOX-API-KEY": s.key})
            check(st == 500 and j.get("code") == "DOCKER::SANDBOX_IMAGE_PULL_FAILED",
                  "image %s is no template (%d %r)" % (uri, st, j))
        x = create(s, IMAGE, ENTRY)
        cid, cid2 = t_contexts(x)
        t_run(x, cid)
        t_interrupt(x, cid)
        t_errors(x)
        t_delete(x, cid, cid2)
        b = create(s, "base", ["tail", "-f", "/dev/null"], secure=False)
        st, j = b.json("POST", "/code/context", {"language": "python"})
        check(st == 500 and j.get("code") == "RUNTIME_ERROR" and "runtime server not configured" in j.get("message", ""),
              "no code interpreter in the sandbox -> 500 RUNTIME_ERROR (%d %r)" % (st, j))
    except Exception as e:  # noqa: BLE001
        check(False, "%s: %s" % (type(e).__name__, e))
    finally:
        code, _, err = s.stop()
        check(code == 0, "serve exits 0 (%r %s)" % (code, err.decode(errors="replace")[-300:]))
    print("--- execd /code %.1fs" % (time.time() - t0))
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
