"""agent-sandbox-server: the in-sandbox HTTP server of the python-hello template.

Python 3 standard library only (the sandbox has Debian's python3 and no PyPI). The template's
start_cmd (`python3 /opt/agent-server/server.py`) runs it as the template's user, `user` (uid
1000, HOME /home/user), as E2B runs a start command in its build's USER context; started as root
(an older local platform), it writes its token file and then drops to `user` itself. Either way
commands, files and processes run as E2B's template user. abxlua's client is `sbx:server()` (lib/abx/client/server.lua); the
scenario is scenarios/06_server_sdk.lua; README.md "Templates" documents the same contract.

Port: AGENT_SERVER_PORT (default 8080), all interfaces.

Auth: every route but GET /health needs `Authorization: Bearer <token>`; without it, or with a
wrong one, the answer is 401 {"error": "unauthorized", ...} with `WWW-Authenticate: Bearer`.
The token is AGENT_SERVER_TOKEN from the server's environment (give it at sandbox create:
`envs = {AGENT_SERVER_TOKEN = ...}`; start_cmd runs with the sandbox's env vars); when that is
unset or empty the server makes a random one (32 bytes, hex). Either way it is written to
AGENT_SERVER_TOKEN_FILE (default /var/lib/agent-server/token, file 0600 in a directory 0700 that
the recipe makes for `user`) and removed from the server's environment, so neither /env nor the
commands it runs see it. A client that has no token reads that file through envd as
root (whoever holds envd access already controls the sandbox); there is no well-known default.

JSON everywhere: request bodies are JSON objects (Content-Type application/json, with a
Content-Length; at most 64 MiB), answers are JSON objects. Unknown fields and unknown query
parameters are refused. Errors: {"error": <code>, "message": <text>} with status
  400 bad_request (malformed JSON, a missing/unknown field or parameter, a wrong type; the
      message names the field and the valid ones), 401 unauthorized, 403 forbidden (the OS
      refused the server's user, e.g. a write under /etc), 404 not_found (route, path or
      process), 405 method_not_allowed (with Allow), 409 conflict (a non-empty directory without
      recursive, a process that has already ended), 411 length_required, 413 payload_too_large,
      415 unsupported_media_type, 500 internal.

Routes (API version 1):
  GET    /health                 {"status": "ok"} (no auth: readiness probes)
  GET    /capabilities           {name, version, api_version, port, user, routes: [...]}
  POST   /commands               {cmd, cwd?, env?, timeout?} -> {exit_code, stdout, stderr,
                                 timed_out, duration_ms}. `bash -c cmd` in its own session;
                                 timeout seconds (default 60, 0 < t <= 3600): the process group
                                 is killed, timed_out true and exit_code 124 (as timeout(1));
                                 output decoded as UTF-8 (invalid bytes as U+FFFD), each stream
                                 at most 16 MiB (more is a 413 naming the stream)
  GET    /files/<path>           a file: {path, type: "file", size, mode, encoding, content}
                                 (encoding "utf-8", or "base64" when the bytes are not UTF-8 or
                                 ?encoding=base64 is asked); a directory: {path, type: "dir",
                                 entries: [{name, type, size, mode, mtime}]} sorted by name
  PUT    /files/<path>           {content, encoding? ("utf-8"|"base64"), mode? ("0644")} ->
                                 {path, size, created}; parents are created
  DELETE /files/<path>           {path, deleted: true}; a non-empty directory needs ?recursive=true
  POST   /process/start          {cmd, cwd?, env?} -> 201 {pid, cmd, cwd, status: "running", ...}
  GET    /process                {processes: [Process...]} (the ones this server started)
  GET    /process/<pid>          Process {pid, cmd, cwd, status: running|exited|killed,
                                 exit_code, signal, started_at, ended_at, stdout, stderr}
                                 (output: the last 1 MiB of each stream)
  POST   /process/<pid>/kill     {signal? ("TERM" default, "KILL", "INT", "HUP", "QUIT", "USR1",
                                 "USR2")} -> {pid, signal, status}; 409 when it has ended
  GET    /system/info            {hostname, kernel: {sysname, release, version, machine},
                                 cpu_count, cpu_quota, memory: {total_bytes, available_bytes,
                                 cgroup_limit_bytes, cgroup_usage_bytes}, uptime_s, user, python}
                                 (cgroup figures from v2 or v1 files where visible, else null)
  GET    /env                    {env: {NAME: value}}: the environment commands start with
  GET    /ports                  {ports: [{port, address, family}]}: listening TCP sockets from
                                 /proc/net/tcp and /proc/net/tcp6
  GET    /hello                  {"message": "hello from python-hello"} (the template's own route)
  GET    /catalogue              {commands: [Descriptor...]}: the command catalogue (below)
  POST   /catalogue/<name>       {args, cwd?, env?, timeout?} -> {name, argv, exit_code, stdout,
                                 stderr, timed_out, duration_ms}: runs the named command
<path> is the absolute path with its leading "/" (GET /files/home/user/a.txt reads
/home/user/a.txt), percent-decoded; "." and ".." segments are refused.

Command catalogue. Named commands with typed arguments, run WITHOUT a shell: the descriptor's
argv template is expanded into an argv list and executed directly (as POST /commands runs its
output limits, timeout and signals), so every element of a string array arrives as its own argv
entry exactly as sent (spaces, quotes, unicode, empty strings). A Descriptor is
  {name, description, args: [{name, type, required, default?, description}], argv: [token...]}
with type one of "string", "string_array", "integer", "boolean", and each argv token either a
literal string or {"arg": NAME} (a string: one entry; an integer: its decimal; a string array:
one entry per element, none for []; an optional argument not given and without default: no
entry) or {"flag": TEXT, "when": NAME} (TEXT when the boolean NAME is true). The body's `args`
must be an object; an unknown command name, an unknown or missing argument, or a value of the
wrong type (a bool is no integer; strings may not contain NUL) is a 400 naming the valid names
or the expected type. The catalogue:
  argv         {values: string_array}: prints its argv after the program as a JSON array
  stat_files   {paths: string_array, follow: boolean?}: `stat [-L] --printf '%n\t%s\n' -- paths`
  head_file    {path: string, lines: integer? (10)}: `head -n lines -- path`
  grep_files   {pattern: string, files: string_array, ignore_case: boolean?}:
               `grep -n [-i] -e pattern -- files`
"""
import base64
import hmac
import json
import os
import platform
import pwd
import secrets
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NAME = "agent-sandbox-server"
VERSION = "1.0.0"
API_VERSION = 1
PORT = int(os.environ.get("AGENT_SERVER_PORT", "8080"))
TOKEN_FILE = os.environ.get("AGENT_SERVER_TOKEN_FILE", "/var/lib/agent-server/token")
RUN_AS = os.environ.get("AGENT_SERVER_USER", "user")
MAX_BODY = 64 * 1024 * 1024
MAX_OUTPUT = 16 * 1024 * 1024
PROCESS_TAIL = 1024 * 1024
DEFAULT_TIMEOUT_S = 60
MAX_TIMEOUT_S = 3600
SIGNALS = {"TERM": signal.SIGTERM, "KILL": signal.SIGKILL, "INT": signal.SIGINT,
           "HUP": signal.SIGHUP, "QUIT": signal.SIGQUIT, "USR1": signal.SIGUSR1,
           "USR2": signal.SIGUSR2}
