#!/usr/bin/env python3
"""PATCH /v2/templates/{id} and PATCH /templates/{id} (platform/api/api_templates.c), what
`e2b template publish|unpublish` sends: {public: bool} → 200 {names} (v2) or 200 with no body
(v1); the template list and GET /templates/aliases/{alias} then answer that `public`; 400 for an
unknown key or a non-boolean, 404 for an unknown template. A template made by POST /v3/templates
(no build needed). Source: e2b-dev/E2B spec/openapi.yml (TemplateUpdateRequest,
TemplateUpdateResponse), packages/cli src/commands/template/publish.ts @ b8029973.
Usage: test_template_update.py ABXLUA"""
import os, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import abxtest
from abxtest import check, finish, api

abx = os.path.abspath(sys.argv[1])
abxtest.needs_platform()
tmp = tempfile.mkdtemp(prefix="abx-tupdate-")
proc, ready = abxtest.start_serve(abx, env=dict(os.environ, TMPDIR=tmp),
                                  log=os.path.join(tmp, "serve.log"))


def public_in_list(tid):
    st, arr = api(ready, "GET", "/v2/templates")
    return [t.get("public") for t in (arr or []) if t.get("templateID") == tid]


try:
    st, req = api(ready, "POST", "/v3/templates", {"name": "pub-tpl"})
    check(st == 202 and req, "POST /v3/templates (%s)" % st)
    tid = (req or {}).get("templateID", "none")
    check(public_in_list(tid) == [False], "a new template is private: %s" % public_in_list(tid))
    st, body = api(ready, "PATCH", "/v2/templates/pub-tpl", {"public": True})
    check(st == 200 and body == {"names": ["pub-tpl"]}, "v2 publish by name: %s %s" % (st, body))
    check(public_in_list(tid) == [True], "the list says public: %s" % public_in_list(tid))
    st, a = api(ready, "GET", "/templates/aliases/pub-tpl")
    check(st == 200 and a == {"templateID": tid, "public": True}, "the alias says public: %s" % a)
    st, body = api(ready, "PATCH", "/templates/%s" % tid, {"public": False})
    check(st == 200 and body is None, "v1 unpublish by id: 200, no body (%s %s)" % (st, body))
    check(public_in_list(tid) == [False], "private again: %s" % public_in_list(tid))
    st, body = api(ready, "PATCH", "/v2/templates/%s" % tid, {})
    check(st == 200 and public_in_list(tid) == [False], "{} changes nothing (%s)" % st)
    for bad in ({"public": "yes"}, {"public": True, "name": "x"}):
        check(api(ready, "PATCH", "/v2/templates/%s" % tid, bad)[0] == 400, "%s is a 400" % bad)
    check(api(ready, "PATCH", "/v2/templates/no-such-tpl", {"public": True})[0] == 404,
          "an unknown template: 404")
finally:
    proc.terminate()
    proc.wait(timeout=30)
finish()
