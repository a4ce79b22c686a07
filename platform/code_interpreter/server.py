"""The code-interpreter server of the local platform's code-interpreter-v1 template.

Written into the template's layer at /opt/abx/code-interpreter/server.py (platform/template/templates.c
embeds this file at build time) and started by the template's start_cmd as root. The server and its
kernels stay root, as E2B's template runs Jupyter and its kernels (template/systemd/jupyter.service,
no User=, @ 7df1757): a context's cwd may be any directory (E2B's own tests use /root), while the
default contexts start in /home/user (E2B's jupyter_server_config.py root_dir and main.py).

Wire protocol (docs/protocol/envd-protocol.md §10, docs/protocol/e2b-v2-and-peers.md §3), on port
49999:
  GET  /health                   200 "OK" (JSON string)
  POST /execute                  {code, context_id?, language?, env_vars?} -> 200, chunked NDJSON:
                                 number_of_executions, stdout/stderr, result, error, keepalive
                                 (after 5 s of silence), and always a last end_of_execution
  POST /contexts                 {language="python", cwd="/home/user"} -> {id, language, cwd}
  GET  /contexts                 [Context...]
  POST /contexts/{id}/restart    200 null
  DELETE /contexts/{id}          200 null
Errors are plain text (400 both context_id and language, a cwd that is not a directory, a bad
Content-Length; 404 "Context <id> not found", or a language without a kernel, naming it; 500 a
kernel that failed to start, or any other failure, naming it); a malformed body is 422
{"detail": [...]} as FastAPI answers it. Every request gets an answer: a failure before the
stream starts is a plain-text 500 (E2B's main.py answers PlainTextResponse(str(e), 500)), one
after it an error line and end_of_execution; the connection is never dropped without one.

Contexts are real Jupyter kernels (Debian's python3-ipykernel through python3-jupyter-client),
one KernelManager each, started in the context's cwd, executions in a context one at a time. A
language's default context starts on its first use (E2B's main.py default_websockets); python's
starts before the port is opened (so the template's ready_cmd, GET /health, succeeds only once
code can run), and javascript's too when its kernel is installed (E2B's lifespan creates both). A
client that drops its /execute connection interrupts the kernel (SIGINT), and the server drains
that execution so the next one starts at once. Only the kernels installed in the sandbox exist
(KERNELS: R is Debian's r-cran-irkernel, javascript and typescript tslab's jslab and tslab from
npm, scripts/ci_kernels.sh); any other language answers 404 naming the missing kernel.
"""
import json
import os
import queue
import select
import socket
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager

import execd_code  # OpenSandbox execd's /code routes, beside this file

PORT = int(os.environ.get("ABX_CODE_INTERPRETER_PORT", "49999"))
KEEPALIVE_S = 5.0          # §10: a keepalive line after 5 s of silence
# bound on the start of a kernel a request asked for (ABX_KERNEL_READY_S: for abxlua's own test of
# a slow start); the default python kernel at boot has none (start_default_kernel)
KERNEL_READY_S = float(os.environ.get("ABX_KERNEL_READY_S", "120"))
INTERRUPT_DRAIN_S = 10.0   # after an interrupt, wait this long for the kernel to go idle
SHELL_REPLY_S = 5.0        # after idle, wait this long for the execute_reply
USER_HOME = os.environ.get("ABX_CODE_INTERPRETER_CWD", "/home/user")  # the default contexts' cwd

# language (normalized) -> kernel names, the first installed one used; aliases as E2B's server
# maps them (§10; template/server/contexts.py @ 7df1757). E2B's template names its kernels python3,
# r, javascript (its ijavascript fork, also for typescript), bash and java; Debian's IRkernel
# installs "ir", tslab "jslab" and "tslab" (a TypeScript kernel, so typescript type-checks).
ALIASES = {"": "python", "python3": "python", "js": "javascript", "ts": "typescript"}
KERNELS = {"python": ("python3",), "javascript": ("javascript", "jslab"),
           "typescript": ("tslab", "javascript"), "r": ("r", "ir"), "bash": ("bash",),
           "java": ("java",)}

# result MIME keys (api/models/result.py through §10); anything else goes to "extra"
MIME = {"text/plain": "text", "text/html": "html", "text/markdown": "markdown",
        "image/svg+xml": "svg", "image/png": "png", "image/jpeg": "jpeg",
        "application/pdf": "pdf", "text/latex": "latex", "application/json": "json",
        "application/javascript": "javascript", "e2b/data": "data", "e2b/chart": "chart"}


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)