ROUTES = [
    "GET /health", "GET /capabilities", "POST /commands", "GET /files/<path>",
    "PUT /files/<path>", "DELETE /files/<path>", "POST /process/start", "GET /process",
    "GET /process/<pid>", "POST /process/<pid>/kill", "GET /system/info", "GET /env",
    "GET /ports", "GET /hello", "GET /catalogue", "POST /catalogue/<name>",
]

TOKEN = ""          # set by main()
USER_NAME = None    # the user the server runs as, after main()


def log(*a):
    print("agent-server:", *a, file=sys.stderr, flush=True)


class ApiError(Exception):
    """An error answer: HTTP status, error code and message."""

    def __init__(self, status, code, message, headers=None):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = headers or {}


def bad(message):
    return ApiError(400, "bad_request", message)


def not_found(message):
    return ApiError(404, "not_found", message)


def check_fields(obj, required, optional, what):
    """Refuses a body that is not an object, lacks a required field or has an unknown one."""
    if not isinstance(obj, dict):
        raise bad(f"{what}: the body must be a JSON object")
    valid = sorted(set(required) | set(optional))
    for k in obj:
        if k not in valid:
            raise bad(f"{what}: unknown field '{k}' (valid: {', '.join(valid)})")
    for k in required:
        if k not in obj:
            raise bad(f"{what}: field '{k}' is required (valid: {', '.join(valid)})")


