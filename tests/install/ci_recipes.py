#!/usr/bin/env python3
"""ci_recipes.py ABXLUA SOURCE_DIR: docs/install.md's "Running in CI" jobs checked against the CLI.

Parses the two YAML blocks of the section (GitHub Actions, GitLab CI) and checks, for each:
  - it runs `abxlua run` with only options `abxlua run --help` lists, sharded (`--shard K/N` over a
    matrix whose values are exactly 1..N), with --junit and --json;
  - it keeps the JUnit file as a report and the --json file and the serve logs
    ($XDG_STATE_HOME/abxlua/serve-*.log, XDG_STATE_HOME set in the workspace) as artifacts;
  - its container is the image the section builds, run privileged with a tmpfs /tmp (GitHub's
    options; GitLab's runner config is prose, checked to be mentioned);
  - the job's script itself works: run by bash -e from an empty directory with the matrix's first
    values (provider local, shard 1/N) on a one-test scenario, it exits 0 and writes the two
    reports where the artifact steps look for them.
And that the version in docs/install.md's .deb file names is the project's. Exit 0 when all hold."""
import os
import re
import shlex
import subprocess
import sys
import tempfile

import yaml

abxlua, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
readme = open(os.path.join(src, "docs", "install.md"), encoding="utf-8").read()
fails = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        fails.append(what)


m = re.search(r"^## Running in CI\n(.*?)(?=^## |\Z)", readme, re.M | re.S)
if not m:
    sys.exit("FAIL docs/install.md has no '## Running in CI' section")
section = m.group(1)
blocks = re.findall(r"```yaml\n(.*?)```", section, re.S)
check(len(blocks) == 2, f"two YAML jobs in the section (found {len(blocks)})")
if len(blocks) != 2:
    sys.exit(1)
gh, gl = (yaml.safe_load(b) for b in blocks)

image = re.search(r"docker build .*-t (\S+) \.", section)
check(bool(image), "the section builds the image with docker build -t IMAGE .")
image = image.group(1) if image else None

help_out = subprocess.run([abxlua, "run", "--help"], capture_output=True, text=True).stdout
known = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", help_out))


def script_of(text, subst):
    """A step's shell text with the CI expressions replaced by `subst`."""
    for k, v in subst.items():
        text = text.replace(k, v)
    return text


def run_command(script):
    """The `abxlua run ...` command of a script (backslash continuations joined), as argv."""
    joined = re.sub(r"\\\n\s*", " ", script)
    lines = [l.strip() for l in joined.splitlines() if l.strip().startswith("abxlua run")]
    check(len(lines) == 1, "one abxlua run command in: " + " ".join(script.split())[:70])
    argv = shlex.split(lines[0]) if lines else ["abxlua", "run"]
    return argv


def check_argv(name, argv, total):
    opts = [a.split("=")[0] for a in argv[2:] if a.startswith("-")]
    unknown = [o for o in opts if o not in known]
    check(not unknown, f"{name}: every option is in `abxlua run --help` ({' '.join(opts)})"
          + (f"; unknown: {unknown}" if unknown else ""))
    val = lambda o: argv[argv.index(o) + 1] if o in argv else None
    check(val("--shard") == f"1/{total}", f"{name}: --shard K/{total} ({val('--shard')})")
    check(bool(val("--junit")) and bool(val("--json")), f"{name}: --junit and --json")
    return val("--junit"), val("--json")


def try_run(name, script, junit, js, state_var):
    """The job's script (bash -e, as both CI systems run it), from an empty directory holding
    scenarios/ with a one-test scenario, `abxlua` on PATH being the binary under test."""
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "scenarios"))
        os.makedirs(os.path.join(d, ".bin"))
        os.symlink(abxlua, os.path.join(d, ".bin", "abxlua"))
        with open(os.path.join(src, "tests/install/smoke.lua")) as i, \
                open(os.path.join(d, "scenarios/smoke.lua"), "w") as o:
            o.write(i.read().split("\nt.test(\"a local sandbox has a network link")[0] + "\n")
        env = dict(os.environ, NO_COLOR="1", CI="true", XDG_STATE_HOME=os.path.join(d, state_var),
                   PATH=os.path.join(d, ".bin") + ":" + os.environ.get("PATH", "/usr/bin:/bin"))
        r = subprocess.run(["bash", "-e", "-c", script], cwd=d, env=env, capture_output=True,
                           text=True)
        check(r.returncode == 0, f"{name}: the job's script exits 0 from an empty directory "
              f"({(r.stdout.strip().splitlines() or [''])[-1]}{r.stderr[-300:]})")
        check(os.path.isfile(os.path.join(d, junit)) and os.path.isfile(os.path.join(d, js)),
              f"{name}: it wrote {junit} and {js}")