def normalize(language):
    lang = (language or "").strip().lower()
    return ALIASES.get(lang, lang)


class HTTPError(Exception):
    def __init__(self, status, text):
        super().__init__(text)
        self.status, self.text = status, text


def find_kernel(language):
    """The installed kernel for `language`, or HTTPError 404 naming the ones it could use."""
    specs = KernelSpecManager().find_kernel_specs()
    names = KERNELS.get(language, (language,))
    for name in names:
        if name in specs:
            return name
    # 404, not 400: the official SDK shows the body of a 404 only (NotFoundError)
    raise HTTPError(404, "language '%s' is not available in this template: no Jupyter kernel "
                    "%s is installed (installed kernels: %s)"
                    % (language, " or ".join("'%s'" % n for n in names),
                       ", ".join(sorted(specs)) or "none"))


class Context:
    """One Jupyter kernel. `lock` serializes executions (and restarts) on it."""

    def __init__(self, language, cwd, ready_timeout=KERNEL_READY_S):
        kernel = find_kernel(language)
        if not os.path.isdir(cwd):
            raise HTTPError(400, "cwd '%s' is not a directory in the sandbox" % cwd)
        self.id, self.language, self.cwd, self.kernel = str(uuid.uuid4()), language, cwd, kernel
        self.lock = threading.Lock()
        self.km = None
        self.kc = None
        self.start(ready_timeout)

    def start(self, ready_timeout=KERNEL_READY_S):
        """Starts the kernel in the context's cwd and waits for its kernel_info reply, at most
        `ready_timeout` seconds (None: as long as the kernel process lives); HTTPError 500 naming
        the kernel and the cause when it cannot start (a missing program, a kernel that exits,
        no reply in time), the half-started kernel stopped."""
        try:
            self.km = KernelManager(kernel_name=self.kernel)
            self.km.start_kernel(cwd=self.cwd)
            self.kc = self.km.client()
            self.kc.start_channels()
            # jupyter_client's wait_for_ready raises at once when the kernel dies
            self.kc.wait_for_ready(timeout=ready_timeout)
        except Exception as e:
            self.stop()
            raise HTTPError(500, "Failed to start the %s kernel for language '%s' in %s: %s: %s"
                            % (self.kernel, self.language, self.cwd, type(e).__name__, e))

    def stop(self):
        try:
            if self.kc:
                self.kc.stop_channels()
            if self.km:
                self.km.shutdown_kernel(now=True)
        except Exception as e:  # a dead kernel is already stopped
            log("stop", self.id, e)
        self.kc = self.km = None

    def restart(self):
        with self.lock:
            self.stop()
            self.start()

    def json(self):
        return {"id": self.id, "language": self.language, "cwd": self.cwd}

    # --- execution ---------------------------------------------------------------------------
    def wait_idle(self, msg_id, deadline, on_msg=None, tick=None):
        """Reads iopub until the kernel reports idle for `msg_id`. on_msg(msg) for its messages;
        tick() between reads (may raise to abort). False when `deadline` passed first."""
        while time.monotonic() < deadline:
            try:
                msg = self.kc.get_iopub_msg(timeout=0.2)
            except queue.Empty:
                if tick:
                    tick()
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle":
                return True
            if on_msg:
                on_msg(msg)
            if tick:
                tick()
        return False

    def shell_reply(self, msg_id):
        """The content of `msg_id`'s execute_reply ({} when none came within SHELL_REPLY_S);
        replies to other requests (the silent helpers') are skipped."""
        deadline = time.monotonic() + SHELL_REPLY_S
        while time.monotonic() < deadline:
            try:
                msg = self.kc.get_shell_msg(timeout=0.2)
            except queue.Empty:
                continue
            if msg.get("parent_header", {}).get("msg_id") == msg_id:
                return msg.get("content", {})
        return {}

    def silent(self, code):
        """Runs helper code that produces no output and no execution count."""
        msg_id = self.kc.execute(code, silent=True, store_history=False)
        self.wait_idle(msg_id, time.monotonic() + 30)

    def env_code(self, env_vars, restore):
        """Code that sets `env_vars` in the kernel's process environment, or (restore) sets each
        back to its value in the environment the kernel started with (the sandbox's, as E2B's
        messaging.py resets to the envd's /envs) or removes it. None when there is nothing to do."""
        if not env_vars:
            return None
        out = []
        for k, v in env_vars.items():
            v = os.environ.get(k) if restore else v
            out.append(ENV_SNIPPETS[self.language][0 if v is not None else 1]
                       % ((json.dumps(k), json.dumps(v)) if v is not None else (json.dumps(k),)))
        return "\n".join(out)

    def execute(self, code, env_vars, emit, closed):
        """Runs `code`; emit(obj) for each stream line but end_of_execution; closed() tells when
        the client went away (the kernel is then interrupted and the execution drained)."""
        with self.lock:
            setup = self.env_code(env_vars, False)
            if setup:
                self.silent(setup)
            try:
                self._run(code, emit, closed)
            finally:
                restore = self.env_code(env_vars, True)
                if restore and self.kc:
                    self.silent(restore)

    def _run(self, code, emit, closed):
        # stop_on_error=False: ipykernel otherwise aborts requests that arrive just after an error
        # (seen: the execution right after an interrupted one answered only end_of_execution)
        msg_id = self.kc.execute(code, allow_stdin=False, stop_on_error=False)
        last = [time.monotonic()]

        def send(obj):
            emit(obj)
            last[0] = time.monotonic()

        errored = [False]

        def on_msg(msg):
            kind, c = msg["msg_type"], msg["content"]
            ts = msg["header"].get("date")
            ts = ts.isoformat() if hasattr(ts, "isoformat") else ts
            if kind == "execute_input":
                send({"type": "number_of_executions", "execution_count": c.get("execution_count")})
            elif kind == "stream":
                send({"type": "stdout" if c.get("name") == "stdout" else "stderr",
                      "text": c.get("text", ""), "timestamp": ts})
            elif kind in ("execute_result", "display_data"):
                send(result_line(c.get("data", {}), kind == "execute_result"))
            elif kind == "error":
                errored[0] = True
                send(error_line(c))

        def tick():
            if closed():
                raise ConnectionResetError("client closed the connection")
            if time.monotonic() - last[0] >= KEEPALIVE_S:
                send({"type": "keepalive"})

        try:
            self.wait_idle(msg_id, float("inf"), on_msg, tick)
            reply = self.shell_reply(msg_id)
            if reply.get("status") == "error" and not errored[0]:
                # a kernel that reports its error only in the reply (tslab prints it to stderr):
                # E2B's messaging.py turns the execute_reply's error into an error line too
                send(error_line(reply))
            elif reply.get("status") == "abort":  # as E2B's messaging.py answers an abort
                send({"type": "error", "name": "ExecutionAborted", "value": "Execution was aborted",
                      "traceback": ""})
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            log("client left; interrupting context", self.id)
            self.km.interrupt_kernel()
            if not self.wait_idle(msg_id, time.monotonic() + INTERRUPT_DRAIN_S):
                log("context", self.id, "did not stop on interrupt; restarting it")
                self.stop()
                self.start()
            raise