def want_str(obj, key, what, empty_ok=False):
    v = obj.get(key)
    if not isinstance(v, str) or (not empty_ok and v == ""):
        raise bad(f"{what}: field '{key}' must be a non-empty string")
    return v


def want_env(obj, what):
    env = obj.get("env")
    if env is None:
        return {}
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                            for k, v in env.items()):
        raise bad(f"{what}: field 'env' must be an object of string values")
    for k in env:
        if k == "" or "=" in k or "\0" in k:
            raise bad(f"{what}: env name {k!r} is not a valid variable name")
    return env


def want_cwd(obj, what):
    cwd = obj.get("cwd")
    if cwd is None:
        home = os.environ.get("HOME", "/")
        return home if os.path.isdir(home) else "/"
    if not isinstance(cwd, str) or not cwd.startswith("/"):
        raise bad(f"{what}: field 'cwd' must be an absolute path")
    if not os.path.isdir(cwd):
        raise bad(f"{what}: cwd {cwd} is not a directory")
    return cwd


def child_env(extra):
    env = dict(os.environ)
    env.update(extra)
    return env


# ---------------------------------------------------------------- commands

def run_command(body):
    what = "POST /commands"
    check_fields(body, ["cmd"], ["cwd", "env", "timeout"], what)
    cmd = want_str(body, "cmd", what)
    cwd, env = want_cwd(body, what), want_env(body, what)
    timeout = want_timeout(body, what)
    return 200, run_argv(["bash", "-c", cmd], cwd, env, timeout, what)


