"""Provider semantics on the wire (issue 12 part 1), against a recording HTTP server on loopback:
- `auth_header` + `credential_env`: the key goes in the provider's header, not X-API-Key;
- libcurl's proxy variables: `http_proxy` sends requests through the proxy (absolute-form
  request line), `HTTP_PROXY` (upper case) is ignored by libcurl, `no_proxy` exempts a host;
- pagination (paging_case.lua): page + pageSize following pagination.hasNextPage, cursor
  limit + nextToken;
- `abxlua doctor --provider NAME` shows the resolved routing, route version, create mode, TTL,
  pagination, auth header, region and proxy (its password masked) and the key masked.

    test_wire.py ABXLUA
"""
import http.server
import json
import os
import subprocess
import sys
import threading
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import abxtest  # noqa: E402
from abxtest import check  # noqa: E402

ABX = sys.argv[1]
seen = []  # (request line, headers dict lower-case)


def detail(sid):
    return {"sandboxID": sid, "templateID": "base", "state": "running", "metadata": {},
            "startedAt": "2026-12-01T17:41:13Z", "endAt": "2026-12-01T17:46:13Z",
            "envdVersion": "0.2.0", "cpuCount": 1, "memoryMB": 512}


class Recorder(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        seen.append((self.requestline, {k.lower(): v for k, v in self.headers.items()}))
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        body = b"[]"
        if "page" in q:  # page pagination: two pages of pageSize 2
            page = int(q["page"][0])
            items = [detail("p1a"), detail("p1b")] if page == 1 else [detail("p2a")]
            body = json.dumps({"items": items, "pagination": {
                "page": page, "pageSize": int(q["pageSize"][0]), "totalItems": 3,
                "totalPages": 2, "hasNextPage": page < 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
port = srv.server_address[1]
threading.Thread(target=srv.serve_forever, daemon=True).start()

KEY = "kruise_test_key_0123456789"
config = """provider: kr
providers:
  kr:
    kind: remote
    api_url: http://127.0.0.1:%d
    domain: acs.example.com
    envd_routing: path
    auth_header: X-Test-Key
    credential_env: [ABX_TEST_WIRE_KEY]
    ttl: {min: 30, max: 2592000, default: 300}
  osb:
    kind: remote
    protocol: opensandbox
    api_url: http://127.0.0.1:%d/v1
    envd_routing: headers
    credential_env: [ABX_TEST_WIRE_KEY]
    auth_header: OPEN-SANDBOX-API-KEY
    create: {mode: poll, deadline: 60}
    ttl: {mode: expires_at, min: 60}
  fc:
    kind: remote
    api_url: http://api.${region}.example.invalid
    domain: ${region}.example.invalid
""" % (port, port)
proj = abxtest.project(config)
base_env = {k: v for k, v in os.environ.items()
            if k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
            and not k.startswith(("ABX_", "E2B_"))}


def doctor(provider, **env):
    e = dict(base_env, **env)
    return subprocess.run([ABX, "doctor", "--provider", provider], cwd=proj, env=e,
                          capture_output=True, text=True, timeout=60)


# 1. the key in the provider's header
seen.clear()
r = doctor("kr", ABX_TEST_WIRE_KEY=KEY)
auth = [h for line, h in seen if "/v2/sandboxes" in line]
check(r.returncode == 0, "doctor kr exits 0 (got %d: %s)" % (r.returncode, r.stdout + r.stderr))
check(len(auth) == 1 and auth[0].get("x-test-key") == KEY,
      "the authenticated list sent X-Test-Key: <key>")
check(len(auth) == 1 and "x-api-key" not in auth[0], "and no X-API-Key")
out = r.stdout
for want in ("routing:       <domain>/kruise/<id>/<port>", "route version: v1",
             "create mode:   sync (201)", "ttl:           lifetime, min 30 s, max 2592000 s, "
             "server default 300 s", "pagination:    cursor", "auth header:   X-Test-Key",
             "proxy:         none (libcurl's variables unset)", "ABX_TEST_WIRE_KEY      kruise_****"):
    check(want in out, "doctor shows %r" % want)
check(KEY not in out + r.stderr, "the key itself is never shown")

# 2. region: substituted from ABX_REGION; missing -> the error naming the variable
r = doctor("fc", ABX_REGION="eu-test-1")
check("endpoint:      http://api.eu-test-1.example.invalid" in r.stdout,
      "fc: the endpoint has ABX_REGION's region")
check("region:        eu-test-1 from environment (ABX_REGION)" in r.stdout, "doctor shows the region")
r = doctor("fc")
check(r.returncode == 4 and "providers.fc.api_url needs ${region}: set ABX_REGION or providers.fc.region"
      in r.stderr, "no region: exit 4 naming ABX_REGION (got %d: %s)" % (r.returncode, r.stderr))

# 3. proxies: our recorder is the proxy of a provider whose host does not resolve
proxy = "http://user:pw@127.0.0.1:%d" % port
seen.clear()
r = doctor("fc", ABX_REGION="r1", ABX_SANDBOX_API_KEY=KEY, http_proxy=proxy)
lines = [line for line, _ in seen]
check("GET http://api.r1.example.invalid/health HTTP/1.1" in lines,
      "http_proxy: the request went to the proxy in absolute form (%s)" % lines)
check("proxy:         http_proxy=http://****@127.0.0.1:%d" % port in r.stdout,
      "doctor shows the proxy with its user:password masked")
check("user:pw" not in r.stdout, "the proxy password is not shown")
seen.clear()
doctor("fc", ABX_REGION="r1", ABX_SANDBOX_API_KEY=KEY, HTTP_PROXY=proxy)
check(seen == [], "HTTP_PROXY (upper case) is ignored by libcurl")
seen.clear()
doctor("kr", ABX_TEST_WIRE_KEY=KEY, http_proxy="http://127.0.0.1:9", no_proxy="127.0.0.1")
check(any("/v2/sandboxes" in line and not line.split()[1].startswith("http://") for line, _ in seen),
      "no_proxy=127.0.0.1: the request went straight to the server")
# 4. pagination through the client: page (page + pageSize, hasNextPage) and cursor
seen.clear()
case = os.path.join(os.path.dirname(os.path.abspath(__file__)), "paging_case.lua")
r = subprocess.run([ABX, "run", case, "--provider", "kr"], cwd=proj,
                   env=dict(base_env, ABX_TEST_WIRE_KEY=KEY), capture_output=True, text=True,
                   timeout=120)
check(r.returncode == 0 and "2 passed, 0 failed" in r.stdout,
      "paging_case.lua: 2 passed (got %d: %s)" % (r.returncode, r.stdout[-1500:] + r.stderr[-800:]))
lines = [line.split()[1] for line, _ in seen]
check("/v2/sandboxes?page=1&pageSize=2" in lines and "/v2/sandboxes?page=2&pageSize=2" in lines,
      "page pagination asked page=1 then page=2 with pageSize=2 (%s)" % lines)
check("/v2/sandboxes?limit=5&nextToken=c1" in lines, "cursor pagination sent limit and nextToken")
check(not any("page=x" in line for line in lines),
      "a bad page token was refused before any request")
# 5. `abxlua run` refuses, as a config error (exit 4) before anything starts, a missing region
# (protocol opensandbox has its adapter now: tests/providers/test_opensandbox.py drives it)
seen.clear()
for prov, want in (("fc", "providers.fc.api_url needs ${region}: set ABX_REGION or providers.fc.region"),):
    r = subprocess.run([ABX, "run", case, "--provider", prov], cwd=proj,
                       env=dict(base_env, ABX_TEST_WIRE_KEY=KEY), capture_output=True, text=True,
                       timeout=60)
    check(r.returncode == 4 and ("abxlua: error: " + want) in r.stderr,
          "run --provider %s: exit 4, %r (got %d: %s)" % (prov, want, r.returncode, r.stderr[-600:]))
check(seen == [], "and no request was made")
srv.shutdown()
abxtest.finish()
