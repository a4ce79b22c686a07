"""OpenSandbox execd's code-interpreting routes (/code...) on the code interpreter's own Jupyter.

Written beside server.py into the code-interpreter-v1 layer (/opt/abx/code-interpreter/,
platform/template/templates.c embeds both) and called by server.py's Handler for any path under
/code (server.py `route`: one hook line). Clients reach it through execd's port: envd's execd
listener (platform/envd/execd_code.c) forwards /code... to this server on 127.0.0.1:49999 after its
access-token check, and runs the command languages ("" / "command" / "background-command") itself.
So the contexts here are the very kernels of E2B's /contexts (server.py CONTEXTS): one Jupyter.

Wire (specs/execd-api.yaml, components/execd/pkg/web/controller/codeinterpreting.go, sse.go,
model/codeinterpreting.go, pkg/runtime/context.go, jupyter.go, pkg/jupyter/execute/execute.go of
OpenSandbox @3bb6fad):
  POST   /code/context          {language, cwd?} -> 200 {id, language, cwd?}; cwd is created
                                (MkdirAll) and is the kernel's working directory
  GET    /code/contexts?language=   [{id, language}...]; no language: every context
  DELETE /code/contexts?language=   every context of that language; 200 (empty)
  GET    /code/contexts/{id}    {id, language}; unknown: 404 CONTEXT_NOT_FOUND
  DELETE /code/contexts/{id}    200 (empty); unknown: 404 CONTEXT_NOT_FOUND; code running in it
                                is interrupted first (its stream ends with the error)
  POST   /code                  {code, context: {id?, language}} -> 200 text/event-stream, each
                                event its JSON object then "\n\n" (no "data:"): init (text = the
                                context id), stdout/stderr (text), execution_count + result
                                (results: the MIME map, "text/plain" renamed "text") for the cell's
                                value, a ping {"text":"pong"} every 3 s, and last either
                                execution_complete (execution_time ms) or, when the code raised,
                                status {"text":"error"} then error {ename, evalue, traceback[]};
                                every event has timestamp (Unix ms). No context id: the language's
                                default context (made on first use).
  DELETE /code?id=              interrupts the context's kernel (SIGINT); 200 (empty)
Errors are execd's ErrorResponse {"code","message"}: 400 INVALID_REQUEST_BODY (a body that is not
JSON of the request's shape; no code), 400 MISSING_QUERY, 404 CONTEXT_NOT_FOUND, 500
RUNTIME_ERROR (no kernel for the language, an unknown context on POST /code, a context already
running code: "session is busy", an unknown id on interrupt: "no such session"); any other path or
method under /code is gin's 404 "404 page not found" (text/plain). Unknown body fields are ignored,
as Go's decoder does.

Differences from the real execd (docs/PLATFORM.md "execd /code"): context ids are this server's
(UUIDs with dashes, shared with E2B's /contexts, which lists them too); a language is served only
when its kernel is installed (Debian's: python; the rest 500 naming the installed kernels); sql is
not served (500); a client that leaves does not stop its execution (as execd), which then runs to
its end with the context busy. Like the real execd, display_data (a matplotlib figure, display())
is not sent: execd's stream handlers take execute_result only.
"""
import json
import os
import socket
import time
from urllib.parse import parse_qs, unquote, urlsplit

PING_S = 3.0  # sse.go ping: wait.Until(..., 3*time.Second, ...)
DELETE_WAIT_S = 10.0  # removing a context that runs code: interrupt it for at most this long
DEFAULT_CWD = "/home/user"  # the Jupyter root of this template: a context created without cwd
# runtime/language.go: the languages execd runs through Jupyter; the command ones envd runs
JUPYTER = ("bash", "python", "java", "javascript", "typescript", "go")
COMMANDS = ("", "command", "background-command")
NO_CONTEXTS = ("command", "background-command", "sql")  # context.go ListContext refuses them
BAD_BODY = "error parsing request, MAYBE invalid body format. "


class ExecdError(Exception):
    def __init__(self, status, code, message):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def owns(path):
    """Whether a request path is one of execd's /code routes (this module answers it)."""
    p = path.split("?", 1)[0]
    return p == "/code" or p.startswith("/code/")