# language -> (set, unset) code, from JSON string literals (valid in each of these languages), as
# E2B's messaging.py _set_env_var_snippet / _delete_env_var_snippet do @ 7df1757
ENV_SNIPPETS = {
    "python": ("__import__('os').environ[%s] = %s", "__import__('os').environ.pop(%s, None)"),
    "javascript": ("process.env[%s] = %s;", "delete process.env[%s];"),
    "typescript": ("process.env[%s] = %s;", "delete process.env[%s];"),
    "r": ("invisible(Sys.setenv(%s = %s))", "invisible(Sys.unsetenv(%s))"),
}


def error_line(c):
    """An error line from an error message's or an execute_reply's content."""
    return {"type": "error", "name": c.get("ename", ""), "value": c.get("evalue", ""),
            "traceback": "\n".join(c.get("traceback", []))}


def result_line(data, main):
    r = {"type": "result", "is_main_result": main}
    extra = {}
    for mime, value in data.items():
        key = MIME.get(mime)
        if key is None:
            extra[mime] = value
        elif value is not None:
            if key == "text" and isinstance(value, str) and len(value) >= 2 \
                    and value[0] == value[-1] == "'":
                # §10: one pair of surrounding single quotes is stripped (the repr of a str);
                # E2B's api/models/result.py leaves double quotes alone ("it's")
                value = value[1:-1]
            r[key] = value
    if extra:
        r["extra"] = extra
    return r


