#!/usr/bin/env python3
"""`abxlua mcp --http 127.0.0.1:0` (streamable HTTP, MCP 2025-06-18 basic/transports and
basic/lifecycle), driven with urllib: the `listening on http://HOST:PORT/mcp` stderr line; an
initialize answered as one JSON object (--http-response json) and as an SSE stream of one message
event (--http-response sse), each with an Mcp-Session-Id; version negotiation (a supported version
is echoed, an unsupported one is answered with the server's latest); a notification answered 202;
400 for an unsupported MCP-Protocol-Version header and for another version than the session's;
400 without Mcp-Session-Id, 404 for an unknown one; GET 405; DELETE answered 204, the session's
sandbox killed and another session's kept, the ended session 404 afterwards. SIGTERM then ends the
server with exit 2, its other sandbox killed, nothing left. The server starts its own local
platform; the test gives it the API key (ABX_LOCAL_API_KEY, which `abxlua serve` takes) and reads
its URL from the server's stderr to look at the sandboxes. Usage: test_mcp_http.py ABXLUA"""
import json, os, re, signal, subprocess, sys, tempfile, time
import urllib.error, urllib.request
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
sys.path.insert(0, here)
import abxtest
from abxtest import check, finish
from mcptest import tool_json

abxtest.needs_platform()
abx = os.path.abspath(sys.argv[1])
ACCEPT = "application/json, text/event-stream"
LATEST = "2025-11-25"  # lib/abx/mcp/protocol.lua VERSIONS' last


def post(url, msg, sid=None, version=None, accept=ACCEPT):
    """POSTs msg; returns (status, headers, decoded message or None). An SSE answer is read as its
    one message event."""
    h = {"Content-Type": "application/json", "Accept": accept}
    if sid:
        h["Mcp-Session-Id"] = sid
    if version:
        h["MCP-Protocol-Version"] = version
    req = urllib.request.Request(url, method="POST", headers=h, data=json.dumps(msg).encode())
    return send(req)


def send(req):
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            status, headers, body = resp.status, resp.headers, resp.read().decode()
    except urllib.error.HTTPError as e:
        status, headers, body = e.code, e.headers, e.read().decode()
    if not body:
        return status, headers, None
    if (headers.get("Content-Type") or "").startswith("text/event-stream"):
        m = re.fullmatch(r"event: message\ndata: (.*)\n\n", body, re.S)
        return status, headers, {"sse": m is not None,
                                 "message": json.loads(m.group(1)) if m else body}
    return status, headers, json.loads(body)


def init(url, version, id=1):
    return post(url, {"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "test_mcp_http", "version": "1"}}})


def start(tmp, mode, key):
    env = dict(os.environ, TMPDIR=tmp, XDG_STATE_HOME=os.path.join(tmp, "state"), NO_COLOR="1",
               ABX_LOCAL_API_KEY=key, E2E_RUN_ID="mcphttp%d" % os.getpid())
    for k in ("ABX_PROVIDER", "ABX_CONFIG", "ABX_LOCAL_URL"):
        env.pop(k, None)
    log = os.path.join(tmp, "mcp-%s.log" % mode)
    p = subprocess.Popen([abx, "mcp", "--http", "127.0.0.1:0", "--http-response", mode], cwd=tmp,
                         env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=open(log, "w"))
    found = {}

    def listening():
        text = open(log).read()
        m = re.search(r"^abxlua mcp: listening on (http://127\.0\.0\.1:(\d+)/mcp)$", text, re.M)
        u = re.search(r"provider local \((http://[^)]+)\)", text)
        if m and u:
            found.update(url=m.group(1), platform=u.group(1))
        return bool(found) or p.poll() is not None

    abxtest.wait_until(listening, 30, 0.05)
    check("url" in found, "%s: the server names its address on stderr%s"
          % (mode, "" if found else ": " + open(log).read()))
    return p, found.get("url"), {"url": found.get("platform"), "api_key": key}, log


def stop(p, what, log):
    t0 = time.time()
    p.send_signal(signal.SIGTERM)
    try:
        code = p.wait(timeout=40)
    except subprocess.TimeoutExpired:
        p.kill()
        code = p.wait()
    text = open(log).read()
    print(text)
    check(code == 2, "%s: SIGTERM ends the server with exit 2 (got %s) in %.1f s"
          % (what, code, time.time() - t0))
    return text


tmp = tempfile.mkdtemp(prefix="abx-mcp-http.")
key = "e2b_" + os.urandom(20).hex()

# --- SSE answers: initialize, then a tools/list, each one message event -------------------------
p, url, ready, log = start(tmp, "sse", key)
try:
    st, h, r = init(url, "2025-06-18")
    sid = h.get("Mcp-Session-Id")
    check(st == 200 and h.get("Content-Type", "").startswith("text/event-stream") and r["sse"]
          and r["message"]["result"]["protocolVersion"] == "2025-06-18" and sid,
          "sse: initialize is one SSE message event with a session id: %s %s" % (st, r))
    st, h, r = post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid, "2025-06-18")
    check(st == 202 and r is None, "sse: a notification is answered 202 without a body (%s)" % st)
    st, h, r = post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, sid, "2025-06-18")
    names = [t["name"] for t in r["message"]["result"]["tools"]] if r and r.get("sse") else []
    check(st == 200 and "create_sandbox" in names, "sse: tools/list as an SSE event: %s" % names)
