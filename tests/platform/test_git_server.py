#!/usr/bin/env python3
"""`abxlua serve --git-root DIR` (platform/net/git_server.h, issue 15 part 7): a bare repository under
DIR is listed and cloned from inside a sandbox at git://<hub end of its link>:9418/<name>; a push
and `git archive --remote` are refused and leave the repository as it was; a path outside DIR
(".." components) and a repository that is not there are refused; a --git-root that is not a
directory stops serve before its ready line; a sandbox with allow_internet_access=false cannot
reach it; `serve --help` names the option; when serve stops, no
git daemon child and no mount or process of the run is left. ~5 s.
Protocol: git-daemon(1), gitprotocol-pack(5). Usage: test_git_server.py ABXLUA"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import abxtest  # noqa: E402
from abxtest import check, finish  # noqa: E402
import test_platform as tp  # noqa: E402

abxtest.needs_platform()
abx = os.path.abspath(sys.argv[1])
tmp = tempfile.mkdtemp(prefix="abx-git-")
root = os.path.join(tmp, "git")
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@abxlua.invalid", "-c", "init.defaultBranch=main"]


def git(*args, cwd=None):
    return subprocess.run(GIT + list(args), cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


# a bare repository under the root with one commit, and one beside the root (not to be served)
os.makedirs(root)
work = os.path.join(tmp, "work")
git("init", "-q", work)
with open(os.path.join(work, "hello.txt"), "w") as f:
    f.write("served read-only\n")
git("add", "hello.txt", cwd=work)
git("commit", "-q", "-m", "first", cwd=work)
head = git("rev-parse", "HEAD", cwd=work)
for bare in (os.path.join(root, "r.git"), os.path.join(tmp, "outside.git")):
    git("clone", "-q", "--bare", work, bare)
refs_before = git("for-each-ref", cwd=os.path.join(root, "r.git"))

# serve --help names the option; a root that is not a directory stops serve before it is ready
h = subprocess.run([abx, "serve", "--help"], capture_output=True, text=True)
check("--git-root DIR" in h.stdout + h.stderr, "serve --help lists --git-root")
p = subprocess.run([abx, "serve", "--port", "0", "--git-root", os.path.join(tmp, "nosuch")],
                   capture_output=True, text=True, timeout=30, env=dict(os.environ, TMPDIR=tmp))
check(p.returncode != 0 and "--git-root" in p.stderr and "nosuch" in p.stderr,
      "a --git-root that is not there: serve exits %d naming it: %s"
      % (p.returncode, p.stderr.strip()[-200:]))

srv = tp.Server(env_extra={"TMPDIR": tmp}, args=("--git-root", root))
try:
    st, _, j = srv.create()
    check(st == 201, "create (%d)" % st)
    sid, token = j["sandboxID"], j.get("envdAccessToken")
    _, _, d = srv.json("GET", "/sandboxes/" + sid)
    hub = d["abxNetwork"]["hostAddress"]
    url = "git://%s:9418" % hub

    def sh(cmd):
        return tp.run_in(srv, sid, cmd, token=token, timeout=60)

    code, out, err = sh("git ls-remote %s/r.git" % url)
    check(code == 0 and head in out and "refs/heads/main" in out,
          "ls-remote from inside the sandbox lists the commit (%s %r %r)" % (code, out, err[-200:]))
    code, out, err = sh("cd /tmp && git clone -q %s/r.git c && cat c/hello.txt && "
                        "git -C c rev-parse HEAD" % url)
    check(code == 0 and "served read-only" in out and head in out,
          "clone from inside the sandbox: the file and the commit (%s %r %r)" % (code, out, err[-200:]))
    code, out, err = sh("cd /tmp/c && echo more >> hello.txt && git -c user.name=s "
                        "-c user.email=s@abxlua.invalid commit -qam second && "
                        "git push origin HEAD:refs/heads/pushed")
    check(code != 0, "a push is refused (exit %s: %r)" % (code, (out + err).strip()[-200:]))
    check(git("for-each-ref", cwd=os.path.join(root, "r.git")) == refs_before,
          "the repository's refs are unchanged after the push")
    code, out, err = sh("git archive --remote=%s/r.git HEAD > /dev/null" % url)
    check(code != 0, "git archive --remote (upload-archive) is refused (exit %s)" % code)
    for path in ("../outside.git", "r.git/../../outside.git", "nosuch.git", os.path.join(tmp, "outside.git")):
        code, out, err = sh("git ls-remote %s/%s" % (url, path))
        check(code != 0 and head not in out, "%s is refused (exit %s: %r)"
              % (path, code, (out + err).strip()[-160:]))
    check(srv.json("DELETE", "/sandboxes/" + sid)[0] == 204, "kill")
    # a sandbox without outbound traffic has no way to the hub's git server (git_server.h)
    st, _, j = srv.create(allow_internet_access=False)
    check(st == 201, "create with allow_internet_access=false (%d)" % st)
    code, out, err = tp.run_in(srv, j["sandboxID"], "timeout 15 git ls-remote %s/r.git" % url,
                               token=j.get("envdAccessToken"), timeout=60)
    check(code != 0 and head not in out, "a sandbox without internet access cannot reach it "
          "(exit %s)" % code)
    check(srv.json("DELETE", "/sandboxes/" + j["sandboxID"])[0] == 204, "kill the second")
finally:
    rc, _, err = srv.stop()
check(rc == 0, "serve stops cleanly (%s): %r" % (rc, err[-300:]))
check(abxtest.wait_until(lambda: not abxtest.procs_with(root), 10),
      "no git daemon child of serve is left: %s" % abxtest.procs_with(root))
abxtest.nothing_left(tmp, "serve --git-root")
finish()