class Contexts:
    def __init__(self):
        self.mu = threading.Lock()
        self.by_id = {}
        self.default = {}  # language -> context id
        self.starting = {}  # language -> lock held while its default context starts

    def create(self, language, cwd, ready_timeout=KERNEL_READY_S):
        ctx = Context(language, cwd, ready_timeout)
        with self.mu:
            self.by_id[ctx.id] = ctx
        log("context", ctx.id, language, cwd)
        return ctx

    def get(self, cid):
        with self.mu:
            ctx = self.by_id.get(cid)
        if ctx is None:
            raise HTTPError(404, "Context %s not found" % cid)
        return ctx

    def default_for(self, language, ready_timeout=KERNEL_READY_S):
        """The language's default context, started on first use (one at a time per language,
        as E2B's main.py holds default_websockets.get_lock(language)); `ready_timeout` as
        Context.start's."""
        with self.mu:
            starting = self.starting.setdefault(language, threading.Lock())
        with starting:
            with self.mu:
                cid = self.default.get(language)
                if cid in self.by_id:
                    return self.by_id[cid]
            ctx = self.create(language, USER_HOME, ready_timeout)
            with self.mu:
                self.default[language] = ctx.id
            return ctx

    def remove(self, cid):
        with self.mu:
            ctx = self.by_id.pop(cid, None)
        if ctx is None:
            raise HTTPError(404, "Context %s not found" % cid)
        with ctx.lock:
            ctx.stop()

    def list(self):
        with self.mu:
            return [c.json() for c in self.by_id.values()]


CONTEXTS = Contexts()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "abx-code-interpreter"

    def log_message(self, fmt, *a):
        log(self.address_string(), fmt % a)

    def send_body(self, status, data, ctype):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_json(self, status, obj):
        self.send_body(status, json.dumps(obj).encode(), "application/json")

    def send_text(self, status, text):
        self.send_body(status, text.encode(), "text/plain; charset=utf-8")

    def send_response(self, code, message=None):
        self.answered = True  # route() answers a failure only before this
        super().send_response(code, message)

    def body(self):
        length = self.headers.get("Content-Length") or "0"
        if not length.isdigit():
            self.close_connection = True  # the body's end is unknown
            raise HTTPError(400, "Content-Length must be a decimal number of bytes, not %r"
                            % length)
        n = int(length)
        raw = self.rfile.read(n) if n else b""
        if not raw:
            return {}
        try:
            v = json.loads(raw)
        except ValueError as e:
            raise HTTPError(422, json.dumps({"detail": [{"loc": ["body"], "msg": "invalid JSON: %s" % e,
                                                         "type": "value_error.jsondecode"}]}))
        if not isinstance(v, dict):
            raise HTTPError(422, json.dumps({"detail": [{"loc": ["body"], "msg": "must be an object",
                                                         "type": "type_error.dict"}]}))
        return v

    def route(self, method):
        if execd_code.owns(self.path):  # reached through envd's execd port (execd_code.py)
            return execd_code.handle(self, method, CONTEXTS, HTTPError)
        path = self.path.split("?", 1)[0]
        try:
            if method == "POST":
                req = self.body()  # read first, so every answer leaves the connection clean
            if method == "GET" and path == "/health":
                return self.send_json(200, "OK")
            if method == "GET" and path == "/contexts":
                return self.send_json(200, CONTEXTS.list())
            if method == "POST" and path == "/contexts":
                language = normalize(field(req, "language", str, "python"))
                cwd = field(req, "cwd", str, USER_HOME) or USER_HOME
                return self.send_json(200, CONTEXTS.create(language, cwd).json())
            if path.startswith("/contexts/"):
                rest = path[len("/contexts/"):]
                if method == "POST" and rest.endswith("/restart"):
                    CONTEXTS.get(rest[:-len("/restart")]).restart()
                    return self.send_json(200, None)
                if method == "DELETE" and "/" not in rest:
                    CONTEXTS.remove(rest)
                    return self.send_json(200, None)
            if method == "POST" and path == "/execute":
                return self.execute(req)
            return self.send_text(404, "Not Found")
        except HTTPError as e:
            if e.status == 422:
                return self.send_body(422, e.text.encode(), "application/json")
            return self.send_text(e.status, e.text)

    def answer_failure(self, method, e):
        """Any failure route() did not expect: a plain-text 500 naming it (E2B's main.py answers
        PlainTextResponse(str(e), 500)); when the answer had started, the connection closes."""
        log("%s %s failed: %r" % (method, self.path, e))
        self.close_connection = True
        if getattr(self, "answered", False):
            return
        try:
            self.send_text(500, "code interpreter: %s %s failed: %s: %s"
                           % (method, self.path.split("?", 1)[0], type(e).__name__, e))
        except OSError:
            pass

    def execute(self, req):
        code = req.get("code")
        if not isinstance(code, str):
            raise HTTPError(422, json.dumps({"detail": [{"loc": ["body", "code"],
                                                         "msg": "field required (a string)",
                                                         "type": "value_error.missing"}]}))
        cid, language = field(req, "context_id", str, None), field(req, "language", str, None)
        env_vars = field(req, "env_vars", dict, None) or {}
        for k, v in env_vars.items():
            if not isinstance(v, str):
                raise HTTPError(422, json.dumps({"detail": [{"loc": ["body", "env_vars", k],
                                                             "msg": "str type expected",
                                                             "type": "type_error.str"}]}))
        if cid and language:
            raise HTTPError(400, "Only one of context_id or language can be provided, not both")
        ctx = CONTEXTS.get(cid) if cid else CONTEXTS.default_for(normalize(language))
        if env_vars and ctx.language not in ENV_SNIPPETS:
            raise HTTPError(400, "env_vars are not supported for language '%s' (supported: %s)"
                            % (ctx.language, ", ".join(sorted(ENV_SNIPPETS))))
        self.send_response(200)  # no Content-Type: E2B's StreamingResponse sets none (§10)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        sock = self.connection

        def emit(obj):
            data = (json.dumps(obj) + "\n").encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def closed():
            r, _, _ = select.select([sock], [], [], 0)
            if not r:
                return False
            try:
                return sock.recv(1, socket.MSG_PEEK) == b""
            except OSError:
                return True

        try:
            ctx.execute(code, env_vars, emit, closed)
            emit({"type": "end_of_execution"})
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            pass
        except Exception as e:  # the kernel died or was removed: an error line, then the end
            log("execute failed:", repr(e))
            try:
                emit({"type": "error", "name": "UnexpectedEndOfExecution", "value": str(e),
                      "traceback": ""})
                emit({"type": "end_of_execution"})
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                pass
        self.close_connection = True

    def handle_method(self, method):
        self.answered = False
        try:
            self.route(method)
        except Exception as e:  # noqa: BLE001 (every request gets an answer)
            self.answer_failure(method, e)

    def do_GET(self):
        self.handle_method("GET")

    def do_POST(self):
        self.handle_method("POST")

    def do_DELETE(self):
        self.handle_method("DELETE")