def now_ms():
    return int(time.time() * 1000)


def send(h, status, body, ctype):
    h.send_response(status)
    if ctype:
        h.send_header("Content-Type", ctype)
    h.send_header("Content-Length", str(len(body)))
    h.send_header("Connection", "close")
    h.end_headers()
    h.wfile.write(body)
    h.close_connection = True


def send_json(h, status, obj):
    send(h, status, json.dumps(obj).encode(), "application/json; charset=utf-8")


def read_body(h, what):
    """The request's JSON object (model type `what`), or ExecdError 400 as Go's decoder fails."""
    n = int(h.headers.get("Content-Length") or 0)
    raw = h.rfile.read(n) if n else b""
    if not raw.strip():
        raise ExecdError(400, "INVALID_REQUEST_BODY", BAD_BODY + "EOF")
    try:
        v = json.loads(raw)
    except ValueError as e:
        raise ExecdError(400, "INVALID_REQUEST_BODY", BAD_BODY + "invalid JSON: %s" % e)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise ExecdError(400, "INVALID_REQUEST_BODY", BAD_BODY + "json: cannot unmarshal %s into "
                         "Go value of type model.%s" % (type(v).__name__, what))
    return v


def string_field(obj, name, what):
    v = obj.get(name)
    if v is None:
        return ""
    if not isinstance(v, str):
        raise ExecdError(400, "INVALID_REQUEST_BODY", BAD_BODY + "json: cannot unmarshal %s into "
                         "Go struct field %s.%s of type string" % (type(v).__name__, what, name))
    return v


def query_value(h, name):
    vals = parse_qs(urlsplit(h.path).query, keep_blank_values=True).get(name)
    return vals[0] if vals else ""


def context_json(ctx):
    return {"id": ctx.id, "language": ctx.language}


def find(contexts, cid, http_error):
    """The context `cid`, or None."""
    try:
        return contexts.get(cid)
    except http_error:
        return None


def create_context(h, contexts, http_error):
    req = read_body(h, "CodeContextRequest")
    language = string_field(req, "language", "CodeContextRequest")
    cwd = string_field(req, "cwd", "CodeContextRequest")
    where = "error creating code context. "
    if language not in JUPYTER:
        raise ExecdError(500, "RUNTIME_ERROR", where + "no kernel specs found for language '%s' "
                         "(execd's Jupyter languages: %s)" % (language, ", ".join(JUPYTER)))
    if cwd:
        try:
            os.makedirs(cwd, exist_ok=True)  # context.go newIpynbPath: MkdirAll(cwd)
        except OSError as e:
            raise ExecdError(500, "RUNTIME_ERROR", where + "mkdir %s: %s" % (cwd, e.strerror))
    try:
        ctx = contexts.create(language, cwd or DEFAULT_CWD)
    except http_error as e:
        raise ExecdError(500, "RUNTIME_ERROR", where + e.text)
    out = {"id": ctx.id, "language": language}
    if cwd:
        out["cwd"] = cwd
    send_json(h, 200, out)


def matching(contexts, language):
    return [c for c in list(contexts.by_id.values()) if not language or c.language == language]


def list_contexts(h, contexts):
    language = query_value(h, "language")
    if language in NO_CONTEXTS:
        raise ExecdError(500, "RUNTIME_ERROR", "unsupported language context operation: %s" % language)
    send_json(h, 200, [context_json(c) for c in matching(contexts, language)])


def delete_language(h, contexts, http_error):
    language = query_value(h, "language")
    if not language:
        raise ExecdError(400, "MISSING_QUERY", "missing query parameter 'language'")
    if language in NO_CONTEXTS:
        raise ExecdError(500, "RUNTIME_ERROR", "error deleting code context %s. unsupported "
                         "language context operation: %s" % (language, language))
    for c in matching(contexts, language):
        try:
            contexts.remove(c.id)
        except http_error:
            pass  # removed meanwhile
    send(h, 200, b"", None)


def stop_running(ctx):
    """Interrupts code running in ctx until it stops (at most DELETE_WAIT_S), so that removing
    the context need not wait for the code's end."""
    deadline = time.monotonic() + DELETE_WAIT_S
    while ctx.km is not None and time.monotonic() < deadline:
        if ctx.lock.acquire(timeout=0.5):
            ctx.lock.release()
            return
        ctx.km.interrupt_kernel()


