#!/usr/bin/env python3
"""A template author's loop on the local provider (issue 25 item 4): `abxlua template` and
`abxlua sandbox` on one persistent local platform.

1. With `abxlua sandbox serve` running: `template deploy` of tests/templates/local/author-loop (from
   base: a copied file, a run step as the default user, one as root) on that platform; `template
   list` shows it; `sandbox create --template author-loop` starts it; `sandbox exec` sees the
   copied file and each run step's user (user, root); `template delete` is refused while the
   sandbox uses it and for the built-in base; once the sandbox is gone it deletes; then `list`
   no longer shows it and `sandbox create` is a 404 naming it.
2. With no platform running: `template deploy` (a serve of that command alone) keeps the template
   in the build cache's template store; a later `sandbox serve` has it (list, create, exec).
3. A plain `abxlua serve` (through ABX_LOCAL_URL) shares that store: a store file whose build the
   cache cannot replay (a step changed by hand) comes back listed with buildStatus error, and
   serve's log names it; a malformed file is skipped with a warning; both files stay.

A fresh state dir (XDG_STATE_HOME, TMPDIR). Skipped (77) without root and bwrap.

    test_author_loop.py ABXLUA
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import abxtest  # noqa: E402

check = abxtest.check
FIXTURE = "tests/templates/local/author-loop"
NAME = "author-loop"


def main():
    abx = os.path.abspath(sys.argv[1])
    abxtest.needs_platform()
    tmp = tempfile.mkdtemp(prefix="abx-loop-")
    state = os.path.join(tmp, "state")
    os.makedirs(state)
    env = dict(os.environ, XDG_STATE_HOME=state, TMPDIR=tmp, NO_COLOR="1")
    for k in ("ABX_PROVIDER", "ABX_CONFIG", "ABX_LOCAL_URL", "ABX_LOCAL_API_KEY", "E2E_RUN_ID"):
        env.pop(k, None)
    store = os.path.join(state, "abxlua", "build-cache", "templates")

    def cli(*args):
        p = subprocess.run([abx, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=300)
        print("$ abxlua %s\n%s%s[exit %d]" % (" ".join(args), p.stdout, p.stderr, p.returncode))
        return p.returncode, p.stdout, p.stderr

    def serve_up():
        s = subprocess.Popen([abx, "sandbox", "serve", "--json"], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = s.stdout.readline()
        doc = json.loads(line) if line.startswith("{") else {}
        check(doc.get("ok") is True, "sandbox serve is up (%r)" % line)
        s.state_file = doc.get("state_file")
        return s

    def ready_of(s):
        """serve's ready line (url, api_key) from the state file `sandbox serve` wrote."""
        with open(s.state_file) as f:
            return json.load(f)["ready"]

    def serve_down(s):
        s.send_signal(signal.SIGINT)
        out, err = s.communicate(timeout=120)
        check(s.returncode == 0, "sandbox serve stops on SIGINT (rc %s: %s)" % (s.returncode, err[-300:]))
        return err

    def listed():
        code, out, _ = cli("template", "list")
        check(code == 0, "template list exits 0")
        return {m.group(1): m.group(2) for m in
                re.finditer(r"^(\S+) +[a-z0-9]{20} +(\S+) ", out, re.M)}, out

    def open_it(what):
        code, sid, err = cli("sandbox", "create", "--template", NAME)
        sid = sid.strip()
        check(code == 0 and re.match(r"^[a-z0-9]+$", sid) is not None,
              "%s: sandbox create --template %s (rc %d: %s)" % (what, NAME, code, err.strip()))
        code, out, _ = cli("sandbox", "exec", sid, "--", "cat", "/home/user/built-by-run.txt",
                           "/opt/loop/root-step.txt")
        check(code == 0 and out == "hello from the author loop\nuser\nroot\n",
              "%s: sandbox exec sees the copied file, a run step as user and one as root (%r)"
              % (what, out))
        return sid

    serve = None
    try:
        # 1. on a running `abxlua sandbox serve`
        serve = serve_up()
        code, out, err = cli("template", "deploy", "-q", FIXTURE)
        check(code == 0 and re.search(r"^author-loop: deployed author-loop:abx-[0-9a-f]{12} as default$",
                                      out, re.M) is not None, "template deploy exits 0 and deploys")
        check("on the running local platform http://127.0.0.1:" in err,
              "template deploy says it used the running platform")
        names, out = listed()
        check(names.get(NAME) == "ready", "template list shows it ready (%s)" % out)
        check(re.search(r"^author-loop +[a-z0-9]{20} +ready +2 +1024  1$", out, re.M) is not None,
              "its row: CPU 2, memory 1024, 1 build")
        sid = open_it("on the running platform")
        code, _, err = cli("template", "delete", NAME)
        check(code == 1 and "cannot delete template 'author-loop': 1 sandbox(es) still use it" in err,
              "delete while a sandbox uses it: refused, exit 1 (%s)" % err.strip())
        code, _, err = cli("template", "delete", "base")
        check(code == 1 and "the base template cannot be deleted" in err,
              "delete of the built-in base: refused, exit 1")
        check(cli("sandbox", "kill", sid)[0] == 0, "sandbox kill")
        code, out, _ = cli("template", "delete", NAME)
        check(code == 0 and re.search(r"^author-loop: deleted template [a-z0-9]{20} ", out, re.M)
              is not None, "delete once no sandbox uses it")
        check(not os.path.exists(os.path.join(store, NAME + ".json")),
              "its file in the template store is gone")
        names, out = listed()
        check(NAME not in names and "0 template(s)" in out, "list no longer shows it")
        code, _, err = cli("sandbox", "create", "--template", NAME)
        check(code == 1 and "NotFound (404): template 'author-loop' not found" in err,
              "create after the delete: a 404 naming the template (%s)" % err.strip())
        serve_down(serve)
        serve = None

        # 2. no platform running: the build is kept for the next one
        code, out, err = cli("template", "deploy", "-q", FIXTURE)
        check(code == 0 and "running local platform" not in err,
              "template deploy without a running platform (a serve of its own) exits 0")
        check(os.path.isfile(os.path.join(store, NAME + ".json")),
              "the template is in the store: <state dir>/build-cache/templates/author-loop.json")
        names, out = listed()
        check(names.get(NAME) == "ready", "a later list (another serve) shows it (%s)" % out)
        serve = serve_up()
        sid = open_it("restored by a later sandbox serve")
        check(cli("sandbox", "kill", sid)[0] == 0, "sandbox kill")
        # `e2b template publish` (PATCH {public}) is kept in the store too
        st, _ = abxtest.api(ready_of(serve), "PATCH", "/v2/templates/" + NAME, {"public": True})
        check(st == 200, "PATCH /v2/templates/%s {public: true}: %s" % (NAME, st))
        serve_down(serve)
        with open(os.path.join(store, NAME + ".json")) as f:
            check(json.load(f).get("public") is True, "the store file says public")
        serve = serve_up()
        st, arr = abxtest.api(ready_of(serve), "GET", "/v2/templates")
        check([t.get("public") for t in arr or [] if t.get("aliases") == [NAME]
               or NAME in (t.get("names") or [])] == [True],
              "a later serve lists it public (%r)" % (arr,))
        serve_down(serve)
        serve = None

        # 3. a record the cache cannot replay, and a malformed one, on a plain `abxlua serve`
        # (the same build cache by default) reached through ABX_LOCAL_URL
        path = os.path.join(store, NAME + ".json")
        with open(path) as f:
            doc = json.load(f)
        doc["builds"][0]["spec"]["steps"][1]["args"][0] += " # changed"
        with open(path, "w") as f:
            json.dump(doc, f)
        with open(os.path.join(store, "broken.json"), "w") as f:
            f.write("{not json")
        # a fromImage record whose image root is gone: replayed without resolving or building
        # an image (no mmdebstrap, no network at serve's start), so it fails at once
        img = dict(doc, templateID="imgtemplate000000000", name="from-image")
        img["builds"] = [dict(doc["builds"][0], imageKey="debian-bookworm-slim-000000000000",
                              spec={"fromImage": "debian:bookworm-slim", "steps": []})]
        with open(os.path.join(store, "from-image.json"), "w") as f:
            json.dump(img, f)
        env["ABX_LOCAL_API_KEY"] = "e2b_0123456789abcdef0123456789abcdef"
        serve = subprocess.Popen([abx, "serve", "--port", "0"], cwd=ROOT, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        url = None
        for line in serve.stdout:
            m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
            if m:
                url = m.group(1)
                break
        check(url is not None, "abxlua serve is up")
        env["ABX_LOCAL_URL"] = url
        names, out = listed()
        check(names.get(NAME) == "error" and names.get("from-image") == "error",
              "builds the cache cannot replay: listed with status error (%s)" % out)
        code, _, err = cli("sandbox", "create", "--template", NAME)
        check(code == 1 and "template 'author-loop' not found" in err,
              "create of it: 404 naming the template")
        serve.send_signal(signal.SIGINT)
        _, serr = serve.communicate(timeout=120)
        serve = None
        print(serr[-3000:])
        check(re.search(r"template store: template 'author-loop' \(build [0-9a-f-]{36}\) not "
                        r"restored: step 2 \(RUN\) is no longer in the build cache ", serr)
              is not None, "serve's log names the template that did not come back and why")
        check(re.search(r"template store: \S+/broken\.json skipped: not JSON", serr) is not None,
              "serve's log names the malformed file")
        check(re.search(r"template 'from-image' \(build [0-9a-f-]{36}\) not restored: image "
                        r"'debian:bookworm-slim': its root debian-bookworm-slim-000000000000 is no "
                        r"longer in the build cache", serr) is not None,
              "a stored fromImage build whose image root is gone fails, naming it")
        check("mmdebstrap" not in serr and "building debian" not in serr,
              "no image is built at serve's start")
        check(os.path.isfile(path) and os.path.isfile(os.path.join(store, "broken.json")),
              "both files stay in the store (nothing is lost)")
    finally:
        if serve:
            serve.kill()
            serve.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    abxtest.finish()


if __name__ == "__main__":
    main()