# --- GitHub Actions ---------------------------------------------------------------------------
job = gh["jobs"]["e2e"]
shards = job["strategy"]["matrix"]["shard"]
total = len(shards)
check(shards == list(range(1, total + 1)), f"github: matrix shard is 1..{total}")
check("local" in job["strategy"]["matrix"]["provider"], "github: the matrix has the local provider")
check(job["container"]["image"] == image, f"github: container image is {image}")
opts = job["container"].get("options", "")
check("--privileged" in opts and re.search(r"--tmpfs /tmp\b", opts) is not None,
      "github: container options --privileged --tmpfs /tmp")
check(job.get("environment") == "${{ matrix.provider }}", "github: one environment (secrets) per provider")
check("secrets." in str(job["env"].get("ABX_SANDBOX_API_KEY", "")), "github: the API key is a secret")
state = job["env"].get("XDG_STATE_HOME", "")
check(state.startswith("${{ github.workspace }}/"), "github: XDG_STATE_HOME in the workspace")
state_rel = state.replace("${{ github.workspace }}/", "")
run_steps = [s for s in job["steps"] if "abxlua run" in s.get("run", "")]
check(len(run_steps) == 1, "github: one abxlua run step")
gh_script = script_of(run_steps[0]["run"], {"${{ matrix.shard }}": "1", '"$ABX_PROVIDER"': "local"})
argv = run_command(gh_script)
junit, js = check_argv("github", argv, total)
rep = [s for s in job["steps"] if "junit" in s.get("uses", "")]
check(bool(rep) and rep[0]["with"]["report_paths"] == junit and rep[0].get("if") == "always()",
      f"github: the JUnit report step reads {junit}, always")
up = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
paths = up[0]["with"]["path"].split() if up else []
check(bool(up) and up[0].get("if") == "always()", "github: the artifact step runs always")
check(any(js.startswith(p.rstrip("/") + "/") or p == js for p in paths),
      f"github: the artifact has the --json file {js}")
check(f"{state_rel}/abxlua/serve-*.log" in paths, f"github: the artifact has {state_rel}/abxlua/serve-*.log")
try_run("github", gh_script, junit, js, state_rel)

# --- GitLab CI --------------------------------------------------------------------------------
job = gl["e2e"]
matrix = job["parallel"]["matrix"][0]
check(matrix["SHARD"] == [f"{k}/{total}" for k in range(1, total + 1)],
      f"gitlab: matrix SHARD is 1/{total}..{total}/{total}")
check("local" in matrix["PROVIDER"], "gitlab: the matrix has the local provider")
check(job["image"] == image, f"gitlab: image is {image}")
check(job["environment"]["name"] == "e2e/$PROVIDER", "gitlab: one environment (scoped secrets) per provider")
check('privileged = true' in section and '"/tmp" = "rw,exec"' in section,
      "gitlab: the runner's privileged and tmpfs /tmp settings are given")
state = job["variables"].get("XDG_STATE_HOME", "")
check(state.startswith("$CI_PROJECT_DIR/"), "gitlab: XDG_STATE_HOME in the project dir")
state_rel = state.replace("$CI_PROJECT_DIR/", "")
gl_script = script_of("\n".join(job["script"]), {'"$PROVIDER"': "local", '"$SHARD"': f"1/{total}"})
argv = run_command(gl_script)
junit, js = check_argv("gitlab", argv, total)
art = job["artifacts"]
check(art.get("when") == "always", "gitlab: artifacts when: always")
check(art["reports"]["junit"] == junit, f"gitlab: reports: junit is {junit}")
check(any(js.startswith(p.rstrip("/") + "/") or p == js for p in art["paths"]),
      f"gitlab: the artifacts have the --json file {js}")
check(f"{state_rel}/abxlua/serve-*.log" in art["paths"],
      f"gitlab: the artifacts have {state_rel}/abxlua/serve-*.log")
try_run("gitlab", gl_script, junit, js, state_rel)

# --- the .deb names in Install ----------------------------------------------------------------
version = re.search(r"project\(abxlua VERSION ([0-9.]+)",
                    open(os.path.join(src, "CMakeLists.txt")).read()).group(1)
names = set(re.findall(r"abxlua_([0-9.]+)_amd64\.deb", readme))
check(names == {version}, f"docs/install.md's .deb file names carry version {version} ({sorted(names)})")
sys.exit(1 if fails else 0)