def want_timeout(body, what):
    timeout = body.get("timeout", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
            or not 0 < timeout <= MAX_TIMEOUT_S:
        raise bad(f"{what}: field 'timeout' must be a number of seconds, 0 < timeout <= "
                  f"{MAX_TIMEOUT_S}")
    return timeout


def run_argv(argv, cwd, env, timeout, what):
    """Runs argv (no shell) in its own session: {exit_code, stdout, stderr, timed_out,
    duration_ms}; the group is killed at the timeout (exit_code 124, as timeout(1))."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(argv, cwd=cwd, env=child_env(env),
                             stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                             start_new_session=True)
        timed_out = False
        try:
            code = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(p.pid, signal.SIGKILL)
            p.wait()
            code = 124
        result = {"exit_code": code, "timed_out": timed_out,
                  "duration_ms": int((time.monotonic() - start) * 1000)}
        for name, f in (("stdout", out), ("stderr", err)):
            size = f.seek(0, os.SEEK_END)
            if size > MAX_OUTPUT:
                raise ApiError(413, "payload_too_large",
                               f"{what}: {name} was {size} bytes, more than {MAX_OUTPUT}")
            f.seek(0)
            result[name] = f.read().decode("utf-8", "replace")
    if code < 0:  # killed by a signal: as a shell reports it
        result["exit_code"] = 128 - code
    return result


# ---------------------------------------------------------------- command catalogue

ARG_TYPES = ("string", "string_array", "integer", "boolean")
PRINT_ARGV = "import json, sys; print(json.dumps(sys.argv[1:]))"


def arg(name, type_, required, description, default=None):
    d = {"name": name, "type": type_, "required": required, "description": description}
    if default is not None:
        d["default"] = default
    return d


CATALOGUE = [
    {"name": "argv", "description": "prints its argv after the program as a JSON array",
     "args": [arg("values", "string_array", True, "the argv entries, each passed as it is")],
     "argv": [sys.executable or "python3", "-c", PRINT_ARGV, {"arg": "values"}]},
    {"name": "stat_files", "description": "name and size of each path (stat)",
     "args": [arg("paths", "string_array", True, "the paths"),
              arg("follow", "boolean", False, "follow symlinks (-L)")],
     "argv": ["stat", {"flag": "-L", "when": "follow"}, "--printf", "%n\t%s\n", "--",
              {"arg": "paths"}]},
    {"name": "head_file", "description": "the first lines of a file (head)",
     "args": [arg("path", "string", True, "the file"),
              arg("lines", "integer", False, "how many lines", 10)],
     "argv": ["head", "-n", {"arg": "lines"}, "--", {"arg": "path"}]},
    {"name": "grep_files", "description": "lines matching a pattern, with line numbers (grep)",
     "args": [arg("pattern", "string", True, "a basic regular expression"),
              arg("files", "string_array", True, "the files"),
              arg("ignore_case", "boolean", False, "match case-insensitively (-i)")],
     "argv": ["grep", "-n", {"flag": "-i", "when": "ignore_case"}, "-e", {"arg": "pattern"}, "--",
              {"arg": "files"}]},
]
CATALOGUE_BY_NAME = {c["name"]: c for c in CATALOGUE}


def check_arg_value(what, a, v):
    """Refuses a value that is not of the argument's type; strings may not hold NUL (argv)."""
    t, n = a["type"], a["name"]
    if t == "string":
        ok = isinstance(v, str) and "\0" not in v
    elif t == "string_array":
        ok = isinstance(v, list) and all(isinstance(x, str) and "\0" not in x for x in v)
    elif t == "integer":
        ok = isinstance(v, int) and not isinstance(v, bool)
    else:
        ok = isinstance(v, bool)
    if not ok:
        raise bad(f"{what}: argument '{n}' must be {t} (" + {
            "string": "a JSON string without NUL",
            "string_array": "a JSON array of strings without NUL",
            "integer": "a JSON integer, not a boolean",
            "boolean": "true or false"}[t] + f"), got {json.dumps(v)[:80]}")


def expand_argv(desc, args, what):
    """The argv of descriptor `desc` for the checked `args` (see the module docstring)."""
    by_name = {a["name"]: a for a in desc["args"]}
    valid = ", ".join(a["name"] for a in desc["args"]) or "none"
    if not isinstance(args, dict):
        raise bad(f"{what}: field 'args' must be a JSON object (arguments: {valid})")
    for k, v in args.items():
        if k not in by_name:
            raise bad(f"{what}: unknown argument '{k}' (arguments: {valid})")
        check_arg_value(what, by_name[k], v)
    values = {}
    for a in desc["args"]:
        if a["name"] in args:
            values[a["name"]] = args[a["name"]]
        elif a["required"]:
            raise bad(f"{what}: argument '{a['name']}' ({a['type']}) is required "
                      f"(arguments: {valid})")
        elif "default" in a:
            values[a["name"]] = a["default"]
    argv = []
    for tok in desc["argv"]:
        if isinstance(tok, str):
            argv.append(tok)
        elif "flag" in tok:
            if values.get(tok["when"]) is True:
                argv.append(tok["flag"])
        else:
            v = values.get(tok["arg"])
            if v is None:
                continue
            if isinstance(v, list):
                argv.extend(v)
            elif isinstance(v, bool):
                raise bad(f"{what}: argument '{tok['arg']}' is a boolean used as a value")
            else:
                argv.append(str(v))
    return argv


def catalogue_list():
    return 200, {"commands": CATALOGUE}


def catalogue_call(name, body):
    what = f"POST /catalogue/{name}"
    desc = CATALOGUE_BY_NAME.get(name)
    if desc is None:
        raise bad(f"{what}: unknown command '{name}' (commands: "
                  f"{', '.join(sorted(CATALOGUE_BY_NAME))})")
    check_fields(body, ["args"], ["cwd", "env", "timeout"], what)
    cwd, env, timeout = want_cwd(body, what), want_env(body, what), want_timeout(body, what)
    argv = expand_argv(desc, body["args"], what)
    result = run_argv(argv, cwd, env, timeout, what)
    result.update(name=name, argv=argv)
    return 200, result


def kill_group(pid, sig):
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


# ---------------------------------------------------------------- files

def fs_path(raw):
    """/files/<path> -> the absolute path; refuses empty, '.', '..' and NUL."""
    path = urllib.parse.unquote(raw)
    if path == "" or "\0" in path:
        raise bad("files: the path is empty or contains NUL")
    parts = [p for p in path.split("/") if p != ""]
    if any(p in (".", "..") for p in parts):
        raise bad(f"files: the path /{path.lstrip('/')} has '.' or '..' segments")
    return "/" + "/".join(parts)


def entry_info(path, name):
    st = os.lstat(path)
    if os.path.islink(path):
        kind = "symlink"
    elif os.path.isdir(path):
        kind = "dir"
    elif os.path.isfile(path):
        kind = "file"
    else:
        kind = "other"
    return {"name": name, "type": kind, "size": st.st_size, "mode": f"{st.st_mode & 0o7777:04o}",
            "mtime": st.st_mtime}


def get_file(path, query):
    check_query(query, ["encoding"], "GET /files")
    enc = query.get("encoding")
    if enc not in (None, "base64", "utf-8"):
        raise bad("GET /files: encoding must be 'utf-8' or 'base64'")
    if not os.path.lexists(path):
        raise not_found(f"no such file or directory: {path}")
    if os.path.isdir(path):
        names = sorted(os.listdir(path))
        return 200, {"path": path, "type": "dir",
                     "entries": [entry_info(os.path.join(path, n), n) for n in names]}
    st = os.stat(path)
    if st.st_size > MAX_BODY:
        raise ApiError(413, "payload_too_large", f"{path} is {st.st_size} bytes, more than "
                       f"{MAX_BODY}")
    with open(path, "rb") as f:
        data = f.read()
    res = {"path": path, "type": "file", "size": len(data), "mode": f"{st.st_mode & 0o7777:04o}"}
    if enc != "base64":
        try:
            res.update(encoding="utf-8", content=data.decode("utf-8"))
            return 200, res
        except UnicodeDecodeError:
            if enc == "utf-8":
                raise bad(f"GET /files: {path} is not UTF-8 text; ask encoding=base64")
    res.update(encoding="base64", content=base64.b64encode(data).decode("ascii"))
    return 200, res


def put_file(path, body):
    what = "PUT /files"
    check_fields(body, ["content"], ["encoding", "mode"], what)
    content = body["content"]
    if not isinstance(content, str):
        raise bad(f"{what}: field 'content' must be a string")
    enc = body.get("encoding", "utf-8")
    if enc == "utf-8":
        data = content.encode("utf-8")
    elif enc == "base64":
        try:
            data = base64.b64decode(content, validate=True)
        except ValueError:
            raise bad(f"{what}: field 'content' is not valid base64")
    else:
        raise bad(f"{what}: field 'encoding' must be 'utf-8' or 'base64'")
    mode = body.get("mode")
    if mode is not None:
        if not isinstance(mode, str) or not mode.isdigit() or any(c > "7" for c in mode) \
                or int(mode, 8) > 0o7777:
            raise bad(f"{what}: field 'mode' must be an octal string such as \"0644\"")
        mode = int(mode, 8)
    if os.path.isdir(path):
        raise ApiError(409, "conflict", f"{path} is a directory")
    created = not os.path.lexists(path)
    os.makedirs(os.path.dirname(path) or "/", exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    if mode is not None:
        os.chmod(path, mode)
    return (201 if created else 200), {"path": path, "size": len(data), "created": created}


def delete_file(path, query):
    check_query(query, ["recursive"], "DELETE /files")
    rec = query.get("recursive", "false")
    if rec not in ("true", "false"):
        raise bad("DELETE /files: recursive must be 'true' or 'false'")
    if not os.path.lexists(path):
        raise not_found(f"no such file or directory: {path}")
    if os.path.isdir(path) and not os.path.islink(path):
        if os.listdir(path) and rec != "true":
            raise ApiError(409, "conflict", f"{path} is a non-empty directory; ask recursive=true")
        shutil.rmtree(path)
    else:
        os.unlink(path)
    return 200, {"path": path, "deleted": True}


# ---------------------------------------------------------------- processes

class Process:
    def __init__(self, cmd, cwd, env):
        self.cmd, self.cwd = cmd, cwd
        self.dir = tempfile.mkdtemp(prefix="agent-server-proc-")
        self.out_path = os.path.join(self.dir, "stdout")
        self.err_path = os.path.join(self.dir, "stderr")
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.popen = subprocess.Popen(["bash", "-c", cmd], cwd=cwd, env=child_env(env),
                                          stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                          start_new_session=True)
        self.pid = self.popen.pid
        self.started_at = time.time()
        self.ended_at = None
        self.killed_with = None
        threading.Thread(target=self._reap, daemon=True).start()

    def _reap(self):
        self.popen.wait()
        self.ended_at = time.time()

    def tail(self, path):
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - PROCESS_TAIL))
            return f.read().decode("utf-8", "replace")

    def info(self, output=True):
        rc = self.popen.returncode
        if rc is None:
            status, code, sig = "running", None, None
        elif rc < 0:
            status, code, sig = "killed", None, signal.Signals(-rc).name[3:]
        else:
            status, code, sig = "exited", rc, None
        res = {"pid": self.pid, "cmd": self.cmd, "cwd": self.cwd, "status": status,
               "exit_code": code, "signal": sig, "started_at": self.started_at,
               "ended_at": self.ended_at}
        if output:
            res["stdout"], res["stderr"] = self.tail(self.out_path), self.tail(self.err_path)
        return res