def one_context(h, method, cid, contexts, http_error):
    ctx = find(contexts, cid, http_error)
    if ctx is None:
        raise ExecdError(404, "CONTEXT_NOT_FOUND", "context %s not found" % cid)
    if method == "GET":
        return send_json(h, 200, context_json(ctx))
    stop_running(ctx)
    try:
        contexts.remove(cid)
    except http_error:
        raise ExecdError(404, "CONTEXT_NOT_FOUND", "context %s not found" % cid)
    send(h, 200, b"", None)


def interrupt(h, contexts, http_error):
    cid = query_value(h, "id")
    if not cid:
        raise ExecdError(400, "MISSING_QUERY", "missing query parameter 'id'")
    ctx = find(contexts, cid, http_error)
    if ctx is None or ctx.km is None:
        raise ExecdError(500, "RUNTIME_ERROR", "error interruptting code context. no such session")
    ctx.km.interrupt_kernel()
    send(h, 200, b"", None)


def target_context(req, contexts, http_error):
    """The context POST /code runs in (RunCodeRequest.context), or ExecdError."""
    where = "error running codes "
    c = req.get("context")
    if c is not None and not isinstance(c, dict):
        raise ExecdError(400, "INVALID_REQUEST_BODY", BAD_BODY + "json: cannot unmarshal %s into "
                         "Go struct field RunCodeRequest.context of type model.CodeContext"
                         % type(c).__name__)
    c = c or {}
    cid = string_field(c, "id", "CodeContext")
    language = string_field(c, "language", "CodeContext")
    if language in COMMANDS:
        raise ExecdError(500, "RUNTIME_ERROR", where + "commands (context.language '%s') are run "
                         "by envd's execd listener on port 44772, not by the code interpreter"
                         % language)
    if language not in JUPYTER:
        raise ExecdError(500, "RUNTIME_ERROR", where + "unknown language: %s" % language)
    if cid:
        ctx = find(contexts, cid, http_error)
        if ctx is None:
            raise ExecdError(500, "RUNTIME_ERROR", where + "context not found")
        return ctx
    try:
        return contexts.default_for(language)
    except http_error as e:
        raise ExecdError(500, "RUNTIME_ERROR", where + e.text)


class Stream:
    """The SSE answer of POST /code. Writes stop silently once the client left (execd's
    writeSingleEvent drops events after the request's context is done)."""

    def __init__(self, h):
        self.h, self.gone, self.ended, self.started = h, False, False, False
        self.next_ping = time.monotonic() + PING_S
        h.send_response(200)
        for k, v in (("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"),
                     ("X-Accel-Buffering", "no"), ("Connection", "close")):
            h.send_header(k, v)
        h.end_headers()
        h.close_connection = True

    def event(self, kind, **fields):
        if self.gone or self.ended:
            return
        ev = {"type": kind}
        ev.update(fields)
        ev["timestamp"] = now_ms()
        try:
            self.h.wfile.write(json.dumps(ev).encode() + b"\n\n")
            self.h.wfile.flush()
        except OSError:
            self.gone = True

    def tick(self):
        if self.started and time.monotonic() >= self.next_ping:
            self.next_ping += PING_S
            self.event("ping", text="pong")

    def end(self):
        """Ends the answer now (the connection is closed for writing; the caller may go on)."""
        if self.ended:
            return
        self.ended = True
        try:
            self.h.wfile.flush()
            self.h.connection.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def results_of(data):
    """execute_result data -> execd's results map (sse.go OnExecuteResult: text/plain -> text)."""
    return {("text" if k == "text/plain" else k): v for k, v in data.items()}


