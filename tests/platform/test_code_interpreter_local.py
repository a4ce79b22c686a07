#!/usr/bin/env python3
"""The built-in code-interpreter-v1 template of `abxlua serve` (issue 11 part 5): its server on
real Jupyter kernels, started by the template's start_cmd and waited for by its ready_cmd.

Usage: test_code_interpreter_local.py [path/to/abxlua]

Wire protocol: docs/protocol/envd-protocol.md §10, docs/protocol/e2b-v2-and-peers.md §3. Checked
through the serve's ingress (E2b-Sandbox-Id / E2b-Sandbox-Port: 49999 headers): create answers only
once the server is ready, /health, state within a context, stdout, an exception's error line with
its traceback, the MIME mapping (text quotes stripped, a matplotlib figure as png, html), E2B's
result formats (a figure's chart, a DataFrame's data, a dict's json, PIL's save shown), contexts
create/list/restart/delete, two isolated contexts, env_vars for one execution, the 400/404/422
answers, a java request naming the missing kernel, keepalive lines during a silent 6 s
execution, a dropped client interrupting the kernel, the start log in the sandbox (server and
kernels as root), a context in /root, each other installed kernel (R, javascript, typescript), that the
built-in template cannot be deleted, that a snapshot's sandbox starts the server again (start_cmd
and ready_cmd are inherited), and that a template whose server never comes up fails the create
after the 60 s ready bound with an error naming the template, the command, and the start log.

Each check prints PASS/FAIL; exit 1 when any failed, 77 when skipped (not root, envd not usable).
"""
import http.client
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_platform as tp  # noqa: E402

check = tp.check
CI_PORT = 49999