PROCESSES = {}
PROCESSES_LOCK = threading.Lock()


def start_process(body):
    what = "POST /process/start"
    check_fields(body, ["cmd"], ["cwd", "env"], what)
    p = Process(want_str(body, "cmd", what), want_cwd(body, what), want_env(body, what))
    with PROCESSES_LOCK:
        PROCESSES[p.pid] = p
    return 201, p.info(output=False)


def find_process(raw):
    if not raw.isdigit():
        raise bad(f"process: pid must be a number, got {raw!r}")
    with PROCESSES_LOCK:
        p = PROCESSES.get(int(raw))
    if p is None:
        raise not_found(f"no process {raw} started by this server")
    return p


def kill_process(p, body):
    what = "POST /process/<pid>/kill"
    check_fields(body, [], ["signal"], what)
    name = body.get("signal", "TERM")
    if name not in SIGNALS:
        raise bad(f"{what}: signal must be one of {', '.join(sorted(SIGNALS))}")
    if p.popen.poll() is not None:
        raise ApiError(409, "conflict", f"process {p.pid} has already ended")
    kill_group(p.pid, SIGNALS[name])
    try:
        p.popen.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    return 200, {"pid": p.pid, "signal": name, "status": p.info(output=False)["status"]}


# ---------------------------------------------------------------- system