def run_code(h, contexts, http_error):
    req = read_body(h, "RunCodeRequest")
    code = req.get("code")
    if code is not None and not isinstance(code, str):
        raise ExecdError(400, "INVALID_REQUEST_BODY", BAD_BODY + "json: cannot unmarshal %s into "
                         "Go struct field RunCodeRequest.code of type string" % type(code).__name__)
    if not code:
        raise ExecdError(400, "INVALID_REQUEST_BODY", "invalid request, validation error Key: "
                         "'RunCodeRequest.Code' Error:Field validation for 'Code' failed on the "
                         "'required' tag")
    ctx = target_context(req, contexts, http_error)
    if not ctx.lock.acquire(blocking=False):  # jupyter.go runJupyterCode: kernel.mu.TryLock()
        raise ExecdError(500, "RUNTIME_ERROR", "error running codes session is busy")
    try:
        if ctx.kc is None:
            raise ExecdError(500, "RUNTIME_ERROR", "error running codes context not found")
        stream = Stream(h)
        try:
            last = execute(ctx, code, stream)
        except Exception as e:  # the kernel died or was removed: an error event ends the stream
            last = ("error", {"error": {"ename": "RuntimeError", "evalue": str(e), "traceback": []}})
    finally:
        ctx.lock.release()
    # The last event goes out once the context is free: a client that runs its next code as soon
    # as it has read it must not find the context busy (it did, under load, while the kernel went
    # from the error to idle).
    stream.event(last[0], **last[1])
    stream.end()


def execute(ctx, code, stream):
    """Runs `code` in ctx's kernel (its lock held), turning its messages into events. init is
    sent once the kernel runs the code (execute_input): an interrupt after init then stops it (a
    kernel still idle ignores SIGINT). Returns the last event, (kind, fields), unsent: error or
    execution_complete; nothing follows an error (the handler returns on OnExecuteError)."""
    started = time.monotonic()
    # stop_on_error=False as server.py's executions: the kernel must not abort the next request
    msg_id = ctx.kc.execute(code, allow_stdin=False, stop_on_error=False)
    failed, inited = [], []

    def init():
        if not inited:
            inited.append(True)
            stream.event("init", text=ctx.id)
            stream.started = True  # pings follow init (sse.go starts them in OnExecuteInit)
            stream.next_ping = time.monotonic() + PING_S

    def on_msg(msg):
        kind, c = msg["msg_type"], msg["content"]
        if failed:
            return
        if kind != "status":
            init()
        if kind == "stream" and c.get("text"):
            stream.event("stdout" if c.get("name") == "stdout" else "stderr", text=c["text"])
        elif kind == "execute_result":
            if c.get("execution_count"):
                stream.event("execution_count", execution_count=c["execution_count"])
            if c.get("data"):
                stream.event("result", results=results_of(c["data"]))
        elif kind == "error":
            stream.event("status", text="error")
            failed.append({"error": {"ename": c.get("ename", ""), "evalue": c.get("evalue", ""),
                                     "traceback": list(c.get("traceback", []))}})

    ctx.wait_idle(msg_id, float("inf"), on_msg, stream.tick)
    init()
    if failed:
        return "error", failed[0]
    return "execution_complete", {"execution_time": max(int((time.monotonic() - started) * 1000), 1)}


def handle(h, method, contexts, http_error):
    """Answers one request under /code on server.py's Handler `h`. `contexts` is server.py's
    Contexts (create, get, remove, default_for, by_id), `http_error` its HTTPError (status, text)."""
    path = urlsplit(h.path).path
    try:
        if path == "/code" and method == "POST":
            return run_code(h, contexts, http_error)
        if path == "/code" and method == "DELETE":
            return interrupt(h, contexts, http_error)
        if path == "/code/context" and method == "POST":
            return create_context(h, contexts, http_error)
        if path == "/code/contexts" and method == "GET":
            return list_contexts(h, contexts)
        if path == "/code/contexts" and method == "DELETE":
            return delete_language(h, contexts, http_error)
        rest = path[len("/code/contexts/"):] if path.startswith("/code/contexts/") else ""
        if rest and "/" not in rest and method in ("GET", "DELETE"):
            return one_context(h, method, unquote(rest), contexts, http_error)
        send(h, 404, b"404 page not found", "text/plain")
    except ExecdError as e:
        send_json(h, e.status, {"code": e.code, "message": e.message})
    except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
        h.close_connection = True
    except Exception as e:  # a kernel that died under us: an answer, never a dropped connection
        try:
            send_json(h, 500, {"code": "RUNTIME_ERROR", "message": "error running codes %s" % e})
        except OSError:
            h.close_connection = True
