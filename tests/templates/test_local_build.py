#!/usr/bin/env python3
"""`abxlua template` and a template folder's run against the real local platform (serve's build
API, started by abxlua itself with --build-cache <state>/build-cache): build (progress per step),
a rebuild skipped because a new serve has the template (its template store), deploy, logs, delete
by a new serve, a rebuild whose every step is CACHED (the build cache outlives the template), and `abxlua run tests/templates/local/hello-local`: deployed,
then its script passes against a sandbox of it, with the table.

Skipped (77) without root and bwrap, or when this serve has no build API (no --build-cache in
`abxlua serve --help`).

    test_local_build.py ABXLUA
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import abxtest  # noqa: E402

check = abxtest.check
FIXTURE = "tests/templates/local/hello-local"


def main():
    abx = os.path.abspath(sys.argv[1])
    abxtest.needs_platform()
    h = subprocess.run([abx, "serve", "--help"], capture_output=True, text=True)
    if "--build-cache" not in h.stdout + h.stderr:
        print("skipped: this abxlua serve has no template build API (--build-cache)")
        sys.exit(77)
    state = tempfile.mkdtemp()
    env = dict(os.environ, XDG_STATE_HOME=state, NO_COLOR="1")
    for k in ("ABX_PROVIDER", "ABX_CONFIG"):
        env.pop(k, None)

    def cli(*args):
        p = subprocess.run([abx, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=600)
        print(p.stdout + p.stderr)
        return p.returncode, p.stdout + p.stderr

    try:
        code, out = cli("template", "build", FIXTURE)
        check(code == 0, "template build on the local platform exits 0 (got %d)" % code)
        for k, kind in enumerate(["copy", "run", "env", "workdir"], 1):
            check(re.search(r"^hello-local: step %d/4 %s (CACHED|\d+\.\ds)$" % (k, kind), out, re.M)
                  is not None, "a progress line for step %d/4 (%s)" % (k, kind))
        check(re.search(r"^hello-local \| \[builder 2/4\] RUN test -f /opt/site/index.html", out, re.M)
              is not None, "serve's build log is streamed")
        check(os.path.isfile(os.path.join(state, "abxlua", "build-cache", "templates",
                                          "hello-local.json")),
              "serve's build cache is <state dir>/build-cache, its template store in it")

        code, out = cli("template", "build", FIXTURE)
        check(code == 0 and re.search(r"^hello-local: hello-local:abx-[0-9a-f]{12} is built already "
                                      r"\(cached\)$", out, re.M) is not None,
              "a new serve has the template from the store: the build is skipped (cached)")

        code, out = cli("template", "deploy", FIXTURE)
        check(code == 0 and re.search(r"^hello-local: deployed hello-local:abx-[0-9a-f]{12} as default$",
                                      out, re.M) is not None, "deploy assigns default")
        code, out = cli("template", "logs", "hello-local")
        check(code == 0 and "[builder 4/4] WORKDIR /opt/site" in out, "logs shows the last build's log")
        code, out = cli("template", "delete", "hello-local")
        check(code == 0 and re.search(r"^hello-local: deleted template [a-z0-9]{20} ", out, re.M)
              is not None, "delete on a new serve finds the stored template and deletes it")
        code, out = cli("template", "delete", "hello-local")
        check(code == 1 and "hello-local: no such template (nothing deleted)" in out,
              "a second delete: no such template, exit 1")

        code, out = cli("template", "build", FIXTURE)
        check(code == 0 and re.search(r"^hello-local: step 2/4 run CACHED$", out, re.M) is not None,
              "once deleted, a build comes from the kept build cache: the RUN step is CACHED")

        code, out = cli("run", FIXTURE)
        check(code == 0, "abxlua run of the template folder passes (got %d)" % code)
        check(re.search(r"^hello-local +cached +\d+\.\d\ds +2 passed, 0 failed, 0 skipped$",
                        out, re.M) is not None, "the table line of hello-local: built above, kept "
              "in the template store, so cached")

        # prebuilt folders: the provider's own template (base has one: its script runs on it);
        # a name the provider lacks skips its tests naming the template
        code, out = cli("run", "scenarios/templates/base", "tests/templates/local/absent-official")
        check(code == 0, "a run of a prebuilt folder and an absent one exits 0 (got %d)" % code)
        check(re.search(r"^base +prebuilt +\d+\.\d\ds +3 passed, 0 failed, 0 skipped$", out, re.M)
              is not None, "the table line of the prebuilt base")
        check(re.search(r"^absent-official +skipped +- +0 passed, 0 failed, 1 skipped$", out, re.M)
              is not None, "the table line of the absent prebuilt template")
        check("provider local has no template absent-official (prebuilt" in out,
              "the skip names the template")
        code, out = cli("template", "build", "scenarios/templates/base")
        check(code == 4 and "base is a prebuilt template" in out, "template build of a prebuilt "
              "folder is a usage error naming it (got %d)" % code)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    abxtest.finish()


if __name__ == "__main__":
    main()