finally:
    stop(p, "sse", log)

# --- JSON answers: the rest ------------------------------------------------------------------------
p, url, ready, log = start(tmp, "json", key)
try:
    st, h, r = init(url, "2025-06-18")
    sid = h.get("Mcp-Session-Id")
    check(st == 200 and h.get("Content-Type", "").startswith("application/json")
          and r["result"]["protocolVersion"] == "2025-06-18" and re.fullmatch(r"[0-9a-f]{32}", sid or ""),
          "json: initialize 2025-06-18 echoed, one JSON object, a session id: %s %s" % (st, sid))
    st, h, r = init(url, "2024-11-05")
    check(st == 200 and r["result"]["protocolVersion"] == "2024-11-05",
          "json: a supported older version is echoed: %s" % r)
    st, h, r = init(url, "1999-01-01")
    check(st == 200 and r["result"]["protocolVersion"] == LATEST and h.get("Mcp-Session-Id"),
          "json: an unsupported version is answered with the latest (%s): %s" % (LATEST, r))
    st, h, r = post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid, "2025-06-18")
    check(st == 202 and r is None, "json: a notification is answered 202 (%s)" % st)
    st, h, r = post(url, {"jsonrpc": "2.0", "id": 3, "method": "ping"}, sid, "1999-01-01")
    check(st == 400 and r and r["error"]["code"] == -32600
          and "unsupported MCP-Protocol-Version" in r["error"]["message"],
          "json: an unsupported MCP-Protocol-Version header is 400: %s" % r)
    st, h, r = post(url, {"jsonrpc": "2.0", "id": 4, "method": "ping"}, sid, "2025-03-26")
    check(st == 400 and r and "is not this session's" in r["error"]["message"],
          "json: another version than the session's is 400: %s" % r)
    st, h, r = post(url, {"jsonrpc": "2.0", "id": 5, "method": "ping"}, None, "2025-06-18")
    check(st == 400, "json: a request without Mcp-Session-Id is 400 (%s)" % st)
    st, h, r = post(url, {"jsonrpc": "2.0", "id": 6, "method": "ping"}, "0" * 32, "2025-06-18")
    check(st == 404, "json: an unknown Mcp-Session-Id is 404 (%s)" % st)
    st, h, r = post(url, {"jsonrpc": "2.0", "id": 7, "method": "ping"}, sid, accept="application/json")
    check(st == 406, "json: an Accept without text/event-stream is 406 (%s)" % st)
    st, h, r = post(url, {"jsonrpc": "2.0", "id": 8, "method": "ping"}, sid, "2025-06-18")
    check(st == 200 and r == {"jsonrpc": "2.0", "id": 8, "result": {}}, "json: ping: %s" % r)
    st, h, r = send(urllib.request.Request(url, method="GET", headers={
        "Accept": "text/event-stream", "Mcp-Session-Id": sid}))
    check(st == 405 and "POST" in (h.get("Allow") or ""), "json: GET is 405 (%s, Allow %s)"
          % (st, h.get("Allow")))

    # two sessions with a sandbox each; DELETE ends one and kills only its sandbox
    st, h, r = init(url, "2025-06-18", id=9)
    other = h.get("Mcp-Session-Id")
    boxes = {}
    for s in (sid, other):
        st, h, r = post(url, {"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {
            "name": "create_sandbox", "arguments": {"timeout": 120}}}, s, "2025-06-18")
        boxes[s] = tool_json(r)["sandbox_id"]
    live = {s: abxtest.api(ready, "GET", "/sandboxes/%s" % b)[0] for s, b in boxes.items()}
    check(list(live.values()) == [200, 200], "json: a sandbox per session, live: %s" % live)
    st, h, r = send(urllib.request.Request(url, method="DELETE", headers={"Mcp-Session-Id": sid}))
    check(st == 204, "json: DELETE with the session's id is 204 (%s)" % st)
    check(abxtest.api(ready, "GET", "/sandboxes/%s" % boxes[sid])[0] == 404,
          "json: the ended session's sandbox is killed")
    check(abxtest.api(ready, "GET", "/sandboxes/%s" % boxes[other])[0] == 200,
          "json: the other session's sandbox is kept")
    st, h, r = post(url, {"jsonrpc": "2.0", "id": 11, "method": "ping"}, sid, "2025-06-18")
    check(st == 404, "json: the ended session is 404 afterwards (%s)" % st)
    st, h, r = send(urllib.request.Request(url, method="DELETE", headers={"Mcp-Session-Id": sid}))
    check(st == 404, "json: a second DELETE is 404 (%s)" % st)
finally:
    text = stop(p, "json", log)
check(sid not in text and other not in text and sid[:8] + "\u2026" in text,
      "json: the log names a session by the head of its id only")
check("cleanup: 1 owned sandbox(es) killed" in text, "json: the other session's sandbox is killed "
      "at the end")
abxtest.nothing_left(tmp, "mcp --http")
left = [d for d in os.listdir(tmp) if d.startswith("abxlua-serve.")]
check(not left, "mcp --http: no platform state dir left (%s)" % left)
finish()
