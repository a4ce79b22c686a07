#!/usr/bin/env python3
"""`abxlua template` and template folders in a run, against a fake build API (fake_build_api.py)
in front of a real `abxlua serve`: the exact sequence of requests the 2.51 SDK makes
(docs/protocol/e2b-v2-and-peers.md §2), a cached rebuild, deploy's tags, list, logs, delete, a
failing build with its log tail, a provider without templates_build, and `abxlua run` over template
folders: deploys before the tests, ctx.template_sandbox, the table, at most max_sandboxes alive at
once.

    test_build_cli.py ABXLUA
"""
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
import abxtest  # noqa: E402
import fake_build_api  # noqa: E402

check = abxtest.check


def main():
    abx = os.path.abspath(sys.argv[1])
    abxtest.needs_platform()
    work = abxtest.project("")
    state = os.path.join(work, "state")
    os.makedirs(state)
    serve, ready = abxtest.start_serve(abx, log=os.path.join(work, "serve.log"))
    try:
        run_checks(abx, work, state, ready)
    finally:
        serve.terminate()
        serve.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    abxtest.finish()


def run_checks(abx, work, state, ready):
    srv, st, url = fake_build_api.start(ready["url"], ready["api_key"])
    cfg = os.path.join(work, "abxlua.yaml")
    with open(cfg, "w") as f:
        f.write("defaults:\n  max_sandboxes: 3\n  sandbox_ttl: 120\n"
                "provider: fake\nproviders:\n"
                "  fake:\n    kind: remote\n    api_url: %s\n    domain: localhost\n"
                "    envd_routing: headers\n    envd_url: %s\n"
                "    capabilities: [templates_build, pty, watch]\n"
                "  nobuild:\n    kind: remote\n    api_url: %s\n    domain: localhost\n"
                "    envd_routing: headers\n    envd_url: %s\n    capabilities: [pause]\n"
                % (url, ready["url"], url, ready["url"]))
    env = dict(os.environ, E2B_API_KEY=ready["api_key"], XDG_STATE_HOME=state, NO_COLOR="1")
    env.pop("ABX_PROVIDER", None)
    tiny = "tests/templates/fixtures/tiny"

    def cli(*args):
        p = subprocess.run([abx, *args, "--config", cfg], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=600)
        return p.returncode, p.stdout + p.stderr

    dry = json.loads(subprocess.run([abx, "template", "build", tiny, "--dry-run"], cwd=ROOT,
                                    capture_output=True, text=True, check=True).stdout)
    create = dry["POST /v3/templates"]
    start = dry["POST /v2/templates/{templateID}/builds/{buildID}"]
    copy_hash = [s for s in start["steps"] if s["type"] == "COPY"][0]["filesHash"]

    # --- a first build: the SDK's sequence ----------------------------------------------------
    code, out = cli("template", "build", tiny)
    print(out)
    check(code == 0, "template build tiny exits 0 (got %d)" % code)
    calls = list(st.calls)
    seq = ["%s %s" % (c["method"], c["path"]) for c in calls]
    check(seq[:5] == ["GET /templates/aliases/tiny", "POST /v3/templates",
                      "GET /templates/tpl0001/files/" + copy_hash, "PUT /upload/" + copy_hash,
                      "POST /v2/templates/tpl0001/builds/bld0002"],
          "first build: aliases, POST /v3/templates, files/{hash}, PUT, build start (got %s)" % seq[:5])
    check(calls[1]["body"] == create and create["name"].startswith("tiny:abx-") and
          create == {"name": create["name"], "cpuCount": 1, "memoryMB": 512},
          "POST /v3/templates body is {name: tiny:abx-<hash12>, cpuCount, memoryMB}: %s" % calls[1]["body"])
    put = calls[3]
    check(put["content_length"] == str(put["size"]) and put["api_key"] is None
          and put["upload_token"] == "t-" + copy_hash[:8],
          "PUT has the exact Content-Length, the link's headers and no API key: %s" % {
              k: put[k] for k in ("content_length", "size", "api_key", "upload_token")})
    names = sorted(m[0].rstrip("/") for m in put["members"])
    check(names == ["app", "app/.dot", "app/hello.py", "app/link.py", "app/run.sh", "app/sub",
                    "app/sub/data.txt"], "the upload is a tar.gz of app/ and everything in it: %s" % names)
    kinds = {m[0].rstrip("/"): m[1] for m in put["members"]}
    modes = {m[0].rstrip("/"): m[2] for m in put["members"]}
    check(kinds.get("app/link.py") == "2" and kinds.get("app/sub") == "5" and modes.get("app/run.sh") == 0o755,
          "the tar keeps the symlink as a link, directories and modes: %s %s" % (kinds, modes))
    check(calls[4]["body"] == start, "the build start body is the dry run's (the SDK's, see sdk_hash)")
    polls = [c for c in calls[5:] if c["path"].endswith("/status")]
    offsets = [int(c["query"].split("=")[1]) for c in polls]
    check(len(polls) >= 3 and offsets == sorted(offsets) and offsets[0] == 0
          and all(c["query"].startswith("logsOffset=") for c in polls),
          "status polled with a growing logsOffset from 0: %s" % offsets)
    check(seq[5:] == ["GET /templates/tpl0001/builds/bld0002/status"] * len(seq[5:]),
          "nothing but status polls after the start: %s" % seq[5:])
    for k, kind in enumerate(["apt", "pip", "npm", "copy", "run", "run", "env", "workdir", "user"], 1):
        check(re.search(r"^tiny: step %d/9 %s (CACHED|\d+\.\ds)$" % (k, kind), out, re.M) is not None,
              "a progress line for step %d/9 (%s)" % (k, kind))
    check(re.search(r"^tiny \| \[builder 4/9\] COPY app/ /opt/app/ user 0755", out, re.M) is not None,
          "the build's log lines are streamed to the console")
    check(re.search(r"^tiny: built in \d+\.\ds \(tiny:abx-[0-9a-f]{12}\)$", out, re.M) is not None,
          "the last line says built, the time and the content tag")

    # --- unchanged: cached, no build request ---------------------------------------------------
    n = len(st.calls)
    code, out = cli("template", "build", tiny)
    seq = ["%s %s" % (c["method"], c["path"]) for c in st.calls[n:]]
    check(code == 0 and seq == ["GET /templates/aliases/tiny", "GET /templates/tpl0001/tags"]
          and "cached" in out, "an unchanged recipe is found by its tag and not rebuilt: %s" % seq)

    # --- deploy: cached build, then default + the recipe's tags --------------------------------
    n = len(st.calls)
    code, out = cli("template", "deploy", tiny)
    tags = [c for c in st.calls[n:] if c["path"] == "/templates/tags"]
    check(code == 0 and len(tags) == 1 and tags[0]["body"] == {"target": create["name"],
                                                               "tags": ["default", "v1"]},
          "deploy assigns default and v1 to tiny:abx-<hash>: %s" % [t["body"] for t in tags])

    # --- list, logs -----------------------------------------------------------------------------
    code, out = cli("template", "list")
    check(code == 0 and re.search(r"^tiny +tpl0001 +ready", out, re.M) is not None
          and "1 template(s)" in out, "template list shows tiny")
    code, out = cli("template", "logs", "tiny")
    check(code == 0 and "[builder 9/9] USER user" in out and "bld0002" in out,
          "template logs tiny prints the last build's log (%d)" % code)

    # --- a failing build --------------------------------------------------------------------------
    code, out = cli("template", "build", "tests/templates/fixtures/broken")
    print(out)
    check(code == 1, "a failing build exits 1 (got %d)" % code)
    check(re.search(r"^broken: step 2/3 run FAILED after \d+\.\ds$", out, re.M) is not None,
          "the progress line of the failing step says FAILED")
    check(re.search(r"template broken: build failed at step 2: step 2 \(RUN\) failed: exit status 1", out)
          is not None, "its error names the template, the step and the reason")
    check("last build log lines:" in out and "command exited with status 1" in out,
          "its error shows the build's log tail")

    # --- usage errors ---------------------------------------------------------------------------
    code, out = cli("template", "build", "no-such-template")
    check(code == 4 and 'unknown template "no-such-template"' in out, "an unknown template exits 4")
    code, out = cli("template", "build", tiny, "--provider", "nobuild")
    check(code == 4 and "provider nobuild lacks capability templates_build" in out,
          "a provider without the build API is named with the missing capability")
    for sub in ("build", "deploy", "list", "delete", "logs"):
        p = subprocess.run([abx, "template", sub, "--help"], capture_output=True, text=True)
        check(p.returncode == 0 and "Usage: abxlua template " + sub in p.stdout, "template %s --help" % sub)

    # --- delete ----------------------------------------------------------------------------------
    n = len(st.calls)
    code, out = cli("template", "delete", "tiny")
    seq = ["%s %s" % (c["method"], c["path"]) for c in st.calls[n:]]
    check(code == 0 and seq == ["GET /templates/aliases/tiny", "DELETE /templates/tpl0001"],
          "delete resolves the name, then DELETE /templates/{id}: %s" % seq)
    code, out = cli("template", "delete", "tiny")
    check(code == 1 and "no such template" in out, "deleting it again says so and exits 1")

    # --- a run over the template folders ----------------------------------------------------------
    code, out = cli("run", "tests/templates/fixtures/", "-j", "6", "--provider", "fake")
    print(out)
    check(code == 1, "the run fails (the broken template) with exit 1 (got %d)" % code)
    check(out.find("tiny: deployed") >= 0 and out.find("derived: build ") > out.find("tiny: deployed"),
          "derived (from: tiny) is built after tiny's deploy")
    check(re.search(r"^PASSED +tests/templates/fixtures/derived/derived\.lua::", out, re.M) is not None,
          "derived's test passed")
    check(re.search(r"^cyc-a: build FAILED: InvalidArgument: templates built from each other: "
                    r"cyc-a -> cyc-b -> cyc-a$", out, re.M) is not None
          and len(set(re.findall(r"^FAILED +tests/templates/fixtures/(cyc-[ab])/", out, re.M))) == 2,
          "recipes built from each other fail, naming the cycle")
    check(re.search(r"^PASSED +tests/templates/fixtures/tiny/tiny\.lua::", out, re.M) is not None,
          "tiny was deployed again (deleted before) and its test passed")
    check(re.search(r"^PASSED +tests/templates/fixtures/copies/copies\.lua::", out, re.M) is not None,
          "copies' test passed")
    check(len(re.findall(r"^PASSED +tests/templates/fixtures/crowd/crowd\.lua::", out, re.M)) == 6,
          "the six crowd tests passed")
    check(re.search(r"^FAILED +tests/templates/fixtures/broken/broken\.lua::", out, re.M) is not None
          and "build log (last" in out and "command exited with status 1" in out,
          "broken's test failed with the build's log tail")
    # tiny was built (then deleted) before: every step of its rebuild is CACHED
    for name, build in (("tiny", r"cached \(\d+\.\ds\)"), ("copies", r"\d+\.\ds"), ("crowd", r"\d+\.\ds"),
                        ("broken", "FAILED")):
        check(re.search(r"^%s +%s +(\d+\.\d\ds|-) +\d+ passed, \d+ failed, \d+ skipped$" % (name, build),
                        out, re.M) is not None, "the table has a line for %s (build %s)" % (name, build))
    m = re.search(r"^sandboxes alive at once: at most (\d+) \(max_sandboxes 3\)$", out, re.M)
    check(m is not None and int(m.group(1)) <= 3, "the run says at most 3 sandboxes were alive")
    check(1 <= st.peak <= 3, "the platform saw at most 3 sandboxes alive at once (peak %d)" % st.peak)
    check(re.search(r"^\d+ passed, 3 failed", out.strip().splitlines()[-1]) is not None,
          "the summary line is last")

    # a second run: every recipe unchanged, nothing rebuilt
    n = len(st.calls)
    code, out = cli("run", "tests/templates/fixtures/tiny", "--provider", "fake")
    check(code == 0 and re.search(r"^tiny +cached +", out, re.M) is not None
          and not any(c["path"] == "/v3/templates" for c in st.calls[n:]),
          "a second run finds tiny cached (no POST /v3/templates)")

    # scenarios/ style walk: template folders are not descended into unless named
    p = subprocess.run([abx, "list", "tests/templates/"], cwd=ROOT, capture_output=True, text=True)
    check("fixtures/tiny/tiny.lua" not in p.stdout, "a walk of tests/templates/ skips template folders")
    p = subprocess.run([abx, "list", "tests/templates/fixtures/tiny"], cwd=ROOT, capture_output=True,
                       text=True)
    check("fixtures/tiny/tiny.lua" in p.stdout, "naming the folder runs its script")

    # a provider without templates_build: the template's tests are skipped naming the capability
    code, out = cli("run", "tests/templates/fixtures/tiny", "--provider", "nobuild")
    check(code == 0 and "provider nobuild lacks capability templates_build" in out,
          "without templates_build a template's tests skip naming the capability")
    srv.shutdown()


if __name__ == "__main__":
    main()
