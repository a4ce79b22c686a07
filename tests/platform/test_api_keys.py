#!/usr/bin/env python3
"""Managed team API keys of `abxlua serve` (platform/api/apikeys.h): E2B's /api-keys routes under the
access token, each created key working as X-API-Key on the sandbox routes until deleted, the key
file in the state dir and its refusals, and the flavours without the routes.

Usage: test_api_keys.py [path/to/abxlua]

Sources: e2b-dev/infra spec/openapi.yml (/api-keys, /api-keys/{apiKeyID}, NewTeamAPIKey,
CreatedTeamAPIKey, TeamAPIKey, IdentifierMaskingDetails), handlers/apikey.go (201, 202, 204,
404 "id not found", 400 for an id that is not a UUID), packages/shared/pkg/keys (e2b_ + 40 hex,
the 2 + 4 digit mask). Exit 1 when a check failed, 77 when skipped.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import abxtest  # noqa: E402
from abxtest import check  # noqa: E402

ABX = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/abxlua")


def call(ready, method, path, body=None, headers=None):
    """(status, raw body text, decoded JSON or None) of one control-plane request."""
    data = body if isinstance(body, bytes) else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(ready["url"] + path, method=method, headers=headers or {}, data=data)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            raw = resp.read().decode()
            status = resp.status
    except urllib.error.HTTPError as e:
        raw, status = e.read().decode(), e.code
    try:
        return status, raw, json.loads(raw) if raw else None
    except ValueError:
        return status, raw, None


def admin(ready):
    return {"Authorization": "Bearer " + ready["access_token"]}


def key(k):
    return {"X-API-Key": k}


def stop(proc):
    proc.terminate()
    proc.wait(timeout=30)


def lifecycle_with(ready, k):
    """Creates, gets and kills a sandbox with key k: the three statuses."""
    st, _, j = call(ready, "POST", "/v2/sandboxes", {"templateID": "base", "timeout": 60}, key(k))
    if st != 201:
        return st, None, None
    sid = j["sandboxID"]
    g, _, _ = call(ready, "GET", "/sandboxes/" + sid, headers=key(k))
    d, _, _ = call(ready, "DELETE", "/sandboxes/" + sid, headers=key(k))
    return st, g, d


def main():
    abxtest.needs_platform()
    state = tempfile.mkdtemp(prefix="abx-apikeys-")
    os.chmod(state, 0o700)
    proc, ready = abxtest.start_serve(ABX, "--state-dir", state)
    try:
        tok = ready.get("access_token", "")
        check(re.fullmatch(r"sk_e2b_[0-9a-f]{40}", tok) is not None,
              "the ready line has an access token sk_e2b_<40 hex>")
        check(tok != ready["api_key"], "the access token is not the API key")

        # --- the admin credential, never an API key ----------------------------------------------
        st, _, j = call(ready, "GET", "/api-keys")
        check(st == 401 and j and j["message"] == "authorization header is missing",
              "no credential: 401 authorization header is missing (%d %r)" % (st, j))
        st, _, j = call(ready, "GET", "/api-keys", headers=key(ready["api_key"]))
        check(st == 401, "serve's API key is no admin credential: 401 (%d)" % st)
        for bad in ("Bearer " + tok[:-1] + "0" if tok[-1] != "0" else "Bearer " + tok[:-1] + "1",
                    "Basic " + tok, tok):
            st, _, j = call(ready, "GET", "/api-keys", headers={"Authorization": bad})
            check(st == 401 and j["message"] == "Invalid access token",
                  "Authorization %r...: 401 Invalid access token (%d %r)" % (bad[:9], st, j))
        st, _, j = call(ready, "GET", "/api-keys", headers=admin(ready))
        check(st == 200 and j == [], "a new state dir lists no keys (%d %r)" % (st, j))

        # --- create: CreatedTeamAPIKey, once -----------------------------------------------------
        for body, what in ((b"", "no body"), (b"[1]", "an array"), ({"name": 3}, "a number name"),
                           ({"name": ""}, "an empty name"), ({"name": "x" * 256}, "a 256-byte name"),
                           ({}, "no name")):
            st, _, j = call(ready, "POST", "/api-keys", body, admin(ready))
            check(st == 400 and j and "name" in j["message"] or (st == 400 and body in (b"", b"[1]")),
                  "create with %s: 400 (%d %r)" % (what, st, j))
        st, raw, c = call(ready, "POST", "/api-keys", {"name": "ci key"}, admin(ready))
        check(st == 201, "create: 201 (%d %r)" % (st, c))
        k1 = c["key"]
        check(re.fullmatch(r"e2b_[0-9a-f]{40}", k1) is not None, "the key is e2b_<40 hex>")
        check(re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
                           c["id"]) is not None, "the id is a UUID v4: " + c["id"])
        check(c["name"] == "ci key" and c["lastUsed"] is None and c["createdAt"].endswith("Z"),
              "name, createdAt, lastUsed null")
        check(c["mask"] == {"prefix": "e2b_", "valueLength": 40, "maskedValuePrefix": k1[4:6],
                            "maskedValueSuffix": k1[-4:]}, "the mask: prefix, 40, 2 + 4 digits")
        check(re.fullmatch(r"[0-9a-f-]{36}", c["createdBy"]["id"]) is not None
              and c["createdBy"]["email"] is None, "createdBy {id, email: null}")
        st, _, c2 = call(ready, "POST", "/api-keys", {"name": "second"}, admin(ready))
        k2 = c2["key"]
        check(st == 201 and k2 != k1 and c2["id"] != c["id"], "a second key is another key")

        # --- each key works on every sandbox route; the listing never shows it ---------------------
        check(lifecycle_with(ready, k1) == (201, 200, 204), "key 1: create, get, kill")
        check(lifecycle_with(ready, k2) == (201, 200, 204), "key 2: create, get, kill")
        st, raw, lst = call(ready, "GET", "/api-keys", headers=admin(ready))
        check(st == 200 and [x["id"] for x in lst] == [c["id"], c2["id"]], "list: creation order")
        check(k1 not in raw and k2 not in raw and k1[4:] not in raw, "the list holds no key value")
        check(all("key" not in x for x in lst), "no `key` field in TeamAPIKey")
        check(lst[0]["lastUsed"] is not None, "lastUsed is set once the key was used")
        st, _, _ = call(ready, "GET", "/v2/sandboxes", headers=key("e2b_" + "0" * 40))
        check(st == 401, "an unknown key of the right shape: 401")

        # --- rename, delete ---------------------------------------------------------------------
        st, raw, _ = call(ready, "PATCH", "/api-keys/" + c2["id"], {"name": "renamed"}, admin(ready))
        check(st == 202 and raw == "", "rename: 202, no body (%d)" % st)
        lst = call(ready, "GET", "/api-keys", headers=admin(ready))[2]
        check(lst[1]["name"] == "renamed", "the list has the new name")
        unknown = "00000000-0000-4000-8000-000000000000"
        for m, b in (("PATCH", {"name": "x"}), ("DELETE", None)):
            st, raw, _ = call(ready, m, "/api-keys/" + unknown, b, admin(ready))
            check(st == 404 and raw == "id not found", "%s of an unknown id: 404 id not found" % m)
            st, _, j = call(ready, m, "/api-keys/not-a-uuid", b, admin(ready))
            check(st == 400 and "API key ID" in j["message"], "%s of a non-UUID id: 400" % m)
        st, _, _ = call(ready, "DELETE", "/api-keys/" + c["id"], headers=admin(ready))
        check(st == 204, "delete: 204")
        st, _, j = call(ready, "GET", "/v2/sandboxes", headers=key(k1))
        check(st == 401 and j["message"] == "Invalid API key", "the deleted key: 401 (%d %r)" % (st, j))
        st, _, _ = call(ready, "DELETE", "/api-keys/" + c["id"], headers=admin(ready))
        check(st == 404, "a second delete: 404")
        check(lifecycle_with(ready, k2)[0] == 201, "the other key still works")

        # --- the file: 0600, hashes only --------------------------------------------------------
        path = os.path.join(state, "api-keys.json")
        mode = os.stat(path).st_mode & 0o777
        text = open(path).read()
        check(mode == 0o600, "api-keys.json is 0600 (%o)" % mode)
        check(k1[4:] not in text and k2[4:] not in text, "the file holds no key value")
    finally:
        stop(proc)

    # --- a restart on the same state dir keeps the keys ------------------------------------------
    proc, ready = abxtest.start_serve(ABX, "--state-dir", state)
    try:
        check(call(ready, "GET", "/v2/sandboxes", headers=key(k2))[0] == 200, "after a restart key 2 works")
        check(call(ready, "GET", "/v2/sandboxes", headers=key(k1))[0] == 401, "and the deleted key does not")
        lst = call(ready, "GET", "/api-keys", headers=admin(ready))[2]
        check(len(lst) == 1 and lst[0]["name"] == "renamed" and lst[0]["lastUsed"],
              "the list after a restart: one key with its name and lastUsed")
    finally:
        stop(proc)

    # --- refusals at start-up -----------------------------------------------------------------
    os.chmod(path, 0o644)
    p = subprocess.run([ABX, "serve", "--port", "0", "--state-dir", state], capture_output=True,
                       text=True, timeout=60)
    check(p.returncode == 1 and "mode 0600" in p.stderr, "a key file of mode 0644 stops serve (%d %s)"
          % (p.returncode, p.stderr.strip()[-120:]))
    os.chmod(path, 0o600)
    with open(path, "w") as f:
        f.write("{not json")
    p = subprocess.run([ABX, "serve", "--port", "0", "--state-dir", state], capture_output=True,
                       text=True, timeout=60)
    check(p.returncode == 1 and "API-key file" in p.stderr, "a malformed key file stops serve")
    env = dict(os.environ, ABX_LOCAL_ACCESS_TOKEN="sk_e2b_XYZ")
    p = subprocess.run([ABX, "serve", "--port", "0"], capture_output=True, text=True, env=env, timeout=60)
    check(p.returncode == 4 and "ABX_LOCAL_ACCESS_TOKEN" in p.stderr, "a bad ABX_LOCAL_ACCESS_TOKEN: exit 4")
    shutil.rmtree(state)

    # --- a chosen token; a flavour without the routes -------------------------------------------
    env = dict(os.environ, ABX_LOCAL_ACCESS_TOKEN="sk_e2b_" + "ab" * 20)
    proc, ready = abxtest.start_serve(ABX, "--flavor", "alicloud-fc", env=env)
    try:
        check(ready["access_token"] == env["ABX_LOCAL_ACCESS_TOKEN"], "ABX_LOCAL_ACCESS_TOKEN is taken")
        st, _, _ = call(ready, "GET", "/api-keys", headers=key(ready["api_key"]))
        check(st == 404, "alicloud-fc has no /api-keys: 404 with its API key (%d)" % st)
        st, _, _ = call(ready, "POST", "/api-keys", {"name": "x"}, admin(ready))
        check(st == 401, "alicloud-fc: the access token is no API key there: 401 (%d)" % st)
    finally:
        stop(proc)
    abxtest.finish()


if __name__ == "__main__":
    main()