def read_first(paths):
    for path in paths:
        try:
            with open(path) as f:
                return f.read().strip()
        except OSError:
            continue
    return None


def cgroup_number(v2, v1):
    """A byte count from cgroup v2 (`max` = no limit) or v1 (a huge number = no limit)."""
    raw = read_first([v2, v1])
    if raw is None or raw == "max":
        return None
    n = int(raw)
    return None if n >= (1 << 60) else n


def cpu_quota():
    raw = read_first(["/sys/fs/cgroup/cpu.max"])
    if raw is not None:
        quota, period = raw.split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    quota = read_first(["/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us"])
    period = read_first(["/sys/fs/cgroup/cpu/cpu.cfs_period_us", "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us"])
    if quota is None or period is None or int(quota) <= 0:
        return None
    return int(quota) / int(period)


def meminfo():
    out = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                k, v = line.split(":", 1)
                out[k] = int(v.split()[0]) * 1024
    except OSError:
        pass
    return out


def system_info():
    u = os.uname()
    mem = meminfo()
    try:
        cpus = len(os.sched_getaffinity(0))
    except OSError:
        cpus = os.cpu_count()
    uptime = read_first(["/proc/uptime"])
    return 200, {
        "hostname": socket.gethostname(),
        "kernel": {"sysname": u.sysname, "release": u.release, "version": u.version,
                   "machine": u.machine},
        "cpu_count": cpus,
        "cpu_quota": cpu_quota(),
        "memory": {
            "total_bytes": mem.get("MemTotal"),
            "available_bytes": mem.get("MemAvailable"),
            "cgroup_limit_bytes": cgroup_number("/sys/fs/cgroup/memory.max",
                                                "/sys/fs/cgroup/memory/memory.limit_in_bytes"),
            "cgroup_usage_bytes": cgroup_number("/sys/fs/cgroup/memory.current",
                                                "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
        },
        "uptime_s": float(uptime.split()[0]) if uptime else None,
        "user": {"uid": os.getuid(), "name": USER_NAME},
        "python": platform.python_version(),
    }


def listening_ports():
    ports = {}
    for family, path in (("ipv4", "/proc/net/tcp"), ("ipv6", "/proc/net/tcp6")):
        try:
            with open(path) as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 4 or fields[3] != "0A":  # 0A = TCP_LISTEN
                continue
            addr_hex, port_hex = fields[1].split(":")
            port = int(port_hex, 16)
            raw = bytes.fromhex(addr_hex)
            # /proc prints the address as 32-bit words in host (little-endian) order
            words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
            addr = socket.inet_ntop(socket.AF_INET if family == "ipv4" else socket.AF_INET6, words)
            ports[(port, addr, family)] = {"port": port, "address": addr, "family": family}
    return 200, {"ports": [ports[k] for k in sorted(ports)]}


# ---------------------------------------------------------------- HTTP

def check_query(query, valid, what):
    for k in query:
        if k not in valid:
            raise bad(f"{what}: unknown query parameter '{k}' (valid: {', '.join(valid) or 'none'})")


class Handler(BaseHTTPRequestHandler):
    server_version = f"{NAME}/{VERSION}"
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        log(self.address_string(), fmt % args)

    def send_json(self, status, obj, headers=None):
        data = json.dumps(obj).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def read_body(self, required):
        """The request's JSON object ({} when there is none and none is required)."""
        if self.headers.get("Transfer-Encoding"):
            raise ApiError(411, "length_required", "send the body with a Content-Length")
        length = self.headers.get("Content-Length")
        if length is None or length == "0":
            if required:
                raise bad(f"{self.command} {self.path}: a JSON object body is required")
            return {}
        if not length.isdigit():
            raise bad("Content-Length is not a number")
        n = int(length)
        if n > MAX_BODY:
            self.close_connection = True
            raise ApiError(413, "payload_too_large", f"the body is {n} bytes, more than {MAX_BODY}")
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        raw = self.rfile.read(n)
        if ctype != "application/json":
            raise ApiError(415, "unsupported_media_type",
                           f"Content-Type must be application/json, got {ctype or 'none'}")
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise bad(f"the body is not valid JSON: {e}")
        if not isinstance(body, dict):
            raise bad("the body must be a JSON object")
        return body

    def authorized(self):
        got = self.headers.get("Authorization", "")
        if not got.startswith("Bearer "):
            return False
        return hmac.compare_digest(got[len("Bearer "):].encode(), TOKEN.encode())

    def dispatch(self):
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        try:
            query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True, strict_parsing=False))
        except ValueError:
            raise bad("the query string is malformed")
        m = self.command
        if path == "/health":
            return self.only(m, "GET") or (200, {"status": "ok"})
        if not self.authorized():
            raise ApiError(401, "unauthorized", "missing or wrong bearer token (Authorization: "
                           "Bearer <token>)", {"WWW-Authenticate": 'Bearer realm="agent-sandbox-server"'})
        if path.startswith("/files/") or path == "/files":
            fp = fs_path(path[len("/files"):])
            if m == "GET":
                self.read_body(False)
                return get_file(fp, query)
            if m == "PUT":
                check_query(query, [], "PUT /files")
                return put_file(fp, self.read_body(True))
            if m == "DELETE":
                self.read_body(False)
                return delete_file(fp, query)
            raise self.not_allowed("GET, PUT, DELETE")
        check_query(query, [], f"{m} {path}")
        simple = {
            "/capabilities": ("GET", lambda: (200, {
                "name": NAME, "version": VERSION, "api_version": API_VERSION, "port": PORT,
                "user": USER_NAME, "routes": ROUTES, "signals": sorted(SIGNALS)})),
            "/system/info": ("GET", system_info),
            "/env": ("GET", lambda: (200, {"env": dict(os.environ)})),
            "/ports": ("GET", listening_ports),
            "/hello": ("GET", lambda: (200, {"message": "hello from python-hello"})),
            "/process": ("GET", lambda: (200, {"processes": self.process_list()})),
            "/catalogue": ("GET", catalogue_list),
        }
        if path in simple:
            method, fn = simple[path]
            if m != method:
                raise self.not_allowed(method)
            self.read_body(False)
            return fn()
        if path == "/commands":
            if m != "POST":
                raise self.not_allowed("POST")
            return run_command(self.read_body(True))
        if path == "/process/start":
            if m != "POST":
                raise self.not_allowed("POST")
            return start_process(self.read_body(True))
        parts = path.split("/")
        if len(parts) == 3 and parts[1] == "catalogue":
            if m != "POST":
                raise self.not_allowed("POST")
            return catalogue_call(urllib.parse.unquote(parts[2]), self.read_body(True))
        if len(parts) == 3 and parts[1] == "process":
            if m != "GET":
                raise self.not_allowed("GET")
            self.read_body(False)
            return 200, find_process(parts[2]).info()
        if len(parts) == 4 and parts[1] == "process" and parts[3] == "kill":
            if m != "POST":
                raise self.not_allowed("POST")
            p = find_process(parts[2])
            return kill_process(p, self.read_body(False))
        raise not_found(f"no route {m} {path} (routes: {', '.join(ROUTES)})")

    @staticmethod
    def process_list():
        with PROCESSES_LOCK:
            procs = sorted(PROCESSES.values(), key=lambda p: p.started_at)
        return [p.info(output=False) for p in procs]

    def only(self, m, method):
        if m != method:
            raise self.not_allowed(method)
        return None

    def not_allowed(self, allow):
        return ApiError(405, "method_not_allowed", f"{self.command} is not allowed on "
                        f"{urllib.parse.urlsplit(self.path).path} (allowed: {allow})", {"Allow": allow})

    def handle_any(self):
        try:
            status, obj = self.dispatch()
            self.send_json(status, obj)
        except ApiError as e:
            self.send_json(e.status, {"error": e.code, "message": e.message}, e.headers)
        except PermissionError as e:
            self.send_json(403, {"error": "forbidden", "message": str(e)})
        except Exception as e:  # a bug or an OS error: say what it was, keep serving
            log("internal error:", repr(e))
            self.send_json(500, {"error": "internal", "message": f"{type(e).__name__}: {e}"})

    do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = handle_any