def field(req, name, kind, default):
    v = req.get(name)
    if v is None:
        return default
    if not isinstance(v, kind):
        raise HTTPError(422, json.dumps({"detail": [{"loc": ["body", name],
                                                     "msg": "must be a %s" % kind.__name__,
                                                     "type": "type_error"}]}))
    return v


def start_default_kernel():
    """Starts the default Python context before the server listens (/health then means code can
    run). The wait has no bound of its own while the kernel process lives: on a loaded machine a
    kernel can take minutes to answer, and a start cut off at a bound and begun again from zero
    never ends when every start takes longer than that bound (CI, stop 30: code-interpreter-v1
    never ready in 180 s beside a busy suite, with a 60 s bound). A kernel that dies is logged on
    one line and started again. The platform's readiness deadline (the template's ready_timeout,
    platform/sandbox/template_start.h) bounds the whole wait and names this log's tail when it
    passes; exiting instead would turn one failed start into a sandbox that never gets ready
    (issue 22: 'did not succeed within its ready timeout of 180 s' with a traceback tail)."""
    tries = 0
    while True:
        tries += 1
        try:
            CONTEXTS.default_for("python", ready_timeout=None)
            return
        except HTTPError as e:
            log("default python kernel not started (try %d): %s; trying again" % (tries, e.text))
            time.sleep(1)


def start_javascript_default():
    """E2B's server also starts a javascript context before it serves (its contexts test lists
    one): here when a javascript kernel is installed, once; a failure is logged and the context
    is then started on first use."""
    try:
        find_kernel("javascript")
    except HTTPError:
        return
    try:
        CONTEXTS.default_for("javascript")
    except Exception as e:  # noqa: BLE001 (started again on first use)
        log("default javascript kernel not started: %s" % getattr(e, "text", e))


def main():
    # ipykernel's debugger warns about frozen modules at every kernel start (into the start log)
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    start_default_kernel()
    start_javascript_default()
    srv = ThreadingHTTPServer(("0.0.0.0", PORT), Handler)
    srv.daemon_threads = True
    log("listening on", PORT)
    srv.serve_forever()


if __name__ == "__main__":
    main()