def ci(s, ctx, method, path, body=None, timeout=60):
    """One request to the sandbox's code interpreter; returns (status, body bytes)."""
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=timeout)
    h = {"E2b-Sandbox-Id": ctx["sid"], "E2b-Sandbox-Port": str(CI_PORT),
         "Content-Type": "application/json"}
    if ctx.get("token"):
        h["X-Access-Token"] = ctx["token"]
    c.request(method, path, json.dumps(body) if body is not None else None, h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def execute(s, ctx, code, **fields):
    """POST /execute; returns (status, [lines]) with the lines decoded (the raw body on non-200)."""
    body = {"code": code}
    body.update(fields)
    st, data = ci(s, ctx, "POST", "/execute", body)
    if st != 200:
        return st, data.decode(errors="replace")
    lines = [json.loads(l) for l in data.decode().splitlines() if l.strip()]
    check(lines and lines[-1] == {"type": "end_of_execution"}, "last line %r" % lines[-1:])
    return st, lines


def of(lines, kind):
    return [l for l in lines if l.get("type") == kind]


def t_ready_at_create(s, ctx):
    # create answered only once ready_cmd succeeded: the very first request must be served
    st, data = ci(s, ctx, "GET", "/health")
    check(st == 200 and json.loads(data) == "OK", "health %d %r" % (st, data))


def t_state(s, ctx):
    st, a = execute(s, ctx, "x = 1")
    check(st == 200 and not of(a, "error"), "x = 1: %r" % (a,))
    st, b = execute(s, ctx, "x + 1")
    res = of(b, "result")
    check(len(res) == 1 and res[0]["text"] == "2" and res[0]["is_main_result"] is True,
          "x + 1 results %r" % res)
    n1, n2 = of(a, "number_of_executions"), of(b, "number_of_executions")
    check(n1 and n2 and n2[0]["execution_count"] == n1[0]["execution_count"] + 1,
          "execution counts %r %r" % (n1, n2))


def t_stdout_stderr(s, ctx):
    st, lines = execute(s, ctx, "import sys\nprint('hello')\nprint('warn', file=sys.stderr)")
    out, err = of(lines, "stdout"), of(lines, "stderr")
    check([l["text"] for l in out] == ["hello\n"], "stdout %r" % out)
    check([l["text"] for l in err] == ["warn\n"], "stderr %r" % err)
    check(out[0].get("timestamp", "").startswith("20"), "timestamp %r" % out[0])


def t_error(s, ctx):
    st, lines = execute(s, ctx, "print('before')\n1/0")
    errs = of(lines, "error")
    check(len(errs) == 1 and errs[0]["name"] == "ZeroDivisionError", "error %r" % errs)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", errs[0]["traceback"])  # IPython colours it
    check(errs[0]["value"] == "division by zero" and "Traceback" in plain and "1/0" in plain,
          "error fields %r" % errs[0])
    check([l["text"] for l in of(lines, "stdout")] == ["before\n"], "stdout before the error")


def t_mime(s, ctx):
    st, lines = execute(s, ctx, "'quoted'")
    check(of(lines, "result")[0]["text"] == "quoted", "quotes stripped: %r" % of(lines, "result"))
    st, lines = execute(s, ctx, "\"it's\"")
    check(of(lines, "result")[0]["text"] == "\"it's\"", "double quotes kept: %r" % of(lines, "result"))
    st, lines = execute(s, ctx, "from IPython.display import HTML, display\n"
                                "display(HTML('<b>hi</b>'))")
    res = of(lines, "result")
    check(len(res) == 1 and res[0]["html"] == "<b>hi</b>" and res[0]["is_main_result"] is False,
          "display_data html %r" % res)


def t_png(s, ctx):
    st, lines = execute(s, ctx, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()")
    res = [r for r in of(lines, "result") if "png" in r]
    check(len(res) == 1 and res[0]["png"].startswith("iVBORw0KGgo"), "png result %r"
          % [{k: str(v)[:40] for k, v in r.items()} for r in of(lines, "result")] + str(of(lines, "error")))


LINE_CODE = """import datetime
import numpy as np
import matplotlib.pyplot as plt
dates = [datetime.date(2023, 9, 1) + datetime.timedelta(days=i) for i in range(100)]
x = np.linspace(0, 2 * np.pi, 100)
plt.figure(figsize=(10, 6))
plt.plot(dates, np.sin(x), label='sin(x)')
plt.plot(dates, np.cos(x), label='cos(x)')
plt.xlabel('Time (s)')
plt.ylabel('Amplitude [Hz]')
plt.title('Plot of sin(x) and cos(x)')
plt.show()
"""

BAR_CODE = """import matplotlib.pyplot as plt
plt.figure(figsize=(10, 6))
plt.bar(['Author A', 'Author B', 'Author C', 'Author D'], [100, 200, 300, 400], label='Books Sold')
plt.xlabel('Authors')
plt.ylabel('Number of Books Sold')
plt.title('Book Sales by Authors')
plt.show()
"""


def t_e2b_results(s, ctx):
    """E2B's result formats (abx_formats.py, abx_charts.py, loaded by each kernel through
    /etc/ipython/ipython_kernel_config.py): a figure's `chart` next to its png, a DataFrame's
    `data`, a dict's `json`, a PIL image displayed on save, and plain (uncoloured) tracebacks."""
    st, lines = execute(s, ctx, LINE_CODE)
    res = of(lines, "result")
    check(len(res) == 1 and res[0].get("png", "").startswith("iVBORw0KGgo") and "chart" in res[0],
          "line: one result with png and chart: %r %r" % ([sorted(r) for r in res], of(lines, "error")))
    c = res[0].get("chart") or {} if res else {}
    want = {"type": "line", "title": "Plot of sin(x) and cos(x)", "x_label": "Time (s)",
            "y_label": "Amplitude [Hz]", "x_unit": "s", "y_unit": "Hz", "x_scale": "datetime",
            "y_scale": "linear"}
    check({k: c.get(k) for k in want} == want, "line chart fields %r" % {k: c.get(k) for k in want})
    els = c.get("elements") or []
    check([e.get("label") for e in els] == ["sin(x)", "cos(x)"] and
          all(len(e["points"]) == 100 for e in els), "line elements %r" % [str(e)[:80] for e in els])
    check(els and els[0]["points"][0] == ["2023-09-01", 0.0] and
          all(isinstance(t, str) for t in c.get("x_ticks", [None])) and
          all(isinstance(t, float) for t in c.get("y_ticks", [None])) and
          len(c.get("y_tick_labels", [])) == len(c.get("y_ticks", [])),
          "line points and ticks %r" % {k: c.get(k) for k in ("x_ticks", "y_ticks", "y_tick_labels")})
    st, lines = execute(s, ctx, BAR_CODE)
    res = [r for r in of(lines, "result") if "chart" in r]
    c = res[0]["chart"] if res else {}
    check(c.get("type") == "bar" and c.get("x_label") == "Authors" and c.get("y_unit") is None
          and c.get("elements") == [{"label": "Author %s" % a, "group": "Books Sold", "value": v}
                                    for a, v in zip("ABCD", (100, 200, 300, 400))],
          "bar chart %r" % c)
    st, lines = execute(s, ctx, "import pandas as pd\npd.DataFrame({'a': [1, 2, 3], 'b': ['x', 'y', 'z']})")
    res = of(lines, "result")
    check(len(res) == 1 and res[0].get("data") == {"a": [1, 2, 3], "b": ["x", "y", "z"]} and
          res[0]["is_main_result"] and "<table" in res[0].get("html", ""),
          "DataFrame data %r %r" % (res, of(lines, "error")))
    st, lines = execute(s, ctx, "{'k': [1, 2.5, None]}")
    res = of(lines, "result")
    check(res and res[0].get("json") == {"k": [1, 2.5, None]}, "dict json %r" % res)
    st, lines = execute(s, ctx, "import os\nfrom PIL import Image\n"
                                "Image.new('RGBA', (16, 16), (255, 0, 0, 255)).save('/tmp/abx-pil.png')\n"
                                "print(os.path.getsize('/tmp/abx-pil.png') > 0)")
    res = of(lines, "result")
    check(len(res) == 1 and res[0].get("png", "").startswith("iVBORw0KGgo") and
          [l["text"] for l in of(lines, "stdout")] == ["True\n"],
          "PIL save displays and saves %r %r" % ([sorted(r) for r in res], lines))
    st, lines = execute(s, ctx, "1/0")
    errs = of(lines, "error")
    check(errs and "\x1b[" not in errs[0]["traceback"] and "ZeroDivisionError" in errs[0]["traceback"],
          "plain traceback (E2B's NoColor) %r" % errs)


def t_contexts(s, ctx):
    st, data = ci(s, ctx, "POST", "/contexts", {"language": "python", "cwd": "/tmp"})
    c = json.loads(data)
    check(st == 200 and c["language"] == "python" and c["cwd"] == "/tmp" and c["id"],
          "create %d %r" % (st, data))
    st, data = ci(s, ctx, "GET", "/contexts")
    check(st == 200 and c["id"] in [x["id"] for x in json.loads(data)], "list %r" % data)
    st, lines = execute(s, ctx, "import os\ny = 5\nos.getcwd()", context_id=c["id"])
    check(of(lines, "result")[0]["text"] == "/tmp", "cwd of the context %r" % lines)
    st, data = ci(s, ctx, "POST", "/contexts/%s/restart" % c["id"])
    check(st == 200, "restart %d %r" % (st, data))
    st, lines = execute(s, ctx, "y", context_id=c["id"])
    errs = of(lines, "error")
    check(errs and errs[0]["name"] == "NameError", "state lost on restart: %r" % lines)
    st, data = ci(s, ctx, "DELETE", "/contexts/" + c["id"])
    check(st == 200, "delete %d %r" % (st, data))
    st, data = ci(s, ctx, "GET", "/contexts")
    check(c["id"] not in [x["id"] for x in json.loads(data)], "deleted context still listed")
    st, text = execute(s, ctx, "1", context_id=c["id"])
    check(st == 404 and c["id"] in text, "execute in a deleted context %d %r" % (st, text))
    st, data = ci(s, ctx, "DELETE", "/contexts/" + c["id"])
    check(st == 404, "second delete %d" % st)
    st, data = ci(s, ctx, "POST", "/contexts/nope/restart")
    check(st == 404 and b"nope" in data, "restart unknown %d %r" % (st, data))


def t_isolated(s, ctx):
    ids = []
    for _ in range(2):
        st, data = ci(s, ctx, "POST", "/contexts", {})
        check(st == 200, "create %d %r" % (st, data))
        ids.append(json.loads(data)["id"])
    execute(s, ctx, "z = 'first'", context_id=ids[0])
    st, lines = execute(s, ctx, "z", context_id=ids[1])
    check(of(lines, "error") and of(lines, "error")[0]["name"] == "NameError",
          "second context sees z: %r" % lines)
    st, lines = execute(s, ctx, "z", context_id=ids[0])
    check(of(lines, "result")[0]["text"] == "first", "first context lost z: %r" % lines)
    for i in ids:
        ci(s, ctx, "DELETE", "/contexts/" + i)


def t_env_vars(s, ctx):
    code = "import os\nos.environ.get('ABX_CI_VAR', 'unset')"
    st, lines = execute(s, ctx, code, env_vars={"ABX_CI_VAR": "set-here"})
    check(of(lines, "result")[0]["text"] == "set-here", "env var applied: %r" % lines)
    st, lines = execute(s, ctx, code)
    check(of(lines, "result")[0]["text"] == "unset", "env var restored: %r" % lines)


def t_errors(s, ctx):
    st, text = execute(s, ctx, "1", context_id="abc", language="python")
    check(st == 400 and "context_id" in text, "both %d %r" % (st, text))
    st, text = execute(s, ctx, "1", context_id="no-such")
    check(st == 404 and "no-such" in text, "unknown context %d %r" % (st, text))
    st, data = ci(s, ctx, "POST", "/execute", {"nocode": 1})
    check(st == 422 and "code" in json.loads(data)["detail"][0]["loc"], "422 %d %r" % (st, data))
    for lang in ("java", "cobol"):  # no kernel for either on the template
        st, text = execute(s, ctx, "1", language=lang)
        check(st == 404 and lang in text and "kernel" in text, "%s %d %r" % (lang, st, text))
    st, data = ci(s, ctx, "POST", "/contexts", {"language": "Java"})
    check(st == 404 and b"java" in data, "java context %d %r" % (st, data))
    st, lines = execute(s, ctx, "40 + 2", language="Python ")
    check(of(lines, "result")[0]["text"] == "42", "language normalized %r" % lines)


def t_keepalive(s, ctx):
    t0 = time.time()
    st, lines = execute(s, ctx, "import time\ntime.sleep(6)\n'done'")
    check(of(lines, "keepalive"), "no keepalive in %r" % lines)
    check(of(lines, "result")[0]["text"] == "done" and time.time() - t0 >= 6, "result %r" % lines)


def t_disconnect_interrupts(s, ctx):
    st, data = ci(s, ctx, "POST", "/contexts", {})
    cid = json.loads(data)["id"]
    body = json.dumps({"code": "import time\ntime.sleep(120)", "context_id": cid}).encode()
    sock = socket.create_connection(("127.0.0.1", s.port), timeout=30)
    head = ("POST /execute HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nE2b-Sandbox-Id: %s\r\nE2b-Sandbox-Port: %d\r\n"
            "Content-Type: application/json\r\nContent-Length: %d\r\n%s\r\n"
            % (s.port, ctx["sid"], CI_PORT, len(body),
               "X-Access-Token: %s\r\n" % ctx["token"] if ctx.get("token") else ""))
    sock.sendall(head.encode() + body)
    got = b""
    while b"number_of_executions" not in got:  # the code is running
        chunk = sock.recv(4096)
        check(chunk, "stream closed early: %r" % got)
        got += chunk
    time.sleep(0.5)
    sock.close()
    t0 = time.time()
    st, lines = execute(s, ctx, "'next'", context_id=cid)
    took = time.time() - t0
    check(of(lines, "result") and of(lines, "result")[0]["text"] == "next" and took < 15,
          "next execution after %.1fs: %r" % (took, lines))
    ci(s, ctx, "DELETE", "/contexts/" + cid)


def t_start_log(s, ctx):
    code, out, err = tp.run_in(s, ctx["sid"], "cat /var/log/abx/start_cmd.log; "
                               "ps -o user= -C python3 | sort -u", user="root", token=ctx.get("token"))
    check(code == 0 and "listening on 49999" in out, "start log %r %r" % (out, err))
    users = set(out.split("listening on 49999", 1)[-1].split()) & {"root", "user", "1000"}
    check(users == {"root"}, "the server and its kernels run as root, as on E2B: %r" % out[-300:])


def t_cwd(s, ctx):
    """Code runs as root (E2B's Jupyter runs as root), the default context in /home/user, and a
    context's cwd is honoured even where `user` may not go (E2B's own contexts test uses /root;
    it used to fail with PermissionError and a dropped connection)."""
    st, lines = execute(s, ctx, "import os\nos.getcwd(), os.getuid()")
    check(of(lines, "result") and of(lines, "result")[0]["text"] == "('/home/user', 0)",
          "default context %r" % (lines,))
    st, data = ci(s, ctx, "POST", "/contexts", {"language": "python", "cwd": "/root"})
    check(st == 200 and json.loads(data)["cwd"] == "/root", "context in /root %d %r" % (st, data))
    cid = json.loads(data)["id"] if st == 200 else "none"
    st, lines = execute(s, ctx, "import os\nos.getcwd()", context_id=cid)
    check(st == 200 and of(lines, "result") and of(lines, "result")[0]["text"] == "/root",
          "its cwd %r %r" % (st, lines))
    ci(s, ctx, "DELETE", "/contexts/" + cid)


# language -> (kernels, code, its output) for the kernels other than python's (server.py KERNELS)
OTHER_KERNELS = {"r": (("r", "ir"), "cat(6 * 7)", "42"),
                 "javascript": (("javascript", "jslab"), "console.log(6 * 7)", "42"),
                 "typescript": (("tslab", "javascript"), "const n: number = 6 * 7; console.log(n)", "42")}


def t_other_kernels(s, ctx):
    """Each other language whose kernel is installed on the host (the template's /usr is the
    host's) runs in the sandbox; the others are named as missing."""
    _, out, _ = tp.run_in(s, ctx["sid"], "ls /usr/share/jupyter/kernels /usr/local/share/jupyter/kernels",
                             user="root", token=ctx.get("token"))
    have = set(out.split())
    for lang, (kernels, code, want) in OTHER_KERNELS.items():
        if not have & set(kernels):
            print("  (%s: no kernel %s installed, not checked)" % (lang, " or ".join(kernels)))
            continue
        st, lines = execute(s, ctx, code, language=lang)
        got = "".join(x["text"] for x in of(lines, "stdout")) if st == 200 else lines
        check(st == 200 and got.strip() == want, "%s in the sandbox: %d %r" % (lang, st, lines))


def t_default_kernel_retried(s, ctx):
    """A default kernel that does not start (here a python3 kernelspec, first on JUPYTER_PATH, whose
    kernel exits at once) is logged on one line and tried again, the server staying up for the
    readiness deadline to decide; it used to exit with a traceback, so a kernel start that failed
    once (on a busy machine: slower than its 60 s bound) became a sandbox that never got ready
    (issue 22)."""
    code, out, err = tp.run_in(s, ctx["sid"],
                               "d=$(mktemp -d) && mkdir -p $d/kernels/python3 && chmod -R a+rX $d && "
                               "echo '{\"argv\": [\"/bin/false\"], \"display_name\": \"dead\", "
                               "\"language\": \"python\"}' > $d/kernels/python3/kernel.json && "
                               "JUPYTER_PATH=$d ABX_CODE_INTERPRETER_PORT=49998 "
                               "timeout 15 python3 /opt/abx/code-interpreter/server.py 2>&1; "
                               "echo exit=$?", user="root", token=ctx.get("token"), timeout=60)
    check("exit=124" in out, "the server stays up while its kernel does not start: %r %r" % (out, err))
    check("default python kernel not started (try 2)" in out and "trying again" in out,
          "each failed start is logged and tried again: %r" % out[-600:])
    check("Traceback" not in out and "listening on 49998" not in out,
          "no traceback, and no listening before code can run: %r" % out[-600:])


def t_slow_default_kernel_waited(s, ctx):
    """A default kernel slower than the start bound of a request (here ABX_KERNEL_READY_S=1 and a
    python3 kernelspec, first on JUPYTER_PATH, that sleeps 4 s before it runs ipykernel) is waited
    for and started once: it used to be cut off at the bound and started again from zero, so on a
    machine where every start took longer than the bound (60 s) the server never listened (CI,
    stop 30: code-interpreter-v1 never ready in 180 s)."""
    script = "\n".join([
        "d=$(mktemp -d) && mkdir -p $d/kernels/python3 && cd $d || exit 1",
        "printf '#!/bin/sh\\necho start >> %s/starts\\nsleep 4\\n"
        "exec python3 -m ipykernel_launcher -f \"$1\"\\n' $d > slow.sh && chmod 755 slow.sh",
        "printf '{\"argv\": [\"%s/slow.sh\", \"{connection_file}\"], \"display_name\": \"slow\", "
        "\"language\": \"python\"}' $d > kernels/python3/kernel.json",
        "JUPYTER_PATH=$d ABX_KERNEL_READY_S=1 ABX_CODE_INTERPRETER_PORT=49997 "
        "timeout 120 python3 /opt/abx/code-interpreter/server.py > log 2>&1 &",
        "pid=$!",
        "for i in $(seq 500); do grep -q 'listening on 49997' log && break; sleep 0.2; done",
        "curl -s -w ' %{http_code}' http://localhost:49997/health; echo",
        "echo starts=$(cat starts | wc -l)",
        "kill $pid; cat log",
    ])
    code, out, err = tp.run_in(s, ctx["sid"], script, user="root", token=ctx.get("token"),
                               timeout=180)
    check('"OK" 200' in out, "the server listens once its slow kernel answered: %r %r"
          % (out[-800:], err))
    check("starts=1" in out and "trying again" not in out,
          "the slow kernel is started once, not cut off and begun again: %r" % out[-800:])


def t_snapshot_starts_server(s, ctx):
    """A snapshot inherits start_cmd/ready_cmd: its sandboxes boot cold, so the server must start."""
    st, _, j = s.json("POST", "/sandboxes/%s/snapshots" % ctx["sid"], {"name": "ci-snap"})
    check(st in (200, 201), "snapshot %d %r" % (st, j))
    st, _, b = s.create(templateID="ci-snap")
    check(st == 201, "create from the snapshot %d %r" % (st, b))
    other = {"sid": b["sandboxID"], "token": b.get("envdAccessToken")}
    st, lines = execute(s, other, "6 * 7")
    check(st == 200 and of(lines, "result")[0]["text"] == "42", "in the snapshot's sandbox %r" % (lines,))
    s.request("DELETE", "/sandboxes/" + b["sandboxID"])
    s.request("DELETE", "/templates/ci-snap")


def build_ci_child(s, name, ready_timeout):
    """Build `name` from code-interpreter-v1 with readyTimeout (abxlua's build field) and one
    no-op step; returns its status ("ready" or "error") and the last status answer."""
    st, _, r = s.json("POST", "/v3/templates", {"name": name})
    check(st == 202, "POST /v3/templates %d %r" % (st, r))
    st, _, j = s.json("POST", "/v2/templates/%s/builds/%s" % (r["templateID"], r["buildID"]),
                      {"fromTemplate": "code-interpreter-v1", "readyTimeout": ready_timeout,
                       "steps": [{"type": "RUN", "args": ["true"]}]})
    check(st == 202, "build start %d %r" % (st, j))
    deadline = time.time() + 300
    while time.time() < deadline:
        j = s.json("GET", "/templates/%s/builds/%s/status" % (r["templateID"], r["buildID"]))[2]
        if j["status"] in ("ready", "error"):
            return j["status"], j
        time.sleep(0.2)
    return "timeout", j


def t_ready_never(s, ctx):
    """A start_cmd whose server never comes up: create fails after the template's ready timeout
    (60 s, set by a build on code-interpreter-v1 and inherited by a snapshot of its sandbox),
    naming the template, the ready command, the wait, its last result and the start log; nothing
    is left running."""
    status, j = build_ci_child(s, "ci-sixty", 60)
    check(status == "ready", "build of ci-sixty: %s %r" % (status, j))
    st, _, a = s.create(templateID="ci-sixty")
    check(st == 201, "create %d %r" % (st, a))
    sid = a["sandboxID"]
    code, out, err = tp.run_in(s, sid, "printf 'import sys\\nprint(\"broken on purpose\", flush=True)\\n"
                               "sys.exit(3)\\n' > /opt/abx/code-interpreter/server.py", user="root",
                               token=a.get("envdAccessToken"))
    check(code == 0, "break the server: %r %r" % (out, err))
    st, _, j = s.json("POST", "/sandboxes/%s/snapshots" % sid, {"name": "ci-broken"})
    check(st in (200, 201), "snapshot %d %r" % (st, j))
    s.request("DELETE", "/sandboxes/" + sid)
    st, _, j = s.json("POST", "/sandboxes", {"templateID": "ci-broken", "timeout": 60}, timeout=300)
    msg = json.dumps(j)
    check(st >= 400, "create answered %d: %r" % (st, j))
    for want in ("template 'ci-broken'", "ready_cmd", "did not succeed within its ready timeout of 60 s",
                 "last probe: exit 1", "start_cmd log", "broken on purpose"):
        check(want in msg, "%r not in the error: %s" % (want, msg))
    waited = re.search(r"waited (\d+\.\d) s", msg)
    check(waited is not None and float(waited.group(1)) >= 60, "waited the ready timeout: %s" % msg)
    st, _, lst = s.json("GET", "/sandboxes")
    check(st == 200 and all(x.get("templateID") != "ci-broken" for x in lst or []),
          "a sandbox of ci-broken is listed: %r" % lst)
    s.request("DELETE", "/templates/ci-broken")
    s.request("DELETE", "/templates/ci-sixty")


def t_builtin_not_deletable(s, ctx):
    st, _, j = s.json("DELETE", "/templates/code-interpreter-v1")
    check(st == 400 and "built-in" in json.dumps(j), "delete %d %r" % (st, j))


CHECKS = [t_ready_at_create, t_state, t_stdout_stderr, t_error, t_mime, t_png, t_contexts,
          t_isolated, t_env_vars, t_errors, t_keepalive, t_disconnect_interrupts, t_start_log,
          t_cwd, t_other_kernels,
          t_builtin_not_deletable, t_default_kernel_retried, t_slow_default_kernel_waited,
          t_snapshot_starts_server, t_ready_never]
CHECKS += [t_e2b_results]  # E2B's result formats (issue 25)


def main():
    if os.geteuid() != 0:
        print("SKIP: abxlua serve needs root (bubblewrap, overlayfs)")
        return 77
    cache = tempfile.mkdtemp(prefix="abx-build-cache.")  # the build API (t_ready_never)
    s = tp.Server(args=("--build-cache", cache))
    t0 = time.time()
    st, _, j = s.create(templateID="code-interpreter-v1", timeout=600)
    if st != 201:
        st2, _, j2 = s.create()
        s.stop()
        shutil.rmtree(cache, ignore_errors=True)
        if st2 != 201:
            print("SKIP: the real envd does not start: %r" % (j2,))
            return 77
        print("FAIL create code-interpreter-v1: %d %r" % (st, j))
        return 1
    print("create code-interpreter-v1: %.2fs" % (time.time() - t0))
    ctx = {"sid": j["sandboxID"], "token": j.get("envdAccessToken")}
    failed = 0
    try:
        failed = tp.run_checks(s, ctx, CHECKS, os.environ.get("ABX_ONLY"), width=24)
    finally:
        status = tp.stop_and_sum(s, failed)
        shutil.rmtree(cache, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