class Server(ThreadingHTTPServer):
    """Listens on [::] with IPV6_V6ONLY off, so IPv4 clients (localhost, the ingress) reach it
    too; Server.ipv4() where the network namespace has no IPv6. Binding skips http.server's
    getfqdn (a DNS lookup a sandbox without network would wait on)."""
    address_family = socket.AF_INET6
    daemon_threads = True

    def server_bind(self):
        if self.address_family == socket.AF_INET6:
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "localhost", self.server_address[1]


class Server4(Server):
    address_family = socket.AF_INET


def setup_token():
    """The token (env or random), written to TOKEN_FILE; removed from the environment."""
    token = os.environ.pop("AGENT_SERVER_TOKEN", "") or secrets.token_hex(32)
    d = os.path.dirname(TOKEN_FILE)
    os.makedirs(d, mode=0o700, exist_ok=True)
    fd = os.open(TOKEN_FILE + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token)
    os.replace(TOKEN_FILE + ".tmp", TOKEN_FILE)
    return token


def drop_privileges():
    """As root: become RUN_AS (its uid, gid, HOME), as E2B's template user runs code."""
    global USER_NAME
    if os.getuid() != 0:
        USER_NAME = pwd.getpwuid(os.getuid()).pw_name
        return
    pw = pwd.getpwnam(RUN_AS)
    os.setgroups([])
    os.setgid(pw.pw_gid)
    os.setuid(pw.pw_uid)
    os.environ.update(HOME=pw.pw_dir, USER=pw.pw_name, LOGNAME=pw.pw_name)
    os.chdir(pw.pw_dir if os.path.isdir(pw.pw_dir) else "/")
    USER_NAME = pw.pw_name


def main():
    global TOKEN
    drop_privileges()  # first: the token file is the server user's
    TOKEN = setup_token()
    for var in ("AGENT_SERVER_TOKEN_FILE",):
        os.environ.pop(var, None)
    try:
        srv = Server(("::", PORT), Handler)
    except OSError as e:  # no IPv6 in this network namespace: IPv4 only
        log(f"IPv6 unavailable ({e}); listening on IPv4 only")
        srv = Server4(("0.0.0.0", PORT), Handler)
    log(f"{NAME} {VERSION} listening on port {PORT} as {USER_NAME}")
    srv.serve_forever()


if __name__ == "__main__":
    main()
